"""The rewrite pass leaves statements no rule can touch unparsed (the skeleton) or unvisited (the
skipper), and the trigger regexes: each gives exactly what a walk of the whole file gives."""

import re
import textwrap
from pathlib import Path

import pytest
from helpers import builtin_index, index_with, write

from gpu2npu.rewrite import engine, transformer
from gpu2npu.rewrite.engine import migrate_source
from gpu2npu.rewrite.skeleton import source_skeleton
from gpu2npu.rules.triggers import alternation, name_words, without_lookaheads
from gpu2npu.source.parse import parse_ast

REPO = Path(__file__).resolve().parents[1]
WAYS = ["skeleton", "skipper", "whole"]


def migrated(data: bytes, way: str, index=None, monkeypatch=None):
    """The result of the pass over the file's skeleton, over the whole file with the skipper, or
    over the whole file walking every node."""
    with pytest.MonkeyPatch.context() as patch:
        if way != "skeleton":
            patch.setattr(engine, "source_skeleton", lambda *args: None)
        if way == "whole":
            patch.setattr(transformer, "statement_skipper", lambda *args: None)
        result = migrate_source(data, index or builtin_index("2.8.0"))
    changes = [(c.start_line, c.end_line, c.message) for c in result.changes]
    return result.new_bytes, changes, result.kept, result.skipped


SHADOW_AND_ALIAS = """\
import torch
from torch import device as dev


def f(n):
    torch = load(n)
    return torch.cuda.is_available()


@decorated(
    1,
)
def g():
    \"\"\"doc
    string\"\"\"
    return 2
    # footer


x = dev(0)
y = torch.cuda.is_available()
"""


def test_a_skipped_statement_still_shadows_an_import_and_an_alias_still_reaches_its_rule():
    """``torch = load(n)`` names an import and rebinds it (so ``torch.cuda`` in f is not torch's);
    ``dev(0)`` holds no trigger word but ``dev`` is torch.device: both statements are walked."""
    expected = SHADOW_AND_ALIAS.replace("import torch\n", "import torch\nimport torch_npu\n", 1)
    expected = expected.replace("dev(0)", "dev('npu:0')").replace("y = torch.cuda", "y = torch.npu")
    for way in WAYS:
        new_bytes, changes, _, _ = migrated(SHADOW_AND_ALIAS.encode(), way)
        assert new_bytes.decode() == expected, way
        assert changes == [
            (1, 1, "insert import torch_npu"),
            (20, 20, "an int device index in the arg at position 0 of torch.device becomes 'npu:N'"),
            (21, 21, "change function torch.cuda.is_available to torch_npu.npu.is_available"),
        ], way


def test_the_skeleton_stubs_each_run_of_untouched_statements_at_its_indentation():
    code = SHADOW_AND_ALIAS.encode()
    skeleton = source_skeleton(code, parse_ast(code), builtin_index("2.8.0").statement_triggers)
    stub = '__gpu2npu_skipped_0__ = """\n\n\n\n\n\n"""'  # g's 7 lines (its footer comment stays)
    assert skeleton.data.decode() == SHADOW_AND_ALIAS.replace(
        '@decorated(\n    1,\n)\ndef g():\n    """doc\n    string"""\n    return 2', stub
    )
    assert skeleton.restore(skeleton.data) == code
    assert skeleton.restore(skeleton.data.replace(b"\n\n\n\n\n\n", b"\n")) is None  # then: whole file


METHOD_RULE = """\
rules:
  MethodRenameRule:
    - id: MINE1
      old_name: launch
      new_name: start
"""


def test_methods_a_class_defines_are_known_when_their_definitions_are_stubs(tmp_path):
    write(tmp_path / "mine.yaml", METHOD_RULE)
    index = index_with([tmp_path / "mine.yaml"], "2.8.0")
    code = textwrap.dedent(
        """\
        class Runner:
            def launch(self):
                return 1

            def other(self):
                return 2

            def go(self):
                return self.launch()


        job.launch()
        """
    ).encode()
    skeleton = source_skeleton(code, parse_ast(code), index.statement_triggers)
    assert skeleton.class_methods == {1: {"launch", "other", "go"}}
    for way in WAYS:
        new_bytes, changes, _, _ = migrated(code, way, index)
        assert new_bytes == code.replace(b"job.launch()", b"job.start()"), way
        assert changes == [(12, 12, "change function launch to start")], way


ODD_FILES = {
    "crlf": b"import torch\r\nx = 1\r\ndef f():\r\n    return 2\r\n\r\ny = torch.zeros(1).cuda()\r\n",
    "tabs and form feed": b"import torch\n\x0c\ndef f():\n\treturn 2\n\n\ty = 1\ny = x.cuda()\n",
    "latin-1": "# -*- coding: latin-1 -*-\nimport torch\ns = 'caf\xe9'\ny = x.cuda()\n".encode("latin-1"),
    "a space-only last line": b"import torch\ny = x.cuda()\ndef f():\n    main()\n\n    ",
    "a space-only line at the end": b"import torch\ny = x.cuda()\nif a:\n    main()\n\n    \n",
    "comments below the last block": b"import torch\ny = x.cuda()\nif a:\n    main()\n    # a\n    # b\n",
    "a class last, a comment below": b"import torch\nx = 1\nclass A:\n    def f(self):\n"
    b"        return y.cuda()\n# end\n",
    "no line end at the end": b"import torch\ndef f():\n    return 1\ny = x.cuda()",
    "statements sharing lines": b'"""doc"""; x = 1\nimport torch\na = (1,\n 2); b = 3\nc = x.cuda()\n',
    "one-line blocks": b"import torch\nif a: b = 1\nelse:\n  c = 2\ntry: d = 3\nexcept E: pass\ny = x.cuda()",
    "star import": b"from torch.cuda import *\nx = 1\nsynchronize()\n",
}


@pytest.mark.parametrize("name", sorted(ODD_FILES))
def test_every_way_gives_the_same_result_on_odd_files(name):
    results = {way: migrated(ODD_FILES[name], way) for way in WAYS}
    assert results["skeleton"] == results["skipper"] == results["whole"]


def test_every_way_gives_the_same_result_on_the_fixtures():
    files = sorted((REPO / "tests" / "fixtures").rglob("*.py"))
    assert len(files) > 50
    for path in files:
        data = path.read_bytes()
        results = {way: migrated(data, way) for way in WAYS}
        assert results["skeleton"] == results["skipper"] == results["whole"], path


def test_the_trigger_regex_matches_the_lines_the_flat_alternation_matches():
    words = builtin_index("2.8.0").tree_trigger_words
    flat = re.compile("|".join(sorted(words, key=len, reverse=True)))
    trie = alternation(words, text=True)
    lines = [
        line
        for path in sorted((REPO / "tests" / "fixtures").rglob("*.py"))
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
    ]
    assert sum(bool(flat.search(line)) for line in lines) > 100
    assert [bool(trie.search(line)) for line in lines] == [bool(flat.search(line)) for line in lines]
    assert alternation({"cuda", "cuda:nccl", "npu_a", "npu_ab", r"\.to\("}, text=True).pattern == (
        r"(?:\.to\(|cuda(?::nccl)?|npu_a(?:b)?)"
    )
    assert alternation({"cuda"}).pattern == b"cuda"  # of bytes, for whole files


def test_a_statement_is_tested_without_the_lookaheads_that_judge_the_whole_file():
    assert without_lookaheads(r"\.to\(\s*(?!\))(?!\w+\s*=[^=])x") == r"\.to\(\s*x"
    assert without_lookaheads(r"a(?!b(c)[)(]\))d[^]x]e") == "ad[^]x]e"
    assert builtin_index("2.8.0").statement_triggers.search("x.to(dtype)")  # the file's regex: no
    assert not builtin_index("2.8.0").tree_triggers.search(b"x.to(dtype)")


def test_a_qualified_name_needs_no_word_of_its_own_where_a_word_already_there_is_in_it():
    names = {
        "torch.cuda",
        "torch.cuda.Event.elapsed_time",
        "torch.distributed.is_nccl_available",
        "torch.distributed.ProcessGroupGloo",
        "torch.distributed.elastic.run",
        "torch.nn.parallel.DistributedDataParallel",
    }
    # torch.cuda brings `cuda` (covering the names under it); `nccl` and `DataParallel` were there
    assert name_words(names, {"nccl", "DataParallel", r"\.to\(\s*(?!\))"}) == {"cuda", "distributed"}
    assert name_words({"torch.distributed.is_nccl_available"}, {r"\.to\(\s*(?!\))"}) == {"distributed"}
    assert name_words({"torch.solve"}, set()) == {"solve"}


def test_a_file_reaches_the_syntax_tree_only_where_a_rule_of_the_version_can_fire():
    index = builtin_index("2.8.0")
    needs_tree = {
        # `distributed` alone is no longer a trigger: only the names the rules move
        "import torch.distributed as dist\ndist.barrier()\n": False,
        "import torch.distributed as dist\nok = dist.is_nccl_available()\n": True,
        "from torch.distributed import is_nccl_available as ok\n": True,
        "import torch.distributed as dist\nb = dist.Backend.NCCL\n": True,
        "from torch.nn.parallel import DistributedDataParallel as DDP\n": True,
        # x.device passed as a device is an int only where the file assigns .device or parses
        # arguments: both must be there (gated), one alone sends nothing
        "parser.add_argument('--lr')\n": False,
        "y = x.to(args.device)\n": False,
        "parser.add_argument('--device', type=int)\ny = x.to(args.device)\n": True,
        "m.device = 0\nz = torch.zeros(2, device=m.device)\n": True,
        "y = x.to(rank)\n": True,
    }
    assert {source: index.needs_tree(source.encode()) for source in needs_tree} == needs_tree


def test_the_gated_device_attribute_still_reaches_its_rule():
    source = (
        "import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--device', type=int)\n"
        "args = parser.parse_args()\n\n\ndef f(x):\n    return x.to(args.device)\n"
    )
    after = migrate_source(source.encode(), builtin_index("2.8.0")).new_bytes.decode()
    assert after.splitlines()[-1] == (
        "    return x.to(f'npu:{args.device}' if isinstance(args.device, int) else args.device)"
    )
    for way in WAYS:
        assert migrated(source.encode(), way)[0].decode() == after


def test_a_statement_using_a_moved_name_through_an_import_alias_is_rewritten_from_the_skeleton():
    source = textwrap.dedent(
        """\
        import torch.distributed as dist


        def backend():
            dist.barrier()
            return dist.Backend.NCCL if dist.is_nccl_available() else 'gloo'
        """
    ).encode()
    results = {way: migrated(source, way) for way in WAYS}
    assert results["skeleton"] == results["skipper"] == results["whole"]
    assert results["skeleton"][0].decode().splitlines()[-1] == (
        "    return dist.Backend.HCCL if dist.is_hccl_available() else 'gloo'"
    )


IMPORT_FALLBACK = """\
try:
    import torch
except ImportError:  # torch is optional
    torch = None
try:
    from apex import amp
except ImportError as error:
    amp = None


def setup():
    torch.cuda.set_device(1)
    with torch.cuda.amp.autocast():
        return torch.zeros(1).cuda()
"""


def test_a_fallback_bound_in_an_except_handler_leaves_the_import_the_code_after_it_reads():
    """``except ImportError: torch = None`` runs only where torch is missing: the code after the try
    is torch's, so its CUDA uses are migrated (before, torch was a plain local and nothing was)."""
    expected = (
        IMPORT_FALLBACK.replace("    import torch\n", "    import torch\n    import torch_npu\n")
        .replace("torch.cuda", "torch.npu")
        .replace(".cuda()", ".npu()")
    )
    for way in WAYS:
        new_bytes, changes, _, _ = migrated(IMPORT_FALLBACK.encode(), way)
        assert new_bytes.decode() == expected, way
        assert [change[0] for change in changes] == [2, 12, 13, 14], way


BRANCH_FALLBACK = """\
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

if is_torch_available():
    import torch
else:
    torch = None


def setup():
    return torch.zeros(1).cuda()
"""


def test_a_fallback_bound_in_an_else_branch_leaves_the_import_and_type_checking_imports_never_run():
    """``else: torch = None`` runs only where torch is missing, like an except handler's; and
    ``import torch_npu`` goes after the import that runs, not into ``if TYPE_CHECKING:``."""
    expected = BRANCH_FALLBACK.replace(
        "available():\n    import torch\n", "available():\n    import torch\n    import torch_npu\n"
    ).replace(".cuda()", ".npu()")
    for way in WAYS:
        new_bytes, changes, _, _ = migrated(BRANCH_FALLBACK.encode(), way)
        assert new_bytes.decode() == expected, way
        assert [change[0] for change in changes] == [7, 13], way


def test_an_import_inserted_after_torch_goes_before_the_code_that_shares_its_line():
    """``import torch; x = torch.zeros(1).cuda()``: torch_npu must be imported before .npu() runs,
    so it goes into the line, right after torch; at the end of a line it follows the line."""
    code = "import torch; x = torch.zeros(1).cuda()\nimport os; import numpy\ny = x.cuda()\n"
    tail = "import os; import torch\nz = torch.ones(1).cuda()\n"
    for way in WAYS:
        new_bytes, changes, _, _ = migrated(code.encode(), way)
        assert new_bytes.decode() == (
            "import torch; import torch_npu; x = torch.zeros(1).npu()\nimport os; import numpy\ny = x.npu()\n"
        ), way
        assert changes[0] == (1, 1, "insert import torch_npu"), way
        new_bytes, _, _, _ = migrated(tail.encode(), way)
        assert new_bytes.decode() == "import os; import torch\nimport torch_npu\nz = torch.ones(1).npu()\n", (
            way
        )


def test_a_module_that_uses_the_npu_before_it_imports_torch_imports_torch_npu_there():
    """dinov2's dinotxt notebook: ``.cuda()`` in a cell above the one importing torch (its cells
    are one program). Before torch 2.5 torch_npu must be imported before ``.npu()`` runs, so the
    import goes before the first statement using the NPU; a renamed environment variable above
    it stays above, and a function defined above torch's import runs later (no move)."""
    code = (
        "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\nfrom pkg import build\n"
        "def f(x):\n    return x.cuda()\n"
        "model = build(device='cuda')\nnet = build().cuda()\nimport torch\n"
    )
    expected = (
        "import os\nos.environ['ASCEND_RT_VISIBLE_DEVICES'] = '0'\nfrom pkg import build\n"
        "def f(x):\n    return x.npu()\n"
        "import torch_npu\nmodel = build(device='npu')\nnet = build().npu()\nimport torch\n"
    )
    later = "from pkg import build\ndef f(x):\n    return x.cuda()\nimport torch\n"
    for way in WAYS:
        new_bytes, changes, _, _ = migrated(code.encode(), way, builtin_index("2.1.0"))
        assert new_bytes.decode() == expected, way
        inserts = [c for c in changes if c[2].startswith("insert")]
        assert inserts == [
            (6, 6, "insert import torch_npu (the module uses the NPU before it imports torch)")
        ]
        assert migrated(later.encode(), way, builtin_index("2.1.0"))[0].decode() == (
            "from pkg import build\ndef f(x):\n    return x.npu()\nimport torch\nimport torch_npu\n"
        ), way


def test_a_module_that_calls_npu_methods_and_imports_no_torch_imports_torch_npu():
    """ChatGLM's web_demo.py: ``AutoModel.from_pretrained(...).half().cuda()`` and no torch import
    anywhere. Before torch 2.5 nothing loads torch_npu then, and ``.npu()`` raises AttributeError:
    the module imports it itself (after its docstring and __future__ imports). A module whose
    only change is a string, or that imports torch in a function, gets no such import."""
    code = (
        '"""Demo."""\nfrom __future__ import annotations\nfrom transformers import AutoModel\n\n'
        'model = AutoModel.from_pretrained("m").half().cuda()\n'
    )
    expected = code.replace("annotations\n", "annotations\nimport torch_npu\n").replace(".cuda()", ".npu()")
    string_only = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
    lazy = "def f(x):\n    import torch\n    return x.cuda()\n"
    for version in ("2.1.0", "2.8.0"):
        for way in WAYS:
            new_bytes, changes, _, _ = migrated(code.encode(), way, builtin_index(version))
            assert new_bytes.decode() == expected, (version, way)
            assert changes[0] == (
                1,
                1,
                "insert import torch_npu (the module uses the NPU and imports no torch)",
            )
            assert b"torch_npu" not in migrated(string_only.encode(), way, builtin_index(version))[0]
            assert migrated(lazy.encode(), way, builtin_index(version))[0].decode() == (
                "def f(x):\n    import torch\n    import torch_npu\n    return x.npu()\n"
            )

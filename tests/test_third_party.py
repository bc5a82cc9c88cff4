"""`gpu2npu analyse -m third_party`: the library's call graph and what its functions reach.

The fixture library (tests/projects/third_party/mylib) has a chain across three modules
(train.fit -> models.Net.forward -> models.Head.forward -> ops.fused -> a CUDA operator), a
cycle (loop.ping <-> loop.pong), plain recursion (loop.countdown), a call only jedi can place
(train.evaluate: runner = make_runner(); runner.predict()), and one that needs a search path
outside the library (serve.serve, through tests/projects/third_party_env)."""

import ast
import functools
import os

from helpers import REPO, rows, run_cli, run_cli_without, tree_files, write

from gpu2npu.modes.third_party.analysis import Use, propagate
from gpu2npu.modes.third_party.callgraph import build_graph, enclosing_function, function_spans
from gpu2npu.source.modules import module_names

LIBRARY = REPO / "tests" / "projects" / "third_party"
ENV = REPO / "tests" / "projects" / "third_party_env"
OPS = "file_path:mylib/ops.py, start_line:{}, api_name:{}"
DP = OPS.format(7, "torch.autograd.profiler.emit_nvtx")
EXT = OPS.format(11, "mylib._ext.fused_add")


def analyse(tmp_path, *extra, runner=run_cli):
    result = runner(
        "analyse",
        "-i",
        LIBRARY,
        "-o",
        tmp_path / "out",
        "-m",
        "third_party",
        "-v",
        "2.8.0",
        "-j",
        "1",
        *extra,
    )
    assert result.returncode == 0, result.stderr
    return result, tmp_path / "out" / "third_party_analysis"


def test_every_function_reaching_an_unsupported_api_or_cuda_operator_is_reported(tmp_path):
    before = tree_files(LIBRARY)
    result, out = analyse(tmp_path, "-env", ENV)
    assert tree_files(LIBRARY) == before
    assert sorted(p.name for p in out.iterdir()) == [
        "cuda_op.csv",
        "framework_unsupported_op.csv",
        "full_unsupported_results.csv",
        "migration_needed_op.csv",
        "pytorch_analysis.txt",
        "report.json",
        "unknown_op.csv",
    ]
    assert rows(out / "full_unsupported_results.csv") == [
        ["File", "3rd-party API", "Message"],
        ["mylib/loop.py", "mylib.loop.ping", DP],
        ["mylib/loop.py", "mylib.loop.pong", DP],
        ["mylib/models.py", "mylib.models.Head.forward", EXT],
        ["mylib/models.py", "mylib.models.Net.forward\nmylib.Net.forward", EXT],
        ["mylib/models.py", "mylib.models.Runner.predict", EXT],
        ["mylib/ops.py", "mylib.ops.fused", EXT],
        ["mylib/ops.py", "mylib.ops.parallel", DP],
        ["mylib/serve.py", "mylib.serve.serve", EXT],
        ["mylib/train.py", "mylib.train.evaluate", EXT],
        ["mylib/train.py", "mylib.train.fit\nmylib.train_model", f"{DP}\n{EXT}"],
    ]
    callers_of_ext = (
        "mylib.models.Head.forward\nmylib.models.Net.forward\nmylib.models.Runner.predict\n"
        "mylib.ops.fused\nmylib.serve.serve\nmylib.train.evaluate\nmylib.train.fit"
    )
    assert rows(out / "cuda_op.csv") == [
        ["OP Name", "Affected 3rd-party API"],
        ["mylib._ext.fused_add", callers_of_ext],
    ]
    assert rows(out / "framework_unsupported_op.csv") == [
        ["Torch API", "Affected 3rd-party API"],
        [
            "torch.autograd.profiler.emit_nvtx",
            "mylib.loop.ping\nmylib.loop.pong\nmylib.ops.parallel\nmylib.train.fit",
        ],
    ]
    assert rows(out / "migration_needed_op.csv") == [
        ["Torch API", "Affected 3rd-party API"],
        [
            "*.cuda",
            "mylib.models.Net.forward\nmylib.models.Runner.predict\nmylib.serve.serve\nmylib.train.evaluate\nmylib.train.fit",
        ],
    ]
    # Only functions that are not blocked already: Net.describe and ops.odd use torch.adjoint.
    assert rows(out / "unknown_op.csv") == [
        ["Torch API", "Affected 3rd-party API"],
        ["torch.adjoint", "mylib.models.Net.describe\nmylib.ops.odd"],
    ]
    assert result.stdout.splitlines()[:5] == [
        "full_unsupported_results.csv: 10 row(s)",
        "framework_unsupported_op.csv: 1 row(s)",
        "migration_needed_op.csv: 1 row(s)",
        "unknown_op.csv: 1 row(s)",
        "cuda_op.csv: 1 row(s)",
    ]
    log = (out / "pytorch_analysis.txt").read_text().splitlines()
    assert "call graph: 17 function(s) in 7 file(s), 16 call edge(s)" in log
    assert "jedi: 2 of 2 call(s) on objects of unknown type placed in the library" in log


def test_without_the_env_path_the_call_through_it_is_not_followed(tmp_path):
    _, out = analyse(tmp_path)
    assert "mylib.serve.serve" not in (out / "full_unsupported_results.csv").read_text()
    assert (
        "jedi: 1 of 1 call(s) on objects of unknown type placed in the library"
        in (out / "pytorch_analysis.txt").read_text()
    )


def test_without_jedi_the_ast_call_graph_still_works_and_the_log_says_what_is_missing(tmp_path):
    result, out = analyse(tmp_path, runner=functools.partial(run_cli_without, "jedi"))
    names = [row[1] for row in rows(out / "full_unsupported_results.csv")[1:]]
    assert names == [
        "mylib.loop.ping",
        "mylib.loop.pong",
        "mylib.models.Head.forward",
        "mylib.models.Net.forward\nmylib.Net.forward",
        "mylib.models.Runner.predict",
        "mylib.ops.fused",
        "mylib.ops.parallel",
        "mylib.train.fit\nmylib.train_model",
    ]  # evaluate and serve need inference
    assert (
        "jedi is not installed: 1 call(s) on objects of unknown type were not followed, "
        "so some callers may be missing; "
        "'pip install jedi' gives the full call graph"
    ) in (out / "pytorch_analysis.txt").read_text().splitlines()


def test_the_results_feed_the_analysis_of_code_using_the_library(tmp_path):
    _, out = analyse(tmp_path)
    write(
        tmp_path / "app" / "main.py",
        "import mylib\nfrom mylib.ops import odd\n\nnet = mylib.Net()\nmylib.train_model([])\nodd(1)\n",
    )
    used = run_cli(
        "analyse",
        "-i",
        tmp_path / "app",
        "-o",
        tmp_path / "o2",
        "-v",
        "2.8.0",
        "-api",
        out / "full_unsupported_results.csv",
    )
    assert used.returncode == 0, used.stderr
    found = [
        (row[1], row[3], row[5]) for row in rows(tmp_path / "o2" / "app_analysis" / "unsupported_api.csv")[1:]
    ]
    assert found == [("4", "mylib.Net", "unsupported"), ("5", "mylib.train_model", "unsupported")]


def test_jedi_leaves_no_cache_behind(tmp_path):
    """msFmkTransplt left a per-process jedi cache folder (its bug B26)."""
    home, temp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir(), temp.mkdir()
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), TMPDIR=str(temp))
    result = run_cli(
        "analyse", "-i", LIBRARY, "-o", tmp_path / "out", "-m", "third_party", "-v", "2.8.0", env=env
    )
    assert result.returncode == 0, result.stderr
    assert list(home.rglob("*")) == [] and list(temp.iterdir()) == []


def test_env_paths_and_mode_mismatches_are_usage_errors(tmp_path):
    missing = run_cli(
        "analyse", "-i", LIBRARY, "-o", tmp_path / "o", "-m", "third_party", "-env", tmp_path / "nope"
    )
    assert (missing.returncode, missing.stderr.splitlines()[-1]) == (
        2,
        f"gpu2npu: error: -env path '{tmp_path / 'nope'}' is not a directory; "
        "pass existing directories to search for imports",
    )
    wrong = run_cli("analyse", "-i", LIBRARY, "-o", tmp_path / "o", "-v", "2.8", "-env", ENV)
    assert (wrong.returncode, wrong.stderr) == (
        2,
        "gpu2npu: error: -env is used by -m third_party only, not by -m torch_apis; "
        "drop -env or use -m third_party\n",
    )
    assert not (tmp_path / "o").exists()


def test_several_values_after_one_flag_as_msfmktransplt_takes_them(tmp_path):
    _, out = analyse(tmp_path, "-env", ENV, LIBRARY)
    assert "mylib.serve.serve" in (out / "full_unsupported_results.csv").read_text()
    assert f"-env paths: {ENV}, {LIBRARY}" in (out / "pytorch_analysis.txt").read_text()


def test_an_unparsable_module_is_listed_and_the_rest_analysed(tmp_path):
    write(
        tmp_path / "lib" / "good.py",
        "import torch\n\ndef wrap(m):\n    return torch.autograd.profiler.emit_nvtx(m)\n",
    )
    write(tmp_path / "lib" / "bad.py", "def broken(:\n")
    result = run_cli(
        "analyse", "-i", tmp_path / "lib", "-o", tmp_path / "out", "-m", "third_party", "-v", "2.8.0"
    )
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "lib_analysis"
    assert rows(out / "full_unsupported_results.csv")[1:] == [
        [
            "good.py",
            "good.wrap",
            "file_path:good.py, start_line:4, api_name:torch.autograd.profiler.emit_nvtx",
        ]
    ]
    assert (
        "bad.py: skipped: cannot be parsed as Python 3 (syntax error at line 1)"
        in (out / "pytorch_analysis.txt").read_text()
    )


# -- units ---------------------------------------------------------------------------------


def graph_of(files):
    trees = {rel: ast.parse(text) for rel, text in files.items()}
    packages = {rel.rsplit("/", 1)[0] for rel in files if rel.endswith("/__init__.py")}
    return build_graph(trees, packages)


def test_a_package_given_as_input_keeps_its_name(tmp_path):
    result = run_cli("analyse", "-i", LIBRARY / "mylib", "-o", tmp_path, "-m", "third_party", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    found = rows(tmp_path / "mylib_analysis" / "full_unsupported_results.csv")
    assert [row[:2] for row in found[1:3]] == [["loop.py", "mylib.loop.ping"], ["loop.py", "mylib.loop.pong"]]
    assert ["train.py", "mylib.train.fit\nmylib.train_model"] in [row[:2] for row in found]


def test_module_names_start_below_the_highest_folder_without_init():
    names = module_names(
        ["src/pkg/__init__.py", "src/pkg/sub/mod.py", "tool.py", "src/pkg/sub/__init__.py"],
        {"src/pkg", "src/pkg/sub"},
    )
    assert names == {
        "src/pkg/__init__.py": "pkg",
        "src/pkg/sub/mod.py": "pkg.sub.mod",
        "tool.py": "tool",
        "src/pkg/sub/__init__.py": "pkg.sub",
    }
    assert module_names(["__init__.py", "a.py", "sub/b.py"], {"", "sub"}, "lib") == {
        "__init__.py": "lib",
        "a.py": "lib.a",
        "sub/b.py": "lib.sub.b",
    }


def test_alias_cycles_and_class_cycles_end():
    graph = graph_of(
        {
            "p/__init__.py": "",
            "p/a.py": "from p.b import thing\nclass A(B2):\n    pass\nfrom p.b import B as B2\n",
            "p/b.py": (
                "from p.a import thing\nfrom p.a import A\nclass B(A):\n"
                "    def run(self):\n        return thing()\n"
            ),
        }
    )
    assert graph.canonical("p.a.thing") is None
    assert graph.mro("p.b.B") == ["p.b.B", "p.a.A"]
    assert graph.method("p.a.A", "run") == "p.b.B.run"


def test_self_super_instances_and_class_calls_become_edges():
    graph = graph_of(
        {
            "m.py": (
                "class Base:\n    def __init__(self):\n        self.block = Block()\n"
                "    def step(self):\n        return 1\n"
                "class Block:\n    def forward(self, x):\n        return x\n"
                "    def reset(self):\n        pass\n"
                "class Child(Base):\n"
                "    def step(self):\n        super().step()\n        self.block(1)\n"
                "        self.block.reset()\n        return helper()\n"
                "def helper():\n    b = Block()\n    b.reset()\n    return Child().step()\n"
            )
        }
    )
    assert graph.edges == {
        "m.Child.step": {"m.Base.step", "m.Block.forward", "m.Block.reset", "m.helper"},
        "m.helper": {"m.Block.reset", "m.Base.__init__", "m.Child.step"},
    }


def test_propagation_through_a_cycle_reaches_every_member_and_ends():
    use = Use("unsupported", "torch.x", "a.py", 3)
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert propagate({"c": {use}}, edges) == {"a": {use}, "b": {use}, "c": {use}, "d": {use}}


def test_uses_belong_to_the_innermost_function():
    graph = graph_of(
        {
            "m.py": (
                "def outer():\n    def inner():\n        pass\n    return 1\n"
                "class C:\n    def m(self):\n        x = 1\n"
            )
        }
    )
    spans = function_spans(graph)["m.py"]
    assert [enclosing_function(spans, line) for line in (1, 3, 4, 5, 7)] == [
        "m.outer",
        "m.outer",
        "m.outer",
        None,
        "m.C.m",
    ]


def test_a_library_built_on_an_analysed_one_inherits_its_results_through_api_files(tmp_path):
    _, out = analyse(tmp_path)
    write(
        tmp_path / "lib2" / "wrappers.py",
        "import mylib\n\n\ndef quick_fit(data):\n    return mylib.train_model(data)\n\n\n"
        "def outer(d):\n    return quick_fit(d)\n",
    )
    result = run_cli(
        "analyse",
        "-i",
        tmp_path / "lib2",
        "-o",
        tmp_path / "o2",
        "-m",
        "third_party",
        "-v",
        "2.8.0",
        "-api",
        out / "full_unsupported_results.csv",
    )
    assert result.returncode == 0, result.stderr
    assert rows(tmp_path / "o2" / "lib2_analysis" / "full_unsupported_results.csv")[1:] == [
        ["wrappers.py", "wrappers.outer", "file_path:wrappers.py, start_line:5, api_name:mylib.train_model"],
        [
            "wrappers.py",
            "wrappers.quick_fit",
            "file_path:wrappers.py, start_line:5, api_name:mylib.train_model",
        ],
    ]


TWO_CLASSES = """\
import torch


class Fast:
    def step(self):
        torch.cuda.synchronize()


class Slow:
    def step(self):
        torch.cuda.empty_cache()


def make(fast):
    return (Fast if fast else Slow)()


def run(fast):
    trainer = make(fast)
    trainer.step()
"""


def test_a_call_jedi_places_on_two_classes_reaches_both_whatever_the_hash_seed(tmp_path):
    """jedi names both ``step`` methods, in an order that depends on the interpreter's hash
    seed; keeping only the first made the reports change from run to run."""
    write(tmp_path / "lib" / "__init__.py", "")
    write(tmp_path / "lib" / "core.py", TWO_CLASSES)
    reports = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = tmp_path / f"out{seed}"
        result = run_cli(
            "analyse", "-i", tmp_path / "lib", "-o", out, "-m", "third_party", "-v", "2.8", env=env
        )
        assert result.returncode == 0, result.stderr
        reports.append(tree_files(out / "lib_analysis"))
    assert reports[0] == reports[1] == reports[2]
    assert rows(tmp_path / "out1" / "lib_analysis" / "migration_needed_op.csv") == [
        ["Torch API", "Affected 3rd-party API"],
        ["torch.cuda.empty_cache", "lib.core.Slow.step\nlib.core.run"],
        ["torch.cuda.synchronize", "lib.core.Fast.step\nlib.core.run"],
    ]

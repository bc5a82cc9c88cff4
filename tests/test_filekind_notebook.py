"""The notebook file kind: what it migrates, where its rows point, what it refuses, and the
IPython syntax it keeps (the before/after pairs are in tests/fixtures_files/notebook/)."""

import json
import time
from pathlib import Path

import nbformat
import pytest
from helpers import NEWEST, index_with, kind_context, migrate_file, rows, run_cli, write

from gpu2npu.filekinds import classify, file_kind_named
from gpu2npu.filekinds._ipython import OTHER, PYTHON, SHELL, mask_cell
from gpu2npu.filekinds._notebook_json import NotebookText, apply_edits
from gpu2npu.filekinds.notebook import CELL_MARKER

CASES = Path(__file__).resolve().parent / "fixtures_files" / "notebook"
MIGRATED = sorted(path.parent.parent for path in CASES.glob("*/after/*.ipynb"))
COPIED = "; copied unchanged"
NOT_VALID = "is not valid under any of the given schemas"


def notebook(*cells, metadata=None, ensure_ascii=False) -> bytes:
    """A notebook as nbformat writes it (indent 1, sorted keys, a final newline)."""
    cells = [cell if isinstance(cell, dict) else code(cell) for cell in cells]
    document = {"cells": cells, "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 4}
    return (json.dumps(document, indent=1, sort_keys=True, ensure_ascii=ensure_ascii) + "\n").encode("utf-8")


def code(source, outputs=()) -> dict:
    if isinstance(source, str):
        source = source.splitlines(True)  # as nbformat splits it
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": list(outputs),
        "source": source,
    }


def sources(data: bytes):
    return ["".join(cell["source"]) for cell in json.loads(data)["cells"]]


def migrated_sources(*cells):
    outcome = migrate_file("nb.ipynb", notebook(*cells))
    return sources(outcome.new_bytes) if outcome.new_bytes is not None else None, outcome


# -- the fixtures' results, beyond byte equality -------------------------------------------------


def test_claims_notebooks_only():
    assert classify("notebooks/Train.IPYNB", 10, lambda: b"{") == "notebook"
    assert classify("train.ipynb.bak", 10, lambda: b"{") != "notebook"
    assert classify("train.py", 10, lambda: b"") == "python"


@pytest.mark.parametrize("case", MIGRATED, ids=[c.name for c in MIGRATED])
def test_migrated_notebook_is_valid_and_differs_only_in_code_sources(case):
    (before_path,) = (case / "before").iterdir()
    before, after = (
        json.loads(before_path.read_bytes()),
        json.loads((case / "after" / before_path.name).read_bytes()),
    )
    nbformat.validate(after)
    for old, new in zip(before["cells"], after["cells"]):
        if old["cell_type"] != "code":
            assert new == old
        else:
            assert {**new, "source": None} == {**old, "source": None}
    assert {**after, "cells": None} == {**before, "cells": None}
    assert len(after["cells"]) == len(before["cells"])


@pytest.mark.parametrize("case", MIGRATED, ids=[c.name for c in MIGRATED])
def test_change_rows_point_at_the_source_line_they_name(case):
    """Each row's file line is the JSON string of its cell's line in the original notebook."""
    (before_path,) = (case / "before").iterdir()
    data = before_path.read_bytes()
    cells = json.loads(data)["cells"]
    file_lines = data.decode("utf-8").splitlines()
    outcome = migrate_file(before_path.name, data)
    assert outcome.changes
    for change in outcome.changes:
        number, line = (int(part.split()[-1]) for part in change.cell.split(","))
        source = cells[number - 1]["source"]
        written = file_lines[change.start_line - 1].strip().rstrip(",")
        if isinstance(source, list):
            assert json.loads(written) == source[line - 1], change
        else:  # one string: every line of the cell is on the string's line
            assert written.startswith('"source": ') and json.loads(written[len('"source": ') :]) == source


def test_training_rows_name_cell_and_line():
    data = (CASES / "training" / "before" / "train_cnn.ipynb").read_bytes()
    outcome = migrate_file("train_cnn.ipynb", data)
    assert [(c.start_line, c.cell, c.rule) for c in outcome.changes] == [
        (35, "cell 2, line 2", "G2N030"),  # %env CUDA_VISIBLE_DEVICES=0
        (40, "cell 2, line 7", "G2N001"),  # import torch_npu after import torch (its cell)
        (60, "cell 3, line 1", "G2N289"),  # torch.cuda in a cell that imports nothing
        (60, "cell 3, line 1", "G2N317"),
        (61, "cell 3, line 2", "G2N317"),
        (61, "cell 3, line 2", "G2N005"),
        (92, "cell 5, line 12", "G2N003"),
        (114, "cell 6, line 3", "G2N003"),  # in a %%time cell
        (115, "cell 6, line 4", "G2N005"),
        (120, "cell 6, line 9", "G2N366"),
        (138, "cell 7, line 1", "G2N003"),  # the statement of a %timeit line
        (140, "cell 7, line 3", "G2N328"),
        (185, "cell 9, line 2", "G2N030"),  # export in a %%bash cell
        (187, "cell 9, line 4", "G2N030"),  # $CUDA_VISIBLE_DEVICES read in it
        (199, "cell 10, line 3", "G2N291"),
    ]
    assert [(r.line, r.subject, r.rule, r.cell) for r in outcome.reported] == [
        (36, "nvidia-smi", "G2N800", "cell 2, line 3"),  # !nvidia-smi, read as shell
        (186, "nvidia-smi", "G2N800", "cell 9, line 3"),  # in a %%bash cell
    ]
    assert outcome.lines == 46  # the lines of code cells, not of the JSON


def test_ipython_lines_come_back_byte_for_byte():
    after = sources((CASES / "training" / "after" / "train_cnn.ipynb").read_bytes())
    assert after[1].startswith(
        "%matplotlib inline\n%env ASCEND_RT_VISIBLE_DEVICES=0\n!nvidia-smi\n!pip install"
    )
    assert after[2].endswith("\ntorch.cuda.get_device_name?")  # help is kept as written
    assert after[6].startswith("%timeit model(torch.randn(1, 1, 28, 28).npu())\nfiles = !ls checkpoints\n")
    assert after[5].startswith("%%time\n")


# -- skipped files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data,reason",
    [
        (b'{"cells": [', "invalid notebook (Expecting value: line 1 column 12 (char 11))"),
        (b"[1, 2]", "invalid notebook (not a notebook: no nbformat version)"),
        (
            b'{"cells": [], "nbformat": 4, "nbformat_minor": 4, "metadata": {}}\xff',
            "invalid notebook (not UTF-8 text at byte 65)",
        ),
        (b"[" * 100_000 + b"]" * 100_000, "invalid notebook (nested too deeply)"),
        (
            b'{"cells": [], "metadata": {"a": '
            + b"[" * 100_000
            + b"]" * 100_000
            + b'}, "nbformat": 4, "nbformat_minor": 4}',
            "invalid notebook (nested too deeply)",
        ),
        (
            json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": []}).encode(),
            "a notebook of format 3, from before PyTorch: convert it to format 4",
        ),
        (
            b'{"cells": [], "metadata": {}, "nbformat": 5, "nbformat_minor": 0}',
            "invalid notebook (format 5: nbformat knows formats up to 4)",
        ),
        (
            b'{"metadata": {}, "nbformat": 4, "nbformat_minor": 4}',
            "invalid notebook (the notebook: 'cells' is a required property)",
        ),
        (
            notebook(code(["import torch\n", 7])),
            f"invalid notebook (cells/0/source: ['import torch\\n', 7] {NOT_VALID})",
        ),
        (
            notebook(code({"lines": ["x.cuda()"]}))[:-1],
            f"invalid notebook (cells/0/source: {{'lines': ['x.cuda()']}} {NOT_VALID})",
        ),
        (
            notebook(
                code("x <- 1"), metadata={"kernelspec": {"language": "R", "name": "ir", "display_name": "R"}}
            ),
            "not a Python notebook (kernel language R)",
        ),
    ],
    ids=[
        "bad-json",
        "not-a-notebook",
        "not-utf8",
        "deep",
        "deep-metadata",
        "format-3",
        "format-5",
        "no-cells",
        "source-item",
        "source-dict",
        "R",
    ],
)
def test_unreadable_notebooks_are_copied_with_a_reason(data, reason):
    outcome = migrate_file("nb.ipynb", data)
    assert (outcome.skipped, outcome.new_bytes, outcome.changes) == (reason + COPIED, None, [])


def test_schema_complaints_outside_the_sources_do_not_stop_it():
    """An output or metadata the schema rejects is the user's; the sources are still migrated."""
    odd_output = {"output_type": "stream", "text": "no name"}
    new, outcome = migrated_sources(code("import torch\nx.cuda()", outputs=[odd_output]))
    assert not outcome.skipped and new == ["import torch\nimport torch_npu\nx.npu()"]


def test_a_huge_output_is_fast():
    blob = "iVBORw0KGgoAAAANSUhEUgAA" * (5 * 1024 * 1024 // 24)
    image = {
        "data": {"image/png": blob, "text/plain": ["<Figure>"]},
        "metadata": {},
        "output_type": "display_data",
    }
    markdown = {"cell_type": "markdown", "metadata": {}, "source": ["# done \u00e9"]}
    data = notebook(code("import torch\ntorch.ones(1).cuda()", outputs=[image]), markdown)
    started = time.perf_counter()
    outcome = migrate_file("big.ipynb", data)
    assert time.perf_counter() - started < 5
    assert len(outcome.new_bytes) == len(data) + len('    "import torch_npu\\n",\n') - len("cuda") + len(
        "npu"
    )
    assert json.loads(outcome.new_bytes)["cells"][0]["outputs"][0]["data"]["image/png"] == blob


# -- IPython syntax --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "%matplotlib inline",
        "!pip install -q timm",
        "!!ls",
        "files = !ls *.pt",
        "a, b = %sx echo 1",
        "torch.cuda?",
        "torch.cuda.is_available??",
        "?torch.cuda",
        "%time",
        "/print 1 2",
        "    %load_ext autoreload",
        "%matplotlib inline\r",  # a CRLF source line keeps its one "\r"
    ],
)
def test_escapes_are_masked_and_restored(line):
    cell = mask_cell(f"import torch\n{line}\nx = 1")
    assert cell.kind == PYTHON and set(cell.escapes) == {1}
    assert cell.masked[1].strip().startswith("_gpu2npu_ipython_1_")
    assert cell.restore(cell.masked_text) == cell.lines


def test_lines_inside_strings_and_brackets_are_python():
    text = "s = '''\n%d items\n!done?\n'''\nt = (1,\n     2)\nu = f(\n%x)\nv = 'a' \\\n    '!b'\n%time"
    cell = mask_cell(text)
    assert set(cell.escapes) == {10}


def test_escape_continued_with_a_backslash():
    cell = mask_cell("!pip install \\\n    torch==2.1.0\nimport torch")
    assert set(cell.escapes) == {0, 1} and cell.shell_lines() == [(0, 1), (1, 0)]
    assert cell.masked == ["_gpu2npu_ipython_0_", "_gpu2npu_ipython_1_", "import torch"]


@pytest.mark.parametrize(
    "first,kind",
    [
        ("%%bash", SHELL),
        ("%%sh", SHELL),
        ("%%script bash", SHELL),
        ("%%script python3", OTHER),
        ("%%writefile train.py", OTHER),
        ("%%html", OTHER),
        ("%%capture out", PYTHON),
        ("%%timeit -n 3", PYTHON),
    ],
)
def test_cell_magics(first, kind):
    assert mask_cell(f"{first}\nx.cuda()").kind == kind


def test_shell_and_other_cells_are_not_python():
    new, outcome = migrated_sources(
        "import torch",
        "%%writefile train.py\nimport torch\nx = torch.ones(1).cuda()",
        "%%bash\nCUDA_VISIBLE_DEVICES=1 python train.py\nnvcc --version",
        "%%html\n<b>cuda</b>",
    )
    assert new[1:] == [
        "%%writefile train.py\nimport torch\nx = torch.ones(1).cuda()",
        "%%bash\nASCEND_RT_VISIBLE_DEVICES=1 python train.py\nnvcc --version",
        "%%html\n<b>cuda</b>",
    ]
    assert [(r.subject, r.rule, r.category, r.cell) for r in outcome.reported] == [
        ("nvcc", "G2N801", "unsupported", "cell 3, line 3")
    ]


def test_shell_lines_rename_environment_variables_only_where_set_or_read():
    new, _ = migrated_sources(
        "!CUDA_VISIBLE_DEVICES=0,1 torchrun train.py\n"
        "!echo 'set CUDA_VISIBLE_DEVICES first' ${NCCL_DEBUG}\n"
        "%env CUDA_LAUNCH_BLOCKING 1\n"
        "gpus = %env CUDA_VISIBLE_DEVICES"
    )
    assert new == [
        "!ASCEND_RT_VISIBLE_DEVICES=0,1 torchrun train.py\n"
        "!echo 'set CUDA_VISIBLE_DEVICES first' ${NCCL_DEBUG}\n"
        "%env ASCEND_LAUNCH_BLOCKING 1\n"
        "gpus = %env ASCEND_RT_VISIBLE_DEVICES"
    ]


# Shell code as a launch script has it; each is read in a notebook's shell forms below.
SHELL_COMMANDS = [
    "nvidia-smi --query-gpu=memory.used --format=csv",
    "NCCL_DEBUG=INFO python train.py --dist-backend nccl",
    "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 train.py --device=cuda:0 trainer.device=cuda",
    "docker run --gpus all -v $CUDA_HOME:/cuda my/train:latest",
    "export NCCL_SOCKET_IFNAME=eth0 NCCL_IB_DISABLE=1",
    'echo "run nvidia-smi on $CUDA_VISIBLE_DEVICES" --device cuda',
    "sudo -u me env CUDA_VISIBLE_DEVICES=1 nvcc -O3 kernel.cu",
]
SHELL_FORMS = ["!{}", "!!{}", "files = !{}", "%sx {}", "out = %system {}", "%%bash\n{}", "%%script bash\n{}"]


@pytest.mark.parametrize("form", SHELL_FORMS)
@pytest.mark.parametrize("command", SHELL_COMMANDS)
def test_shell_code_gets_the_edits_and_rows_of_a_shell_script(form, command):
    """The shell kind reads a notebook's shell lines and cells: the same edits, change rows and
    reported rows as for the command in run.sh, on the command's line of the cell."""
    script = migrate_file("run.sh", f"{command}\n".encode())
    cell = form.format(command)
    new, outcome = migrated_sources(cell)
    if script.new_bytes is None:
        assert new is None
    else:
        assert new == [form.format(script.new_bytes.decode()[:-1])]
    where = f"cell 1, line {cell.count(chr(10)) + 1}"
    assert [(c.operation, c.message, c.rule, c.cell) for c in outcome.changes] == [
        (c.operation, c.message, c.rule, where) for c in script.changes
    ]
    assert [(r.subject, r.tip, r.rule, r.category, r.cell) for r in outcome.reported] == [
        (r.subject, r.tip, r.rule, r.category, where) for r in script.reported
    ]
    assert outcome.reported or outcome.changes  # every command has something a rule acts on


def test_a_shell_line_with_continuation_lines_is_one_command():
    new, outcome = migrated_sources(
        "import torch\n"
        "!NCCL_DEBUG=INFO torchrun \\\n"
        "    train.py --dist-backend nccl\n"
        "x = torch.ones(1).cuda()"
    )
    assert new == [
        "import torch\nimport torch_npu\n!NCCL_DEBUG=INFO torchrun \\\n    train.py --dist-backend hccl\n"
        "x = torch.ones(1).npu()"
    ]
    assert [(c.start_line, c.cell, c.rule) for c in outcome.changes] == [
        (9, "cell 1, line 1", "G2N001"),
        (11, "cell 1, line 3", "G2N831"),  # --dist-backend nccl, on the continuation line
        (12, "cell 1, line 4", "G2N003"),
    ]
    assert [(r.line, r.subject, r.rule, r.cell) for r in outcome.reported] == [
        (10, "NCCL_DEBUG", "G2N812", "cell 1, line 2")
    ]


def test_each_shell_line_is_read_on_its_own():
    """IPython runs each shell line alone: a quote left open on one does not swallow the next;
    shell code the parser cannot read is reported where it holds a word the rules look for."""
    new, outcome = migrated_sources(
        '!echo "unclosed\n!nvidia-smi\n!if [[ $DEVICE == cuda ]]; then echo gpu; fi\nx = 1'
    )
    assert new is None
    assert [(r.line, r.subject, r.rule, r.category, r.cell) for r in outcome.reported] == [
        (10, "nvidia-smi", "G2N800", "unsupported", "cell 1, line 2"),
        (11, "[[ $DEVICE == cuda ]]", "not-migrated", "unknown", "cell 1, line 3"),
    ]


def test_env_lines_rename_their_variable_and_report_it_where_they_set_it():
    new, outcome = migrated_sources(
        "%env CUDA_VISIBLE_DEVICES=0\n"
        "%env NCCL_DEBUG=INFO\n"
        "%set_env NCCL_SOCKET_IFNAME eth0\n"
        "%env NCCL_ALGO =Ring\n"
        "level = %env NCCL_DEBUG\n"  # read: not reported
        "%env\n"
        "%env CUDA_VISIBLE_DEVICESX=1"
    )
    assert new == [
        "%env ASCEND_RT_VISIBLE_DEVICES=0\n%env NCCL_DEBUG=INFO\n%set_env NCCL_SOCKET_IFNAME eth0\n"
        "%env NCCL_ALGO =Ring\nlevel = %env NCCL_DEBUG\n%env\n%env CUDA_VISIBLE_DEVICESX=1"
    ]
    assert [(c.cell, c.rule) for c in outcome.changes] == [("cell 1, line 1", "G2N030")]
    assert [(r.subject, r.rule, r.category, r.cell) for r in outcome.reported] == [
        ("NCCL_DEBUG", "G2N812", "mention", "cell 1, line 2"),
        ("NCCL_SOCKET_IFNAME", "G2N810", "limited", "cell 1, line 3"),
        ("NCCL_ALGO", "G2N814", "limited", "cell 1, line 4"),
    ]


def test_shell_lines_with_crlf_ends_and_lone_surrogates():
    outcome = migrate_file("nb.ipynb", notebook(code(["!nvidia-smi\r\n", "%sx nvcc --version\r\n", "x = 1"])))
    assert outcome.new_bytes is None
    assert [(r.subject, r.cell) for r in outcome.reported] == [
        ("nvidia-smi", "cell 1, line 1"),
        ("nvcc", "cell 1, line 2"),
    ]
    data = notebook("!echo '\ud800' $CUDA_VISIBLE_DEVICES", ensure_ascii=True)
    outcome = migrate_file("nb.ipynb", data)
    assert json.loads(outcome.new_bytes)["cells"][0]["source"] == [
        "!echo '\ud800' $ASCEND_RT_VISIBLE_DEVICES"
    ]
    assert [c.rule for c in outcome.changes] == ["G2N030"]


def test_time_magics_have_their_statement_migrated():
    new, _ = migrated_sources(
        "import torch", "%time y = torch.ones(1).cuda()\n%timeit -n 10 -r 2 x.cuda()\n%timeit -q"
    )
    assert new[1] == "%time y = torch.ones(1).npu()\n%timeit -n 10 -r 2 x.npu()\n%timeit -q"


# -- cells as one program --------------------------------------------------------------------------


def test_names_imported_in_one_cell_are_known_in_the_next():
    new, outcome = migrated_sources("import torch as T", "import os", "T.cuda.synchronize()\nimport torch")
    assert new == ["import torch as T\nimport torch_npu", "import os", "T.npu.synchronize()\nimport torch"]
    assert [c.cell for c in outcome.changes] == ["cell 1, line 1", "cell 3, line 1"]


def test_a_cell_using_the_npu_above_the_cell_importing_torch_imports_torch_npu_itself():
    """dinov2's dinotxt.ipynb: cell 2 calls ``.cuda()``, cell 7 imports torch. torch before 2.5
    does not load torch_npu by itself, so it is imported in the first cell that needs it."""
    new, outcome = migrated_sources("from dinov2.hub import model", "m = model().cuda()", "import torch")
    assert new == ["from dinov2.hub import model", "import torch_npu\nm = model().npu()", "import torch"]
    assert [(c.cell, c.message) for c in outcome.changes if c.operation == "INSERT"] == [
        ("cell 2, line 1", "insert import torch_npu (the module uses the NPU before it imports torch)")
    ]


def test_portable_bindings_follow_the_cell_that_always_imports_torch():
    """segment-anything's onnx notebook imports torch under ``if using_colab:`` (False) and again
    in a later cell: bound in the ``if`` block, DEVICE_TYPE was never bound (NameError)."""
    from test_portable import portable_index

    data = notebook(
        "using_colab = False", "if using_colab:\n    import torch", "import torch", "m.to(device='cuda')"
    )
    outcome = migrate_file("nb.ipynb", data, index=portable_index("2.8.0"))
    assert sources(outcome.new_bytes) == [
        "using_colab = False",
        "if using_colab:\n    import torch",
        "import torch\nACCELERATOR = torch.accelerator.current_accelerator().type"
        " if torch.accelerator.is_available() else None\nDEVICE_TYPE = ACCELERATOR or 'cpu'",
        "m.to(device=DEVICE_TYPE)",
    ]


def test_a_cell_that_does_not_parse_is_kept_and_reported():
    new, outcome = migrated_sources("import torch", "x = torch.ones(1).cuda(\n", "print x.cuda()", "y.cuda()")
    assert new == ["import torch\nimport torch_npu", "x = torch.ones(1).cuda(\n", "print x.cuda()", "y.npu()"]
    assert [(r.subject, r.rule, r.category, r.cell) for r in outcome.reported] == [
        ("cell 2", "not-migrated", "unknown", "cell 2, line 1"),
        ("cell 3", "not-migrated", "unknown", "cell 3, line 1"),
    ]
    assert "'(' was never closed at line 1" in outcome.reported[0].tip


def test_top_level_await_and_a_later_future_import_are_cells_like_others():
    """IPython runs both; each cell is written back on its own, so the joined program's order
    of statements never reaches the notebook."""
    new, outcome = migrated_sources("import torch", "await x.cuda()")
    assert new == ["import torch\nimport torch_npu", "await x.npu()"] and not outcome.reported
    new, outcome = migrated_sources("import torch", "from __future__ import annotations\nx.cuda()")
    assert new == ["import torch\nimport torch_npu", "from __future__ import annotations\nx.npu()"]
    assert not outcome.reported


def test_a_cell_the_engine_refuses_is_reported_and_the_rest_migrated():
    context = kind_context()

    def refusing(data, rel):
        if b"refuse me" in data:
            return None, [], "internal error: refused; kept unchanged", []
        return context.migrate_python(data, rel)

    data = notebook("import torch", "# refuse me\n!CUDA_VISIBLE_DEVICES=1 ls\nx.cuda()", "y.cuda()")
    outcome = file_kind_named("notebook").migrate(data, "nb.ipynb", type(context)(context.index, refusing))
    assert sources(outcome.new_bytes) == [
        "import torch\nimport torch_npu",
        "# refuse me\n!CUDA_VISIBLE_DEVICES=1 ls\nx.cuda()",
        "y.npu()",
    ]
    assert [(r.subject, r.tip) for r in outcome.reported] == [
        (
            "cell 2",
            "the cell is not Python the migration can read (internal error: refused); migrate it by hand",
        )
    ]
    assert [c.cell for c in outcome.changes] == ["cell 1, line 1", "cell 3, line 1"]


def test_cells_are_migrated_one_by_one_when_the_joined_program_is_refused():
    """The last resort: each cell alone (a cell that calls .npu() without importing torch then
    imports torch_npu itself, as any module that uses the NPU and imports no torch)."""
    context = kind_context()

    def refusing_joined(data, rel):
        if CELL_MARKER.encode() in data:
            return None, [], "internal error: refused; kept unchanged", []
        return context.migrate_python(data, rel)

    data = notebook("import torch\nx = torch.ones(1).cuda()", "y.cuda()")
    outcome = file_kind_named("notebook").migrate(
        data, "nb.ipynb", type(context)(context.index, refusing_joined)
    )
    assert sources(outcome.new_bytes) == [
        "import torch\nimport torch_npu\nx = torch.ones(1).npu()",
        "import torch_npu\ny.npu()",
    ]
    assert not outcome.reported


def test_disabled_rules_do_not_report():
    outcome = migrate_file(
        "nb.ipynb", notebook("!nvidia-smi"), index=index_with(disabled=["G2N800"], version=NEWEST)
    )
    assert outcome.reported == [] and outcome.new_bytes is None


# -- the API reports: uses of APIs in the code as written ------------------------------------------

MARKDOWN_USE = {"cell_type": "markdown", "metadata": {}, "source": ["torch.autograd.profiler.emit_nvtx()"]}
# A notebook (lines of its JSON on the right) whose uses sit on Python lines, a %timeit line, a
# shell line and in a markdown cell, some spanning several lines.
ANALYSED = notebook(
    MARKDOWN_USE,  # 7
    "import torch\n"  # 16
    "%timeit torch.cuda.get_device_properties(0).major\n"  # 17
    "!python -c 'import torch; torch.autograd.profiler.emit_nvtx()'\n"  # 18
    "torch.cuda.synchronize()",  # 19
    "with torch.autograd.profiler.emit_nvtx(\n"  # 28
    "    enabled=True):\n"  # 29
    "    sm = torch.cuda.get_device_properties(\n"  # 30
    "        0\n"  # 31
    "    ).major\n",  # 32
)


def test_api_uses_are_those_of_the_code_as_written_at_the_notebook_lines():
    """Uses are read before the migration (torch.cuda.synchronize, not torch.npu's), a use over
    several lines keeps its span, columns are those of the source line (after %timeit's magic)."""
    outcome = migrate_file("nb.ipynb", ANALYSED, version="2.1.0", analyse=True)
    assert [(c.file, c.start_line, c.end_line, c.column, c.api, c.kind) for c in outcome.calls] == [
        ("nb.ipynb", 16, 16, 1, "torch", "import"),
        ("nb.ipynb", 17, 17, 9, "torch.cuda.get_device_properties", "call"),
        ("nb.ipynb", 19, 19, 1, "torch.cuda.synchronize", "call"),
        ("nb.ipynb", 28, 29, 6, "torch.autograd.profiler.emit_nvtx", "call"),
        ("nb.ipynb", 30, 32, 10, "torch.cuda.get_device_properties", "call"),
    ]
    assert [(k.line, k.end_line, k.name, k.rule_id) for k in outcome.kept] == [
        (17, 17, "torch.cuda.get_device_properties", "G2N091"),
        (30, 30, "torch.cuda.get_device_properties", "G2N091"),
    ]


def test_a_run_without_api_reports_analyses_nothing():
    outcome = migrate_file("nb.ipynb", ANALYSED, version="2.1.0")
    assert outcome.calls == [] and outcome.kept == [] and outcome.changes


def _recording(context, refuse=b"refuse me"):
    """The context's Python migration refusing code with ``refuse``, and its analysis recording
    the programs it is given."""
    programs = []

    def migrating(data, rel):
        if refuse in data:
            return None, [], "internal error: refused; kept unchanged", []
        return context.migrate_python(data, rel)

    def analysing(data, rel):
        programs.append(data.decode("utf-8"))
        return context.analyse_python(data, rel)

    return type(context)(context.index, migrating, analysing), programs


def test_skipped_cells_and_ipython_lines_are_not_analysed():
    """One program per notebook: the Python cells as the engine sees them, without the cell that
    does not parse nor the one the engine refuses."""
    context, programs = _recording(kind_context("2.1.0", analyse=True))
    data = notebook(
        MARKDOWN_USE,
        "import torch\n!python -c 'torch.autograd.profiler.emit_nvtx()'",
        "torch.autograd.profiler.emit_nvtx(\n",  # does not parse
        "# refuse me\ntorch.autograd.profiler.emit_nvtx()",
        "%%bash\npython -c 'torch.autograd.profiler.emit_nvtx()'",
        "x = torch.autograd.profiler.emit_nvtx()",
    )
    outcome = file_kind_named("notebook").migrate(data, "nb.ipynb", context)
    assert programs == [
        f"import torch\n_gpu2npu_ipython_1_\n{CELL_MARKER}\nx = torch.autograd.profiler.emit_nvtx()"
    ]
    assert [(c.start_line, c.api) for c in outcome.calls] == [
        (16, "torch"),
        (55, "torch.autograd.profiler.emit_nvtx"),  # cell 6, line 1
    ]
    assert [r.subject for r in outcome.reported] == ["cell 3", "cell 4"]


def test_cells_migrated_one_by_one_are_analysed_together():
    """The analysis is of the code, not of what the engine made of it: the cells it took one by
    one are one program again, so the second cell's torch is the first one's import."""
    context, programs = _recording(kind_context("2.1.0", analyse=True), refuse=CELL_MARKER.encode())
    data = notebook("import torch", "with torch.autograd.profiler.emit_nvtx():\n    pass")
    outcome = file_kind_named("notebook").migrate(data, "nb.ipynb", context)
    assert programs == [f"import torch\n{CELL_MARKER}\nwith torch.autograd.profiler.emit_nvtx():\n    pass"]
    assert [(c.start_line, c.end_line, c.api) for c in outcome.calls] == [
        (9, 9, "torch"),
        (18, 18, "torch.autograd.profiler.emit_nvtx"),
    ]


PROFILED = (
    "import torch\nx = torch.ones(1).cuda()\nwith torch.autograd.profiler.emit_nvtx():\n    y = x * 2\n"
)


def test_migrate_and_check_report_a_notebook_s_api_uses_at_its_lines(tmp_path):
    """The same code in a .py file and in a notebook (its line 3 on the .ipynb line 27) gives the
    same unsupported API row and the same check finding, at the notebook's line."""
    cells = [
        MARKDOWN_USE,
        "import torch\nx = torch.ones(1).cuda()",
        "!nvidia-smi\n" + PROFILED.split("\n", 2)[2],
    ]
    write(tmp_path / "proj" / "train.py", PROFILED)
    write(tmp_path / "proj" / "nb.ipynb", notebook(*cells))
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.1.0", "-j", "1")
    assert result.returncode == 0, result.stderr
    tip = "not supported on NPU for torch 2.1.0: replace it, or run this part on the CPU"
    row = ["torch.autograd.profiler.emit_nvtx", tip, "unsupported", "listed", "msprobe@2.1.0"]
    assert rows(tmp_path / "out" / "proj_msft" / "transplant_result_file" / "unsupported_api.csv") == [
        ["File", "Start Line", "End Line", "OP", "Tips", "Status", "Confidence", "Source"],
        ["nb.ipynb", "27", "27", *row],
        ["train.py", "3", "3", *row],
    ]
    result = run_cli("check", tmp_path / "proj", "-v", "2.1.0", "--format", "json")
    assert result.returncode == 1, result.stderr
    found = [
        (f["file"].rsplit("/", 1)[-1], f["line"], f["column"], f["rule"], f["fails"])
        for f in json.loads(result.stdout)["findings"]
        if f["api"] == "torch.autograd.profiler.emit_nvtx"
    ]
    assert found == [
        ("nb.ipynb", 27, 6, "unsupported-api", True),
        ("train.py", 3, 6, "unsupported-api", True),
    ]


# -- writing the JSON back -------------------------------------------------------------------------


def _edited(source, new_text: str, **dumps) -> str:
    text = (
        json.dumps({"cells": [{"cell_type": "code", "source": source}], "nbformat": 4}, indent=1, **dumps)
        + "\n"
    )
    document = NotebookText(text)
    return apply_edits(text, document.source_edits(document.cells[0], new_text))


@pytest.mark.parametrize(
    "new_text",
    ["a\nb\nc", "x\na\nb\nc", "a\nb\nc\nd", "a\nc", "b\nc", "a\nb", "", "a\nB\nc\n", "z"],
)
def test_source_edits_give_the_lines_nbformat_would_write(new_text):
    edited = _edited(["a\n", "b\n", "c"], new_text)
    expected = json.dumps(
        {
            "cells": [
                {"cell_type": "code", "source": nbformat.v4.new_code_cell(new_text).source.splitlines(True)}
            ],
            "nbformat": 4,
        },
        indent=1,
    )
    assert edited == expected + "\n"


def test_source_edits_keep_unchanged_strings_as_written():
    text = '{"cells": [{"cell_type": "code", "source": ["\\u0061 = 1\\n", "x.cuda()"]}], "nbformat": 4}'
    document = NotebookText(text)
    edits = document.source_edits(document.cells[0], "a = 1\nx.npu()")
    assert (
        apply_edits(text, edits)
        == '{"cells": [{"cell_type": "code", "source": ["\\u0061 = 1\\n", "x.npu()"]}], "nbformat": 4}'
    )


def test_source_edits_of_an_empty_list_and_of_lines_not_split_per_line():
    assert _edited([], "a\nb") == _edited(["a\n", "b"], "a\nb")
    assert json.loads(_edited(["a\nb\n", "c"], "a\nB\nc"))["cells"][0]["source"] == ["a\n", "B\n", "c"]


def test_escaped_style_is_kept_for_new_non_ascii_text():
    assert '"\\u00e9\\n"' in _edited(["\u00e9"], "\u00e9\nx", ensure_ascii=True)
    assert '"\u00e9\\n"' in _edited(["\u00e9"], "\u00e9\nx", ensure_ascii=False)


@pytest.mark.parametrize(
    "mode,cell",
    [
        (
            "auto",
            "%pip install torch_npu\n!npu-smi info\n"
            "import torch_npu\nfrom torch_npu.contrib import transfer_to_npu\n"
            "import torch\nx = torch.ones(2).cuda()",
        ),
        (
            "specify-device",
            "%pip install torch_npu\n!npu-smi info\nimport torch\nimport torch_npu\nimport os\n"
            "DEVICE_ID = int(os.environ['DEVICE_ID']) if os.environ.get('DEVICE_ID', '').isdigit() else 0\n"
            "torch_npu.npu.set_device(DEVICE_ID)\nx = torch.ones(2).npu()",
        ),
    ],
)
def test_a_notebooks_entry_lines_go_after_its_leading_ipython_lines(tmp_path, mode, cell):
    """The first cell installs torch_npu: importing it first would fail; -s imported it twice."""
    source = tmp_path / "nb"
    source.mkdir()
    (source / "train.ipynb").write_bytes(
        notebook("%pip install torch_npu\n!npu-smi info\nimport torch\nx = torch.ones(2).cuda()")
    )
    result = run_cli("migrate", "-i", source, "-o", tmp_path / "out", "-v", NEWEST, "--mode", mode)
    assert result.returncode == 0, result.stderr
    migrated = json.loads((tmp_path / "out" / "nb_msft" / "train.ipynb").read_text())
    assert "".join(migrated["cells"][0]["source"]) == cell


def test_a_notebook_that_imports_only_the_standard_library_is_no_entry(tmp_path):
    """nanoGPT's transformer_sizing.ipynb imports only collections: auto mode put
    ``import torch_npu`` in its first cell, so it failed where torch_npu is not installed. A
    notebook that reaches torch through a project module, or imports a library that may, still is
    an entry."""
    source = tmp_path / "nb"
    sizing = notebook("from collections import OrderedDict", "print(OrderedDict(a=12 * 768**2))")
    write(source / "sizing.ipynb", sizing)
    write(source / "plots.ipynb", notebook("import numpy as np\nprint(np.ones(2))"))
    write(source / "model.py", "import torch\n\n\ndef build():\n    return torch.nn.Linear(2, 2).cuda()\n")
    write(source / "helpers.py", "from model import build\n")
    write(source / "use.ipynb", notebook("from helpers import build", "net = build()"))
    write(source / "lib.ipynb", notebook("import timm\nnet = timm.create_model('resnet18')"))
    result = run_cli("migrate", "-i", source, "-o", tmp_path / "out", "--mode", "auto")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "nb_msft"
    assert (out / "sizing.ipynb").read_bytes() == sizing
    changes = rows(out / "transplant_result_file" / "change_list.csv")
    entries = sorted({row[0] for row in changes if row[5] == "G2N700"})
    assert entries == ["lib.ipynb", "use.ipynb"]


def test_code_the_rewrite_pass_keeps_is_reported_at_the_notebook_lines(tmp_path):
    """llama-recipes' Step-4-TTS-Workflow.ipynb with -s: ``device = "cuda:7"`` and ``.to("cuda:3")``
    keep their cards (the notebook names several), and in a .py file each is a G2N721 row; the
    notebook's rows were lost, since only what the rules keep before the pass reached them."""
    write(
        tmp_path / "nb" / "tts.ipynb",
        notebook("import torch", 'device = "cuda:7"', 'x = torch.ones(1).to("cuda:3")'),
    )
    result = run_cli("migrate", "-i", tmp_path / "nb", "-o", tmp_path / "out", "-v", NEWEST, "-s")
    assert result.returncode == 0, result.stderr
    reports = tmp_path / "out" / "nb_msft" / "transplant_result_file"
    kept = [row[:4] + row[-1:] for row in rows(reports / "unsupported_api.csv")[1:]]
    assert kept == [
        ["tts.ipynb", "18", "18", "'cuda:7'", "rules:G2N721"],
        ["tts.ipynb", "27", "27", "'cuda:3'", "rules:G2N721"],
    ]

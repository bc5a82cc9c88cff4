"""`gpu2npu analyse -m dynamic_shape`: the instrumented source (exact before/after pairs), the
choice of the training loop, the command on a project, and the instrumented copy run with real
torch (exact report rows). Only the tests named *_with_torch need torch."""

import csv
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from helpers import REPO, run_cli, tree_files, write

from gpu2npu.modes.dynamic_shape.instrument import instrument_source
from gpu2npu.modes.dynamic_shape.loops import BY_DATALOADER, BY_HAND, BY_NAME
from gpu2npu.modes.dynamic_shape.runtime_package import RUNTIME_DIR

PROJECTS = REPO / "tests" / "projects" / "dynamic"
HEADER = [
    "Function Name",
    "File Path",
    "Line Number",
    "Call Stack",
    "Input Shape Range",
    "Output Shape Range",
]
IMPORT = "from msft_dynamic_analysis.hook import DETECTOR"


def require_torch():
    """torch, or a skip. The test extra pins torch for Python 3.11 (the version with a CPU
    build on this project's machines), so there its absence is a failure, not a skip."""
    if sys.version_info[:2] == (3, 11):
        try:
            import torch
        except ImportError:
            pytest.fail(
                "torch is missing though the test extra installs it on Python 3.11: pip install '.[test]'"
            )
        return torch
    return pytest.importorskip("torch")


def instrumented(code: str) -> str:
    result = instrument_source(textwrap.dedent(code).encode("utf-8"))
    assert not result.skipped, result.skipped
    return result.new_bytes.decode("utf-8") if result.new_bytes is not None else textwrap.dedent(code)


# -- the instrumented source -------------------------------------------------------------------

CASES = {
    "import shares the line of the docstring and __future__ imports": (
        '''\
        """Doc."""
        from __future__ import annotations
        import torch
        y = torch.zeros(2)
        ''',
        f'''\
        """Doc."""
        from __future__ import annotations; {IMPORT}
        import torch
        y = DETECTOR.hook_func(torch.zeros, 'torch.zeros', 0, 2)
        ''',
    ),
    "import goes before the first statement, on its line": (
        """\
        # a comment
        import torch
        y = torch.zeros(2)
        """,
        f"""\
        # a comment
        {IMPORT}; import torch
        y = DETECTOR.hook_func(torch.zeros, 'torch.zeros', 0, 2)
        """,
    ),
    "calls of one name on the same lines are numbered": (
        """\
        b = a.mean() + a.mean()
        c = a.mean()
        """,
        f"""\
        {IMPORT}; b = DETECTOR.hook_func(a.mean, 'a.mean', 0) + DETECTOR.hook_func(a.mean, 'a.mean', 1)
        c = DETECTOR.hook_func(a.mean, 'a.mean', 0)
        """,
    ),
    "names are resolved through imports; an imported builtin name is no builtin": (
        """\
        import torch.nn.functional as F
        from torch import max
        y = F.relu(x)
        m = max(y, 1)
        n = len(y)
        """,
        f"""\
        {IMPORT}; import torch.nn.functional as F
        from torch import max
        y = DETECTOR.hook_func(F.relu, 'torch.nn.functional.relu', 0, x)
        m = DETECTOR.hook_func(max, 'torch.max', 0, y, 1)
        n = len(y)
        """,
    ),
    "line breaks and comments stay where they were": (
        """\
        import torch
        y = torch.cat(
            [a, b],  # the parts
            dim=0,
        )
        z = y.sum(
        )
        """,
        f"""\
        {IMPORT}; import torch
        y = DETECTOR.hook_func(torch.cat, 'torch.cat', 0,
            [a, b],  # the parts
            dim=0,
        )
        z = DETECTOR.hook_func(y.sum, 'y.sum', 0
        )
        """,
    ),
    "a bare generator argument gets parentheses, and stays a generator": (
        """\
        import torch
        y = torch.cat(t.relu() for t in ts)
        z = torch.stack([t for t in ts], *more, **options)
        """,
        f"""\
        {IMPORT}; import torch
        y = DETECTOR.hook_func(torch.cat, 'torch.cat', 0, """
        """(DETECTOR.hook_func(t.relu, 't.relu', 0) for t in ts))
        z = DETECTOR.hook_func(torch.stack, 'torch.stack', 0, [t for t in ts], *more, **options)
        """,
    ),
    "callees that are not names keep their code as name": (
        """\
        out = self.layers[i](x).view(-1)
        """,
        f"""\
        {IMPORT}; out = DETECTOR.hook_func(DETECTOR.hook_func(self.layers[i], 'self.layers[i]', """
        """0, x).view, 'self.layers[i](x).view', 0, -1)
        """,
    ),
    "left alone: __init__, decorators, f-strings, loggers, the standard library, TorchScript": (
        """\
        import os
        import torch


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(2, 2)

            @torch.no_grad()
            def forward(self, x):
                logger.info(f"{x.size()}")
                os.makedirs(os.path.join("a", "b"))
                Base.__init__(self)
                return self.fc(x)


        @torch.jit.script
        def fused(x):
            return x.sigmoid()


        def helper(x):
            return x.relu()


        scripted = torch.jit.script(helper)
        """,
        f"""\
        {IMPORT}; import os
        import torch


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(2, 2)

            @torch.no_grad()
            def forward(self, x):
                logger.info(f"{{x.size()}}")
                os.makedirs(os.path.join("a", "b"))
                Base.__init__(self)
                return DETECTOR.hook_func(self.fc, 'self.fc', 0, x)


        @torch.jit.script
        def fused(x):
            return x.sigmoid()


        def helper(x):
            return x.relu()


        scripted = DETECTOR.hook_func(torch.jit.script, 'torch.jit.script', 0, helper)
        """,
    ),
    "nothing to record: the file stays as it is": (
        """\
        import os
        print(len(os.listdir(".")))
        """,
        """\
        import os
        print(len(os.listdir(".")))
        """,
    ),
}


@pytest.mark.parametrize("before, after", CASES.values(), ids=CASES.keys())
def test_instrumented_source(before, after):
    assert instrumented(before) == textwrap.dedent(after)


def test_a_file_opening_with_a_compound_statement_gains_one_line_and_says_where():
    result = instrument_source(b"#!/usr/bin/env python\n\ndef f(x):\n    return x.nonzero()\n")
    assert result.new_bytes == (
        b"#!/usr/bin/env python\n\n"
        + IMPORT.encode()
        + b"\ndef f(x):\n    return DETECTOR.hook_func(x.nonzero, 'x.nonzero', 0)\n"
    )
    assert (result.calls, result.added_line) == (1, 3)
    assert instrument_source(b"import torch\ntorch.ones(1)\n").added_line is None


def test_encoding_and_line_ends_are_kept():
    before = b"# -*- coding: latin-1 -*-\r\nimport torch\r\nx = torch.tensor([1])  # caf\xe9\r\n"
    assert instrument_source(before).new_bytes == (
        b"# -*- coding: latin-1 -*-\r\n"
        + IMPORT.encode()
        + b"; import torch\r\nx = DETECTOR.hook_func(torch.tensor, 'torch.tensor', 0, [1])  # caf\xe9\r\n"
    )


def test_instrumenting_an_instrumented_file_changes_nothing():
    source = (PROJECTS / "varlen" / "train.py").read_bytes()
    once = instrument_source(source)
    assert once.calls == 10 and once.new_bytes.count(b"\n") == source.count(b"\n")
    twice = instrument_source(once.new_bytes)
    assert (twice.new_bytes, twice.calls, [loop.found_by for loop in twice.loops]) == (None, 0, [BY_HAND])


def test_a_file_that_cannot_be_parsed_is_skipped_with_the_reason():
    result = instrument_source(b'print "python 2"\n')
    assert result.new_bytes is None
    assert result.skipped.startswith("cannot be parsed as Python 3 (") and result.skipped.endswith(
        "); copied unchanged"
    )


# -- the training loop ---------------------------------------------------------------------------

LOOPS = {
    "a DataLoader imported under another name, through enumerate": (
        """\
        from torch.utils.data import DataLoader as DL
        loader = DL(ds, batch_size=2)
        for i, (x, y) in enumerate(loader):
            pass
        """,
        [(3, "for i, (x, y) in enumerate(loader)", BY_DATALOADER, "loader")],
        "for i, (x, y) in DETECTOR.start(enumerate(loader)):",
    ),
    "an attribute assigned a DataLoader of a module alias, through tqdm": (
        """\
        import torch.utils.data as tud
        class Trainer:
            def setup(self):
                self.train_loader = tud.DataLoader(ds)
            def fit(self):
                for batch in tqdm(self.train_loader, desc="train"):
                    pass
        """,
        [(6, 'for batch in tqdm(self.train_loader, desc="train")', BY_DATALOADER, "self.train_loader")],
        """        for batch in DETECTOR.start(DETECTOR.hook_func(tqdm, 'tqdm', 0, self.train_loader, """
        """desc="train")):""",
    ),
    "a name bound to another loader name": (
        """\
        import torch
        loader = torch.utils.data.DataLoader(ds)
        train_data = loader
        for batch in train_data:
            pass
        """,
        [(4, "for batch in train_data", BY_DATALOADER, "train_data")],
        "for batch in DETECTOR.start(train_data):",
    ),
    "a DataLoader made in the loop header": (
        """\
        from torch.utils.data import DataLoader
        for batch in DataLoader(ds):
            pass
        """,
        [(2, "for batch in DataLoader(ds)", BY_DATALOADER, "DataLoader(...)")],
        "for batch in DETECTOR.start(DETECTOR.hook_func(DataLoader, 'torch.utils.data.DataLoader', 0, ds)):",
    ),
    "by name only when the file binds no DataLoader": (
        """\
        def train(model, train_loader, dataset):
            for x in dataset:
                pass
            for x, y in train_loader:
                pass
        """,
        [(4, "for x, y in train_loader", BY_NAME, "train_loader")],
        "    for x, y in DETECTOR.start(train_loader):",
    ),
    "a DataLoader loop wins over loops chosen by name": (
        """\
        from torch.utils.data import DataLoader
        loader = DataLoader(ds)
        for batch in loader:
            pass
        for batch in val_loader:
            pass
        """,
        [(3, "for batch in loader", BY_DATALOADER, "loader")],
        "for batch in DETECTOR.start(loader):",
    ),
    "wrapped by hand: reported, not wrapped again": (
        """\
        for batch in DETECTOR.start(loader):
            pass
        """,
        [(1, "for batch in DETECTOR.start(loader)", BY_HAND, "DETECTOR.start(loader)")],
        "for batch in DETECTOR.start(loader):",
    ),
    "no loader: ranges, datasets, another library's DataLoader, calls": (
        """\
        from mylib import DataLoader
        batches = DataLoader(ds)
        for epoch in range(3):
            for batch in batches:
                pass
            for x in dataset:
                pass
            for x in make_loader():
                pass
        """,
        [],
        "    for batch in batches:",
    ),
}


@pytest.mark.parametrize("code, loops, loop_line", LOOPS.values(), ids=LOOPS.keys())
def test_training_loop(code, loops, loop_line):
    result = instrument_source(textwrap.dedent(code).encode())
    assert [(loop.line, loop.header, loop.found_by, loop.loader) for loop in result.loops] == loops
    assert loop_line in instrumented(code).splitlines()


# -- the command on a project --------------------------------------------------------------------


def _project(tmp_path):
    """The varlen fixture plus what a real tree holds: a Python 2 file, binary data, links."""
    project = tmp_path / "proj"
    shutil.copytree(PROJECTS / "varlen", project)
    write(project / "legacy.py", 'print "python 2"\n')
    write(project / "data" / "blob.bin", bytes(range(256)), mode=0o640)
    write(project / "constants.py", "BATCH = 2\n")
    os.symlink("train.py", project / "latest.py")
    write(tmp_path / "elsewhere.txt", "x")
    os.symlink("../elsewhere.txt", project / "outside.txt")
    return project


def _changed_lines(before: bytes, after: bytes) -> dict:
    old, new = before.decode().splitlines(), after.decode().splitlines()
    assert len(old) == len(new)
    return {number: line for number, (was, line) in enumerate(zip(old, new), 1) if was != line}


def test_analyse_writes_an_instrumented_copy_and_the_runtime(tmp_path):
    project = _project(tmp_path)
    before = tree_files(project)
    result = run_cli(
        "analyse", "-i", "proj", "-o", "out", "-m", "dynamic_shape", "-v", "2.8.0", "-j", "1", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    dest = (tmp_path / "out" / "proj_analysis").resolve()
    assert result.stdout.splitlines() == [
        f"analysed proj -> {dest}",
        f"run a few batches of the instrumented copy: PYTHONPATH={dest} python {dest}/train.py",
        f"at exit it writes {dest}/msft_dynamic_shape_analysis_report.csv (only a header: no dynamic shapes)",
    ]
    assert tree_files(project) == before
    after = tree_files(dest)
    assert sorted(after) == sorted(
        [
            *before,
            "msft_dynamic_analysis/__init__.py",
            "msft_dynamic_analysis/hook.py",
            "msft_dynamic_analysis/added_lines.json",
            "pytorch_analysis.txt",
            "report.json",
        ]
    )
    for rel in ["README.md", "data/blob.bin", "legacy.py", "constants.py", "latest.py", "outside.txt"]:
        assert after[rel] == before[rel], rel
    assert (dest / "data" / "blob.bin").stat().st_mode & 0o777 == 0o640
    assert after["msft_dynamic_analysis/hook.py"] == (RUNTIME_DIR / "hook.py").read_bytes()
    assert json.loads(after["msft_dynamic_analysis/added_lines.json"]) == {"ops.py": 1}
    assert after["ops.py"].decode() == (
        f"{IMPORT}\n"
        "def positive_rows(x):\n"
        "    # the file opens with a def: its copy gains a line above it\n"
        "    return x[DETECTOR.hook_func(x.sum, 'x.sum', 0, dim=1) > 0]\n"
    )
    assert _changed_lines(before["train.py"], after["train.py"]) == {
        1: f'"""Variable-length batches: the shapes of some calls change from batch to batch."""; {IMPORT}',
        13: "        return DETECTOR.hook_func(torch.ones, 'torch.ones', 0, 2 + index, 3)  "
        "# runs while the next batch is fetched: not traced",
        17: "    mask = DETECTOR.hook_func(batch.sum, 'batch.sum', 0, dim=2) > 0",
        18: "    return DETECTOR.hook_func(positive_rows, 'ops.positive_rows', 0, batch[0]), "
        "DETECTOR.hook_func(torch.nonzero, 'torch.nonzero', 0, mask)",
        22: "    loader = DETECTOR.hook_func(DataLoader, 'torch.utils.data.DataLoader', 0, "
        "DETECTOR.hook_func(Lengths, 'Lengths', 0), batch_size=1)",
        23: "    weights = DETECTOR.hook_func(torch.ones, 'torch.ones', 0, 3, 4)",
        24: "    for batch in DETECTOR.start(loader):",
        25: "        rows, where = DETECTOR.hook_func(step, 'step', 0, batch)",
        26: "        out = DETECTOR.hook_func(torch.matmul, 'torch.matmul', 0, rows, weights)",
        27: "        scale = DETECTOR.hook_func(torch.ones, 'torch.ones', 0, 1)  "
        "# the same shape in every batch: not reported",
    }
    log = (dest / "pytorch_analysis.txt").read_text().splitlines()
    assert log[2].startswith("legacy.py: skipped: cannot be parsed as Python 3 (") and log[2].endswith(
        "); copied unchanged"
    )
    assert log[3:] == [
        "constants.py: no call to instrument; copied unchanged",
        "ops.py: 1 call(s) instrumented",
        "train.py: 10 call(s) instrumented",
        "train.py:24: wrapped 'for batch in loader' in DETECTOR.start",
        "outside.txt: symbolic link to ../elsewhere.txt, outside the input; "
        "recreated as a link, not migrated",
    ]
    summary = json.loads(after["report.json"])
    assert [entry["file"] for entry in summary["skipped_files"]] == ["legacy.py"]
    assert {
        key: summary[key]
        for key in [
            "report_rows",
            "python_files",
            "instrumented_files",
            "instrumented_calls",
            "wrapped_loops",
        ]
    } == {
        "report_rows": {},
        "python_files": 4,
        "instrumented_files": 2,
        "instrumented_calls": 11,
        "wrapped_loops": [
            {"file": "train.py", "line": 24, "loop": "for batch in loader", "found_by": "DataLoader"}
        ],
    }


def test_without_a_training_loop_the_log_and_the_hints_say_how_to_wrap_one(tmp_path):
    write(tmp_path / "proj" / "model.py", "import torch\n\ndef forward(x):\n    return x.relu()\n")
    result = run_cli("analyse", "-i", "proj", "-o", "out", "-m", "dynamic_shape", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    dest = (tmp_path / "out" / "proj_analysis").resolve()
    assert result.stdout.splitlines()[1:3] == [
        "no training loop was found: in the copy, wrap it by hand: for batch in DETECTOR.start(loader):",
        f"run a few batches of the instrumented copy: PYTHONPATH={dest} "
        "python <your training script in the copy>",
    ]
    assert (dest / "pytorch_analysis.txt").read_text().splitlines()[2:] == [
        "model.py: 1 call(s) instrumented",
        "no loop over a DataLoader found; "
        "wrap your training loop by hand: for batch in DETECTOR.start(loader):",
    ]


@pytest.mark.parametrize("name", ["msft_dynamic_analysis", "report.json", "pytorch_analysis.txt"])
def test_an_entry_the_copy_would_overwrite_is_a_usage_error(tmp_path, name):
    write(tmp_path / "proj" / "train.py", "import torch\ntorch.ones(1)\n")
    write(
        tmp_path / "proj" / name / "__init__.py"
        if name == "msft_dynamic_analysis"
        else tmp_path / "proj" / name,
        "",
    )
    result = run_cli("analyse", "-i", "proj", "-o", "out", "-m", "dynamic_shape", "-v", "2.8", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        2,
        (
            f"gpu2npu: error: input 'proj' has an entry named '{name}', "
            "which the dynamic_shape analysis writes into its copy; "
            "rename it, or analyse the original project rather than an instrumented copy\n"
        ),
    )
    assert not (tmp_path / "out" / "proj_analysis").exists()


# -- the runtime -----------------------------------------------------------------------------------


def _run_python(arguments, cwd, pythonpath, env=None):
    """This test environment's Python (the one with torch) with PYTHONPATH set, as a user runs the copy."""
    environment = {**os.environ, "PYTHONPATH": str(pythonpath), "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_runtime_without_torch_passes_calls_through_and_explains_at_the_first_batch(tmp_path):
    shutil.copytree(RUNTIME_DIR, tmp_path / "msft_dynamic_analysis")
    code = textwrap.dedent(
        """\
        import sys
        sys.modules["torch"] = None  # as if torch were not installed
        from msft_dynamic_analysis import DETECTOR
        print(DETECTOR.hook_func(dict, "dict", 0, name="n", func="f", self="s"))
        batches = DETECTOR.start([1, 2])
        print(DETECTOR.start(batches) is batches, len(batches))
        try:
            for batch in batches:
                pass
        except ImportError as exc:
            print(exc)
        """
    )
    result = _run_python(["-c", code], tmp_path, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "{'name': 'n', 'func': 'f', 'self': 's'}",
        "True 2",
        (
            "msft_dynamic_analysis records tensor shapes and needs PyTorch, "
            "but 'import torch' failed (import of torch halted; None in sys.modules); "
            "run the instrumented copy with the Python environment of your training"
        ),
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "msft_dynamic_analysis"
    ]  # no report without a batch


def _read_report(path):
    with open(path, newline="", encoding="utf-8") as stream:
        return list(csv.reader(stream))


def _analysed(tmp_path, source):
    result = run_cli("analyse", "-i", source, "-o", tmp_path / "out", "-m", "dynamic_shape", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    return (tmp_path / "out" / f"{source.stem if source.is_file() else source.name}_analysis").resolve()


def test_the_copy_reports_the_calls_whose_shapes_change_with_torch(tmp_path):
    require_torch()
    dest = _analysed(tmp_path, PROJECTS / "varlen")
    run = _run_python(["train.py"], dest, dest)
    assert (run.returncode, run.stdout) == (0, "done\n"), run.stderr
    report = dest / "msft_dynamic_shape_analysis_report.csv"
    assert (
        run.stderr
        == "msft_dynamic_analysis: 4 call site(s) with shapes that change between batches, in 3 batches; "
        f"report: {report}\n"
    )
    module, step = "<file train.py, line 25 in <module>>", "<file train.py, line 18 in step>"
    assert _read_report(report) == [
        HEADER,
        [
            "x.sum",
            "ops.py",
            "3",
            str([module, step, "<file ops.py, line 3 in positive_rows>"]),
            "[(2, 3)-(4, 3)]",
            "[(2,)-(4,)]",
        ],
        [
            "batch.sum",
            "train.py",
            "17",
            str([module, "<file train.py, line 17 in step>"]),
            "[(1, 2, 3)-(1, 4, 3)]",
            "[(1, 2)-(1, 4)]",
        ],
        ["torch.nonzero", "train.py", "18", str([module, step]), "[(1, 2)-(1, 4)]", "[(2, 2)-(4, 2)]"],
        [
            "torch.matmul",
            "train.py",
            "26",
            str(["<file train.py, line 26 in <module>>"]),
            "[(2, 3)-(4, 3), (3, 4)-(3, 4)]",
            "[(2, 4)-(4, 4)]",
        ],
    ]
    assert sorted(p.name for p in (PROJECTS / "varlen").iterdir()) == ["README.md", "ops.py", "train.py"]


def test_fixed_shapes_give_a_header_only_report_with_torch(tmp_path):
    require_torch()
    dest = _analysed(tmp_path, PROJECTS / "fixed" / "train.py")
    assert sorted(p.name for p in dest.iterdir()) == [
        "msft_dynamic_analysis",
        "pytorch_analysis.txt",
        "report.json",
        "train.py",
    ]
    run = _run_python(["train.py"], dest, dest)
    assert (run.returncode, run.stdout) == (0, "done\n"), run.stderr
    assert _read_report(dest / "msft_dynamic_shape_analysis_report.csv") == [HEADER]


def test_past_the_trace_limit_recording_stops_and_the_program_goes_on_with_torch(tmp_path):
    require_torch()
    shutil.copytree(RUNTIME_DIR, tmp_path / "msft_dynamic_analysis")
    code = textwrap.dedent(
        """\
        import torch
        from msft_dynamic_analysis import hook
        hook.MAX_TRACES = 2
        for size in hook.DETECTOR.start([1, 2, 3]):
            for number in range(3):
                hook.DETECTOR.hook_func(torch.zeros, "torch.zeros", number, size)
        print("still running")
        """
    )
    run = _run_python(["-c", code], tmp_path, tmp_path, env={"RANK": "1"})
    report = tmp_path / "msft_dynamic_shape_analysis_report_rank1.csv"
    assert (run.returncode, run.stdout) == (0, "still running\n")
    assert run.stderr.splitlines() == [
        "msft_dynamic_analysis: 2 traces recorded, the limit: recording stopped, the program goes on; "
        "the report covers the batches so far",
        "msft_dynamic_analysis: 0 call site(s) with shapes that change between batches, in 3 batches; "
        f"report: {report}",
    ]
    assert _read_report(report) == [HEADER]

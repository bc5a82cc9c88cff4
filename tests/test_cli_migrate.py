"""End-to-end tests of ``gpu2npu migrate`` through the installed command: layout, reports,
--diff, -v, user rules, --disable-rule, idempotence, -j determinism, the bundled example."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest
import yaml
from helpers import REPO, REPORT_FILES, run_cli, tree_files, write

NOTICE = "gpu2npu: target torch 2.8.0 (the newest; choose another with -v)"
CHANGE_HEADER = "File,Start Line,End Line,Operation Type,Message,Rule,File Kind,Cell"
SKIPPED_HEADER = "File,Reason,File Kind"
CHANGE_COLUMNS = CHANGE_HEADER.split(",")
RULE_FILE_HINT = "; fix the rule file (see 'Rule files' in README.md)"

A_PY = "import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"
A_PY_NPU = "import torch\nimport torch_npu\nx = torch.zeros(2).npu()\ntorch.npu.synchronize()\n"
A_ROWS = [
    "a.py,1,1,INSERT,insert import torch_npu,G2N001",
    "a.py,2,2,MODIFY,change function cuda to npu,G2N003",
    "a.py,3,3,MODIFY,change function torch.cuda.synchronize to torch_npu.npu.synchronize,G2N366",
]
DIST_PY = "import torch.distributed as dist\nb = dist.Backend.NCCL\n"
# constructs spanning several lines: rows give the original (1-based) lines of the construct
MULTI_PY = "import torch\n\n\ny = torch.cuda.set_device(\n    0,\n)\nz = torch.zeros(\n    2).cuda()\n"
MULTI_PY_NPU = (
    "import torch\nimport torch_npu\n\n\ny = torch.npu.set_device(\n    0,\n)\n"
    "z = torch.zeros(\n    2).npu()\n"
)
MULTI_ROWS = [
    "sub/b.py,1,1,INSERT,insert import torch_npu,G2N001",
    "sub/b.py,4,4,MODIFY,change function torch.cuda.set_device to torch_npu.npu.set_device,G2N358",
    "sub/b.py,7,8,MODIFY,change function cuda to npu,G2N003",
]


def csv_text(header: str, rows) -> str:
    """The CSV's text; change rows (given without them) are of Python files, in no notebook cell."""
    if header == CHANGE_HEADER:
        rows = [row + ",python," for row in rows]
    return "".join(line + "\n" for line in [header, *rows])


def reports(output: Path, name: str = "proj_msft") -> Path:
    return output / name / "transplant_result_file"


def stderr_lines(result):
    return result.stderr.splitlines()


def small_project(root: Path) -> Path:
    project = root / "proj"
    write(project / "a.py", A_PY)
    write(project / "d.py", DIST_PY)
    write(project / "sub" / "b.py", MULTI_PY)
    write(project / "notes.md", "# notes\n")
    return project


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """One default run (no -v) over small_project, shared by the report tests: (root, result)."""
    root = tmp_path_factory.mktemp("small")
    small_project(root)
    return root, run_cli("migrate", "-i", "proj", "-o", "out", "-j", "1", cwd=root)


# --- A, B: layout, exit code, reports ------------------------------------------------------


def test_directory_input_gives_name_msft_with_exact_change_rows(small_run):
    root, result = small_run
    assert result.returncode == 0, result.stderr
    assert stderr_lines(result) == [NOTICE]
    assert sorted(os.listdir(root / "out")) == ["proj_msft"]
    assert sorted(os.listdir(reports(root / "out"))) == REPORT_FILES
    assert (reports(root / "out") / "change_list.csv").read_bytes().decode() == csv_text(
        CHANGE_HEADER,
        A_ROWS
        + [
            "d.py,1,1,INSERT,insert import torch_npu,G2N001",
            "d.py,2,2,MODIFY,change name torch.distributed.Backend.NCCL to "
            "torch.distributed.Backend.HCCL,G2N013",
        ]
        + MULTI_ROWS,
    )
    assert (reports(root / "out") / "skipped_files.csv").read_bytes().decode() == csv_text(SKIPPED_HEADER, [])
    out = root / "out" / "proj_msft"
    assert (out / "a.py").read_text() == A_PY_NPU
    assert (
        out / "d.py"
    ).read_text() == "import torch.distributed as dist\nimport torch_npu\nb = dist.Backend.HCCL\n"
    assert (out / "sub" / "b.py").read_text() == MULTI_PY_NPU
    assert (out / "notes.md").read_text() == "# notes\n"


def test_stdout_has_summary_table_and_where_the_output_went(small_run):
    root, result = small_run
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()

    def count(label):
        found = [
            m
            for m in (re.fullmatch(rf"\|\s*{re.escape(label)}\s*\|\s*(\d+) \|", line) for line in lines)
            if m
        ]
        assert len(found) == 1, (label, result.stdout)
        return int(found[0].group(1))

    assert count("Python files scanned") == 3
    assert count("Python files changed") == 3
    assert count("other files read (shell, configs, notebooks, text...)") == 1  # notes.md
    assert count("other files copied") == 0
    assert count("changes (see change_list.csv)") == 8
    assert re.fullmatch(
        r"migrated proj -> out/proj_msft in \d+\.\d s; \d of 4 files from the cache", lines[-2]
    )
    assert lines[-1] == "reports: out/proj_msft/transplant_result_file"


def test_report_json_mirrors_change_list_and_has_summary(small_run):
    root, result = small_run
    assert result.returncode == 0, result.stderr
    rep = reports(root / "out")
    report = json.loads((rep / "report.json").read_text())
    csv_rows = (rep / "change_list.csv").read_text().splitlines()[1:]
    expected = []
    for row in csv_rows:
        file, start, end, operation, message, rule, kind, cell = row.split(",")  # no quoted commas here
        values = [file, int(start), int(end), operation, message, rule, kind, cell]
        expected.append(dict(zip(CHANGE_COLUMNS, values)))
    assert report["changes"] == expected
    assert len(expected) == 8
    summary = report["summary"]
    assert {
        k: summary[k]
        for k in (
            "python_files",
            "changed_files",
            "unchanged_files",
            "skipped_files",
            "other_kind_files",
            "other_files_copied",
            "changes",
        )
    } == {
        "python_files": 3,
        "changed_files": 3,
        "unchanged_files": 0,
        "skipped_files": 0,
        "other_kind_files": 1,  # notes.md, read for CUDA mentions
        "other_files_copied": 0,
        "changes": 8,
    }
    assert report["torch_version"] == "2.8.0"
    assert report["skipped"] == []


def test_log_file_lists_every_change(small_run):
    root, result = small_run
    assert result.returncode == 0, result.stderr
    log = (reports(root / "out") / "msFmkTranspltlog.txt").read_text().splitlines()
    assert "a.py: line 2 ~ 2 Operation Type: MODIFY Message: change function cuda to npu [G2N003]" in log
    assert "sub/b.py: line 7 ~ 8 Operation Type: MODIFY Message: change function cuda to npu [G2N003]" in log
    assert len([line for line in log if " Operation Type: " in line]) == 8


def test_dot_input_is_named_after_the_directory(tmp_path):
    write(tmp_path / "proj" / "a.py", A_PY)
    result = run_cli("migrate", "-i", ".", "-o", "../out", "-v", "2.8", "-j", "1", cwd=tmp_path / "proj")
    assert result.returncode == 0, result.stderr
    assert os.listdir(tmp_path / "out") == ["proj_msft"]
    assert (tmp_path / "out" / "proj_msft" / "a.py").read_text() == A_PY_NPU
    assert sorted(os.listdir(tmp_path / "proj")) == ["a.py"]


def test_single_file_input_gives_stem_msft_with_only_that_file(tmp_path):
    write(tmp_path / "src" / "train.py", A_PY)
    write(tmp_path / "src" / "other.py", A_PY)  # a sibling: not part of a single-file run
    write(tmp_path / "src" / "data.txt", "x\n")
    result = run_cli("migrate", "-i", "src/train.py", "-o", "out", "-j", "1", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert sorted(os.listdir(tmp_path / "out")) == ["train_msft"]
    files = tree_files(tmp_path / "out" / "train_msft")
    assert sorted(files) == ["train.py"] + [f"transplant_result_file/{name}" for name in REPORT_FILES]
    assert files["train.py"] == A_PY_NPU.encode()
    assert (reports(tmp_path / "out", "train_msft") / "change_list.csv").read_text() == csv_text(
        CHANGE_HEADER, [row.replace("a.py", "train.py", 1) for row in A_ROWS]
    )


# --- E: --diff ----------------------------------------------------------------------------------


def test_diff_prints_unified_diff_and_writes_nothing(tmp_path):
    write(tmp_path / "proj" / "train.py", A_PY)
    write(tmp_path / "proj" / "plain.py", "import os\nprint(os.sep)\n")
    write(tmp_path / "proj" / "sub" / "m.py", "import torch\ntorch.cuda.empty_cache()\n")
    result = run_cli("migrate", "-i", "proj", "-o", "out", "--diff", "-j", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "out").exists()
    assert result.stdout == (
        "--- a/sub/m.py\n"
        "+++ b/sub/m.py\n"
        "@@ -1,2 +1,3 @@\n"
        " import torch\n"
        "-torch.cuda.empty_cache()\n"
        "+import torch_npu\n"
        "+torch.npu.empty_cache()\n"
        "--- a/train.py\n"
        "+++ b/train.py\n"
        "@@ -1,3 +1,4 @@\n"
        " import torch\n"
        "-x = torch.zeros(2).cuda()\n"
        "-torch.cuda.synchronize()\n"
        "+import torch_npu\n"
        "+x = torch.zeros(2).npu()\n"
        "+torch.npu.synchronize()\n"
    )
    assert stderr_lines(result)[0] == NOTICE


def test_diff_of_single_file_input(tmp_path):
    write(tmp_path / "train.py", A_PY)
    result = run_cli("migrate", "-i", "train.py", "-o", "out", "--diff", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:3] == ["--- a/train.py", "+++ b/train.py", "@@ -1,3 +1,4 @@"]
    assert [
        line for line in result.stdout.splitlines() if line[:1] in "+-" and line[:3] not in ("---", "+++")
    ] == [
        "-x = torch.zeros(2).cuda()",
        "-torch.cuda.synchronize()",
        "+import torch_npu",
        "+x = torch.zeros(2).npu()",
        "+torch.npu.synchronize()",
    ]
    assert not (tmp_path / "out").exists()


# --- F: -v ----------------------------------------------------------------------------------------


def test_default_version_is_announced_on_stderr(small_run):
    root, result = small_run
    assert result.returncode == 0
    assert stderr_lines(result) == [NOTICE]
    assert json.loads((reports(root / "out") / "report.json").read_text())["torch_version"] == "2.8.0"


def test_short_version_is_accepted_as_full_version(tmp_path):
    write(tmp_path / "proj" / "a.py", A_PY)
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-v", "2.1", "-j", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    rep = reports(tmp_path / "out")
    assert json.loads((rep / "report.json").read_text())["torch_version"] == "2.1.0"
    assert (rep / "msFmkTranspltlog.txt").read_text().splitlines()[0].endswith("input proj, torch 2.1.0")


@pytest.mark.parametrize(
    "version, line, row",
    [
        (
            "2.8.0",
            "b = dist.Backend.HCCL",
            "d.py,2,2,MODIFY,change name torch.distributed.Backend.NCCL to "
            "torch.distributed.Backend.HCCL,G2N013",
        ),
        (
            "1.11.0",
            "b = torch_npu.distributed.Backend.HCCL",
            "d.py,2,2,MODIFY,change name torch.distributed.Backend.NCCL to "
            "torch_npu.distributed.Backend.HCCL,G2N014",
        ),
    ],
    ids=["2.8.0", "1.11.0"],
)
def test_rewrite_depends_on_target_version(tmp_path, version, line, row):
    write(tmp_path / "proj" / "d.py", DIST_PY)
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-v", version, "-j", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        tmp_path / "out" / "proj_msft" / "d.py"
    ).read_text() == f"import torch.distributed as dist\nimport torch_npu\n{line}\n"
    assert (reports(tmp_path / "out") / "change_list.csv").read_text() == csv_text(
        CHANGE_HEADER, ["d.py,1,1,INSERT,insert import torch_npu,G2N001", row]
    )


# --- G: user rules, --disable-rule ------------------------------------------------------------

USER_RULES = {
    "rules": {
        "FuncNameModifyRule": [{"old_name": "mylib.gpu_op", "new_name": "mylib.npu_op"}],
        "ArgsModifyRule": [{"func_name": "mylib.launch", "arg_idx": 0, "arg_new": "'npu'"}],
        "ModuleNameModifyRule": [{"old_name": "gpu", "new_name": "npu", "parent_module": "mylib"}],
    }
}
MYLIB_PY = "import mylib\ny = mylib.gpu_op(1)\nmylib.launch(0, 2)\nz = mylib.gpu.thing()\n"
MYLIB_PY_NPU = "import mylib\ny = mylib.npu_op(1)\nmylib.launch('npu', 2)\nz = mylib.npu.thing()\n"


def user_rule_rows(name):
    return [
        f"m.py,2,2,MODIFY,change function mylib.gpu_op to mylib.npu_op,{name}:FuncNameModifyRule[0]",
        "m.py,3,3,MODIFY,change the arg at position 0 of function mylib.launch "
        f"to 'npu',{name}:ArgsModifyRule[0]",
        f"m.py,4,4,MODIFY,change function mylib.gpu.thing to mylib.npu.thing,{name}:ModuleNameModifyRule[0]",
    ]


@pytest.mark.parametrize("name", ["mine.json", "mine.yaml"])
def test_user_rule_file_applies(tmp_path, name):
    text = json.dumps(USER_RULES) if name.endswith(".json") else yaml.safe_dump(USER_RULES)
    write(tmp_path / name, text)
    write(tmp_path / "proj" / "m.py", MYLIB_PY)
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-r", name, "-v", "2.8", "-j", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "proj_msft" / "m.py").read_text() == MYLIB_PY_NPU
    assert (reports(tmp_path / "out") / "change_list.csv").read_text() == csv_text(
        CHANGE_HEADER, user_rule_rows(name)
    )
    assert json.loads((reports(tmp_path / "out") / "report.json").read_text())["rule_files"] == [name]


def test_without_the_rule_file_the_user_calls_stay(tmp_path):
    write(tmp_path / "proj" / "m.py", MYLIB_PY)
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-v", "2.8", "-j", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "proj_msft" / "m.py").read_bytes() == MYLIB_PY.encode()
    assert (reports(tmp_path / "out") / "change_list.csv").read_text() == CHANGE_HEADER + "\n"


@pytest.mark.parametrize(
    "name, content, expected_start, expected_full",
    [
        (
            "bad.json",
            '{"rules": {"NoSuchRule": [{}]}}',
            "gpu2npu: error: bad.json: rules.NoSuchRule: unknown rule kind",
            False,
        ),
        (
            "bad.json",
            '{"rules": {"FuncNameModifyRule": [{"old_name": "mylib.gpu_op"}]}}',
            "gpu2npu: error: bad.json: rules.FuncNameModifyRule[0]: missing required field 'new_name'",
            False,
        ),
        (
            "bad.json",
            '{"rules": {"FuncNameModifyRule": [{"old_name": "a.b", "new_name": "a.c"}, '
            '{"old_name": "a.d", "new_name": 5}]}}',
            "gpu2npu: error: bad.json: rules.FuncNameModifyRule[1].new_name: must be ",
            False,
        ),
        (
            "bad.json",
            '{"rules": {"ArgsModifyRule": [{"func_name": "mylib.launch", '
            '"arg_idx": "zero", "arg_new": "1"}]}}',
            "gpu2npu: error: bad.json: rules.ArgsModifyRule[0].arg_idx: must be an integer, not 'zero'"
            + RULE_FILE_HINT,
            True,
        ),
        ("bad.json", '{"rules": {\n', "gpu2npu: error: bad.json: line 2: invalid JSON: ", False),
        (
            "bad.yaml",
            "rules:\n  FuncNameModifyRule:\n    - old_name: [1\n",
            "gpu2npu: error: bad.yaml: line 4: invalid YAML: ",
            False,
        ),
        (
            "bad.yaml",
            "rules:\n  FuncNameModifyRule:\n    - old_name: a.b\n      new_name: a.c\n      colour: red\n",
            "gpu2npu: error: bad.yaml: rules.FuncNameModifyRule[0]: unknown field 'colour'",
            False,
        ),
    ],
    ids=[
        "unknown-kind",
        "missing-field",
        "wrong-type-second-entry",
        "wrong-type-int",
        "invalid-json",
        "invalid-yaml",
        "unknown-field",
    ],
)
def test_bad_rule_file_is_one_error_line_and_creates_nothing(
    tmp_path, name, content, expected_start, expected_full
):
    write(tmp_path / name, content)
    write(tmp_path / "proj" / "m.py", MYLIB_PY)
    (tmp_path / "out").mkdir()
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-r", name, "-v", "2.8", "-j", "1", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = stderr_lines(result)
    assert len(lines) == 1, result.stderr
    if expected_full:
        assert lines[0] == expected_start
    else:
        assert lines[0].startswith(expected_start), lines[0]
        assert lines[0].endswith(RULE_FILE_HINT), lines[0]
    assert os.listdir(tmp_path / "out") == []


def test_missing_rule_file_is_an_error(tmp_path):
    write(tmp_path / "proj" / "m.py", MYLIB_PY)
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-r", "absent.json", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 2
    assert stderr_lines(result) == ["gpu2npu: error: absent.json: file not found" + RULE_FILE_HINT]
    assert not (tmp_path / "out").exists()


def test_disable_rule_keeps_cuda_method(tmp_path):
    write(tmp_path / "proj" / "a.py", A_PY)
    result = run_cli(
        "migrate", "-i", "proj", "-o", "out", "--disable-rule", "G2N003", "-v", "2.8", "-j", "1", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "proj_msft" / "a.py").read_text() == (
        "import torch\nimport torch_npu\nx = torch.zeros(2).cuda()\ntorch.npu.synchronize()\n"
    )
    assert (reports(tmp_path / "out") / "change_list.csv").read_text() == csv_text(
        CHANGE_HEADER, [A_ROWS[0], A_ROWS[2]]
    )
    assert json.loads((reports(tmp_path / "out") / "report.json").read_text())["disabled_rules"] == ["G2N003"]


def test_disable_user_rule_by_its_id(tmp_path):
    write(tmp_path / "mine.json", json.dumps(USER_RULES))
    write(tmp_path / "proj" / "m.py", MYLIB_PY)
    result = run_cli(
        "migrate",
        "-i",
        "proj",
        "-o",
        "out",
        "-r",
        "mine.json",
        "--disable-rule",
        "mine.json:FuncNameModifyRule[0]",
        "-v",
        "2.8",
        "-j",
        "1",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "proj_msft" / "m.py").read_text() == MYLIB_PY_NPU.replace(
        "mylib.npu_op", "mylib.gpu_op"
    )


def test_disable_unknown_rule_id_is_an_error(tmp_path):
    write(tmp_path / "proj" / "a.py", A_PY)
    result = run_cli(
        "migrate", "-i", "proj", "-o", "out", "--disable-rule", "G2N999", "-v", "2.8", cwd=tmp_path
    )
    assert result.returncode == 2
    lines = stderr_lines(result)
    assert len(lines) == 1
    assert lines[0].startswith("gpu2npu: error: --disable-rule names unknown rule id(s) G2N999"), lines[0]
    assert not (tmp_path / "out").exists()


# --- H: idempotence, determinism ---------------------------------------------------------------

TEMPLATES = {
    "step": (
        "import torch\nimport torch.distributed as dist\n\n\n"
        "def step_{n}(model, batch):\n"
        '    device = torch.device("cuda:{k}")\n'
        "    model = model.to(device)\n"
        "    x = batch.cuda(non_blocking=True)\n"
        "    with torch.cuda.amp.autocast():\n"
        "        y = model(x)\n"
        "    torch.cuda.synchronize()\n"
        "    return y\n"
    ),
    "setup": (
        "import os\nimport torch\nimport torch.distributed as dist\n\n\n"
        "def setup_{n}(rank):\n"
        '    os.environ["CUDA_VISIBLE_DEVICES"] = "{k}"\n'
        "    torch.cuda.set_device(rank)\n"
        '    dist.init_process_group(backend="nccl")\n'
        "    return dist.Backend.NCCL\n"
    ),
    "amp": (
        "from torch.cuda.amp import GradScaler\nimport torch\n\n"
        "scaler_{n} = GradScaler()\n"
        "mem_{n} = torch.cuda.max_memory_allocated({k})\n"
        "t_{n} = torch.ones(3, device={k}).to(0)\n"
    ),
    "plain": "import os\n\n\ndef helper_{n}():\n    return os.path.join('data', '{n}')\n",
}


def generated_project(root: Path, count: int = 40) -> Path:
    project = root / "big"
    names = sorted(TEMPLATES)
    for n in range(count):
        kind = names[n % len(names)]
        folder = project / f"pkg{n % 5}" / ("deep" if n % 7 == 0 else "")
        write(folder / f"{kind}_{n:02d}.py", TEMPLATES[kind].format(n=n, k=n % 8))
        if n % 6 == 0:
            write(folder / f"conf_{n}.yaml", f"lr: 0.{n}\n")
    write(project / "run.sh", "#!/bin/sh\npython pkg0/step_00.py\n", mode=0o755)
    return project


def test_second_migration_changes_nothing(tmp_path):
    generated_project(tmp_path, count=12)
    first = run_cli("migrate", "-i", "big", "-o", "out1", "-v", "2.8", "-j", "1", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert len((reports(tmp_path / "out1", "big_msft") / "change_list.csv").read_text().splitlines()) > 30
    second = run_cli("migrate", "-i", "out1/big_msft", "-o", "out2", "-v", "2.8", "-j", "1", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert (
        reports(tmp_path / "out2", "big_msft_msft") / "change_list.csv"
    ).read_text() == CHANGE_HEADER + "\n"
    once = tree_files(tmp_path / "out1" / "big_msft")
    twice = tree_files(tmp_path / "out2" / "big_msft_msft")
    python_once = {rel: data for rel, data in once.items() if rel.endswith(".py")}
    python_twice = {rel: data for rel, data in twice.items() if rel.endswith(".py")}
    assert python_twice == python_once
    assert len(python_once) == 12


def _modes(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): stat.S_IMODE(p.lstat().st_mode) for p in sorted(root.rglob("*"))}


def test_one_and_two_jobs_give_identical_trees(tmp_path):
    generated_project(tmp_path, count=40)  # >= 24 Python files, so -j 2 really uses a process pool
    one = run_cli("migrate", "-i", "big", "-o", "j1", "-v", "2.8", "-j", "1", cwd=tmp_path)
    two = run_cli("migrate", "-i", "big", "-o", "j2", "-v", "2.8", "-j", "2", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    assert os.listdir(tmp_path / "j1") == ["big_msft"]
    assert os.listdir(tmp_path / "j2") == ["big_msft"]
    tree_one = tree_files(tmp_path / "j1" / "big_msft")
    tree_two = tree_files(tmp_path / "j2" / "big_msft")
    assert tree_one == tree_two
    assert _modes(tmp_path / "j1" / "big_msft") == _modes(tmp_path / "j2" / "big_msft")
    assert len([rel for rel in tree_one if rel.endswith(".py")]) == 40
    changes = tree_one["transplant_result_file/change_list.csv"].decode().splitlines()
    assert len(changes) - 1 == 10 * 5 + 10 * 5 + 10 * 5  # amp, setup, step files: five changes each
    assert changes[1:] == sorted(changes[1:], key=lambda row: (row.split(",")[0], int(row.split(",")[1])))


# --- I: the bundled example ------------------------------------------------------------------


def _snapshot(root: Path) -> dict:
    return {rel: (data, stat.S_IMODE((root / rel).lstat().st_mode)) for rel, data in tree_files(root).items()}


def test_bundled_example_output_compiles(tmp_path):
    example_rel = Path("examples") / "cifar_resnet"
    example = REPO / example_rel
    before = _snapshot(example)
    result = run_cli("migrate", "-i", example_rel.as_posix(), "-o", tmp_path / "out", "-v", "2.8", cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert _snapshot(example) == before
    out = tmp_path / "out" / "cifar_resnet_msft"
    legacy = "extensions/legacy_py2.py"
    python = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.py"))
    assert legacy in python and len(python) >= 5
    for rel in python:
        if rel == legacy:
            continue
        compile((out / rel).read_bytes(), rel, "exec", dont_inherit=True)
    assert (out / legacy).read_bytes() == (example / legacy).read_bytes()
    skipped = (reports(tmp_path / "out", "cifar_resnet_msft") / "skipped_files.csv").read_text().splitlines()
    assert skipped[0] == SKIPPED_HEADER
    assert [row.split(",", 1)[0] for row in skipped[1:]] == [legacy]
    assert skipped[1].startswith(f"{legacy},cannot be parsed as Python 3 (")
    expected = REPO / "examples" / "expected" / "cifar_resnet_msft"  # launch.sh and config.yaml migrated
    for rel, (_, mode) in before.items():
        if not rel.endswith(".py"):
            assert (out / rel).read_bytes() == (expected / rel).read_bytes(), rel
            assert stat.S_IMODE((out / rel).stat().st_mode) == mode, rel
    assert (out / "README.md").read_bytes() == (example / "README.md").read_bytes()
    assert stat.S_IMODE((out / "launch.sh").stat().st_mode) == 0o755


# --- command usage (cli.py: exit 2 for usage errors) ------------------------------------------


def test_migrate_help_exits_zero():
    result = run_cli("migrate", "--help")
    assert result.returncode == 0
    assert "-i, --input" in result.stdout
    assert result.stderr == ""


def test_missing_output_option_is_a_usage_error(tmp_path):
    write(tmp_path / "proj" / "a.py", A_PY)
    result = run_cli("migrate", "-i", "proj", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 2
    assert "internal error" not in result.stderr


def test_unknown_option_is_a_usage_error(tmp_path):
    write(tmp_path / "proj" / "a.py", A_PY)
    result = run_cli("migrate", "-i", "proj", "-o", "out", "--no-such-flag", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 2
    assert "internal error" not in result.stderr
    assert not (tmp_path / "out").exists()

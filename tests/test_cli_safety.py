"""End-to-end safety tests of ``gpu2npu migrate``: the input is never touched, refused runs
create nothing, an existing output is replaced only with --force, nothing is left behind."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest
import yaml
from helpers import REPO, run_cli, tree_files, write

NOTICE = "gpu2npu: target torch 2.8.0 (the newest; choose another with -v)"
A_PY = "import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"


def snapshot(root: Path) -> dict:
    """Everything observable about a tree: kind, mode, mtime and content hash (links: target)."""

    def entry(path: Path):
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            return ("link", os.readlink(path))
        if stat.S_ISDIR(st.st_mode):
            return ("dir", stat.S_IMODE(st.st_mode), st.st_mtime_ns)
        return (
            "file",
            stat.S_IMODE(st.st_mode),
            st.st_mtime_ns,
            hashlib.sha256(path.read_bytes()).hexdigest(),
        )

    state = {".": entry(root)}
    for directory, dirs, files in os.walk(root):  # does not follow links
        for name in dirs + files:
            path = Path(directory) / name
            state[path.relative_to(root).as_posix()] = entry(path)
    return state


def project(root: Path) -> Path:
    proj = root / "proj"
    write(proj / "train.py", A_PY, mode=0o755)
    write(proj / "pkg" / "__init__.py", "")
    write(proj / "pkg" / "model.py", "import torch\nm = torch.nn.Linear(2, 2).cuda()\n")
    write(proj / "pkg" / "plain.py", "import os\nprint(os.sep)\n")
    write(proj / "run.sh", "#!/bin/sh\npython train.py\n", mode=0o755)
    write(proj / "data.bin", bytes(range(256)), mode=0o640)
    write(proj / "old.py", 'print "py2"\n')
    os.symlink("train.py", proj / "main.py")
    os.symlink("pkg", proj / "pkg_link")
    return proj


def stderr_lines(result):
    return result.stderr.splitlines()


def error_lines(result):
    return [line for line in stderr_lines(result) if line.startswith("gpu2npu: error:")]


# --- the input is never modified ------------------------------------------------------------


def test_input_tree_is_identical_after_run_force_and_diff(tmp_path):
    proj = project(tmp_path)
    before = snapshot(proj)
    assert len(before) == 11
    for extra in ([], ["--force"], ["--diff"]):
        result = run_cli("migrate", "-i", "proj", "-o", "out", "-v", "2.8", "-j", "1", *extra, cwd=tmp_path)
        assert result.returncode == 0, (extra, result.stderr)
        assert snapshot(proj) == before, extra
    assert (tmp_path / "out" / "proj_msft" / "train.py").read_bytes() != (proj / "train.py").read_bytes()


def test_single_file_input_leaves_its_directory_unchanged(tmp_path):
    proj = project(tmp_path)
    before = snapshot(proj)
    result = run_cli("migrate", "-i", "proj/train.py", "-o", "out", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert snapshot(proj) == before
    assert os.listdir(tmp_path / "out") == ["train_msft"]


# --- refused runs ------------------------------------------------------------------------------


@pytest.mark.parametrize("output", ["proj/out", "proj", "proj/pkg", "alias"])
def test_output_inside_input_is_refused_and_creates_nothing(tmp_path, output):
    proj = project(tmp_path)
    os.symlink("proj/pkg", tmp_path / "alias")  # an output reached through a link is inside too
    before = snapshot(tmp_path)
    result = run_cli("migrate", "-i", "proj", "-o", output, "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert stderr_lines(result) == [
        f"gpu2npu: error: output '{output}' is inside the input 'proj'; choose an output outside the input"
    ]
    assert snapshot(tmp_path) == before
    assert proj.is_dir()


def test_input_inside_the_destination_is_refused_even_with_force(tmp_path):
    # -i out/proj_msft/proj -o out would replace out/proj_msft, which holds the input itself
    inner = write(tmp_path / "out" / "proj_msft" / "proj" / "a.py", A_PY).parent
    before = snapshot(tmp_path / "out")
    result = run_cli("migrate", "-i", "out/proj_msft/proj", "-o", "out", "--force", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 2
    lines = stderr_lines(result)
    assert len(lines) == 1
    assert lines[0].startswith("gpu2npu: error: input 'out/proj_msft/proj' is inside the output "), lines[0]
    assert snapshot(tmp_path / "out") == before
    assert (inner / "a.py").read_text() == A_PY


def test_existing_output_without_force_is_refused_and_untouched(tmp_path):
    project(tmp_path)
    write(tmp_path / "out" / "proj_msft" / "stale.txt", "old\n")
    write(tmp_path / "out" / "proj_msft" / "train.py", "# an earlier result\n")
    before = snapshot(tmp_path / "out")
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    destination = (tmp_path / "out").resolve() / "proj_msft"
    assert stderr_lines(result) == [
        f"gpu2npu: error: output '{destination}' already exists; pass --force to replace it"
    ]
    assert snapshot(tmp_path / "out") == before


def test_existing_output_is_refused_without_prompting_even_if_stdin_says_yes(tmp_path):
    project(tmp_path)
    write(tmp_path / "out" / "proj_msft" / "stale.txt", "old\n")
    before = snapshot(tmp_path / "out")
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-v", "2.8", cwd=tmp_path, input_text="y\ny\n")
    assert result.returncode == 2
    assert len(error_lines(result)) == 1 and error_lines(result)[0].endswith(
        "already exists; pass --force to replace it"
    )
    assert snapshot(tmp_path / "out") == before


def test_run_with_empty_stdin_does_not_prompt(tmp_path):
    project(tmp_path)
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-j", "1", cwd=tmp_path, input_text="")
    assert result.returncode == 0, result.stderr
    assert stderr_lines(result) == [NOTICE]
    assert result.stdout.splitlines()[-1] == "reports: out/proj_msft/transplant_result_file"


def test_force_replaces_the_old_output(tmp_path):
    project(tmp_path)
    write(tmp_path / "out" / "proj_msft" / "stale.txt", "old\n")
    write(tmp_path / "out" / "proj_msft" / "deep" / "stale.py", "old = 1\n")
    write(tmp_path / "out" / "keep.txt", "a sibling of the output\n")
    result = run_cli("migrate", "-i", "proj", "-o", "out", "--force", "-v", "2.8", "-j", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    fresh = run_cli("migrate", "-i", "proj", "-o", "fresh", "-v", "2.8", "-j", "1", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    replaced = tree_files(tmp_path / "out" / "proj_msft")
    assert "stale.txt" not in replaced and "deep/stale.py" not in replaced
    assert replaced == tree_files(tmp_path / "fresh" / "proj_msft")
    assert sorted(os.listdir(tmp_path / "out")) == ["keep.txt", "proj_msft"]
    assert (tmp_path / "out" / "keep.txt").read_text() == "a sibling of the output\n"


def test_force_replaces_an_output_that_is_a_link_without_touching_its_target(tmp_path):
    proj = project(tmp_path)
    (tmp_path / "out").mkdir()
    os.symlink("../proj", tmp_path / "out" / "proj_msft")  # points at the input itself
    before = snapshot(proj)
    refused = run_cli("migrate", "-i", "proj", "-o", "out", "-v", "2.8", cwd=tmp_path)
    assert refused.returncode == 2
    assert error_lines(refused)[0].endswith("already exists; pass --force to replace it")
    result = run_cli("migrate", "-i", "proj", "-o", "out", "--force", "-v", "2.8", "-j", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert snapshot(proj) == before
    destination = tmp_path / "out" / "proj_msft"
    assert destination.is_dir() and not destination.is_symlink()
    assert (destination / "transplant_result_file" / "change_list.csv").is_file()


def test_force_replaces_an_output_that_is_a_file(tmp_path):
    project(tmp_path)
    write(tmp_path / "out" / "proj_msft", "not a directory\n")
    result = run_cli("migrate", "-i", "proj", "-o", "out", "--force", "-v", "2.8", "-j", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "proj_msft" / "run.sh").read_text() == "#!/bin/sh\npython train.py\n"
    assert os.listdir(tmp_path / "out") == ["proj_msft"]


def test_diff_ignores_an_existing_output_and_leaves_it_alone(tmp_path):
    project(tmp_path)
    write(tmp_path / "out" / "proj_msft" / "stale.txt", "old\n")
    before = snapshot(tmp_path / "out")
    result = run_cli("migrate", "-i", "proj", "-o", "out", "--diff", "-v", "2.8", "-j", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "+++ b/train.py" in result.stdout.splitlines()
    assert snapshot(tmp_path / "out") == before


def test_missing_input_is_one_error_line(tmp_path):
    result = run_cli("migrate", "-i", "nope", "-o", "out", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert stderr_lines(result) == [
        "gpu2npu: error: input 'nope' does not exist; pass an existing directory or .py file with -i"
    ]
    assert os.listdir(tmp_path) == []


def test_missing_input_without_version_flag_still_has_one_error_line(tmp_path):
    result = run_cli("migrate", "-i", "nope", "-o", "out", cwd=tmp_path)
    assert result.returncode == 2
    assert error_lines(result) == [
        "gpu2npu: error: input 'nope' does not exist; pass an existing directory or .py file with -i"
    ]
    assert "Traceback" not in result.stderr
    assert os.listdir(tmp_path) == []


def test_text_file_input_is_refused(tmp_path):
    write(tmp_path / "notes.txt", "import torch\n")
    result = run_cli("migrate", "-i", "notes.txt", "-o", "out", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 2
    assert stderr_lines(result) == [
        "gpu2npu: error: input 'notes.txt' is neither a directory nor a file gpu2npu migrates; "
        "pass a directory, or a Python file, notebook, shell script, Dockerfile, config or requirements file"
    ]
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]


def test_output_that_is_a_file_is_refused(tmp_path):
    project(tmp_path)
    write(tmp_path / "out", "a file\n")
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-v", "2.8", cwd=tmp_path)
    assert result.returncode == 2
    assert stderr_lines(result) == [
        "gpu2npu: error: output 'out' is not a directory; pass a directory (it is created if missing)"
    ]
    assert (tmp_path / "out").read_text() == "a file\n"


@pytest.mark.parametrize("version", ["3.0", "abc"])
def test_unknown_version_lists_the_known_ones(tmp_path, version):
    project(tmp_path)
    known = [
        str(v) for v in yaml.safe_load((REPO / "src" / "gpu2npu" / "versions.yaml").read_text())["versions"]
    ]
    assert "2.8.0" in known and "1.11.0" in known
    result = run_cli("migrate", "-i", "proj", "-o", "out", "-v", version, cwd=tmp_path)
    assert result.returncode == 2
    assert stderr_lines(result) == [
        f"gpu2npu: error: unknown torch version '{version}'; choose one of {', '.join(known)}"
    ]
    assert not (tmp_path / "out").exists()


# --- failing runs create nothing; no leftovers --------------------------------------------


def test_failing_run_creates_nothing_in_output(tmp_path):
    project(tmp_path)
    write(tmp_path / "bad.json", '{"rules": {"FuncNameModifyRule": [{"old_name": "x.y"}]}}')
    (tmp_path / "empty_out").mkdir()
    for output in ("empty_out", "new_out"):
        result = run_cli("migrate", "-i", "proj", "-o", output, "-r", "bad.json", "-v", "2.8", cwd=tmp_path)
        assert result.returncode == 2
        assert len(stderr_lines(result)) == 1
        assert stderr_lines(result)[0].startswith("gpu2npu: error: bad.json: rules.FuncNameModifyRule[0]: ")
    assert os.listdir(tmp_path / "empty_out") == []
    assert not (tmp_path / "new_out").exists()


def test_failing_force_run_keeps_the_old_output(tmp_path):
    project(tmp_path)
    write(tmp_path / "bad.json", '{"rules": {"NoSuchKind": []}}')
    first = run_cli("migrate", "-i", "proj", "-o", "out", "-v", "2.8", "-j", "1", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = snapshot(tmp_path / "out")
    for flags in (["-r", "bad.json", "-v", "2.8"], ["--disable-rule", "G2N999", "-v", "2.8"], ["-v", "0.1"]):
        result = run_cli("migrate", "-i", "proj", "-o", "out", "--force", *flags, cwd=tmp_path)
        assert result.returncode == 2, flags
        assert len(error_lines(result)) == 1, (flags, result.stderr)
        assert snapshot(tmp_path / "out") == before, flags


def test_output_holds_only_the_result_after_a_run(tmp_path):
    proj = project(tmp_path)
    for n in range(30):  # enough Python files for -j 2 to use worker processes
        write(proj / "many" / f"m{n:02d}.py", f"import torch\nt{n} = torch.ones({n}).cuda()\n")
    for extra in ([], ["--force"]):
        result = run_cli("migrate", "-i", "proj", "-o", "out", "-v", "2.8", "-j", "2", *extra, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert os.listdir(tmp_path / "out") == ["proj_msft"]
    hidden = [p for p in (tmp_path / "out").rglob(".*")]
    assert hidden == []
    assert sorted(os.listdir(tmp_path)) == ["out", "proj"]

"""Hostile input through the installed CLI: file names that are not UTF-8, links named like the
report folder or in a loop, and files nested too deeply for a parser. Every command ends with a
normal exit code, reports what it did with such a path, and leaves the input as it was."""

import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from helpers import as_unprivileged_user, gpu2npu_command, run_cli

from gpu2npu.project.parallel import run_jobs
from gpu2npu.source.parse import MAX_DEPTH

CUDA_FILE = b"import torch\nx = torch.zeros(1).cuda()\n"
BAD_NAME = os.fsdecode(b"b\xff.py")  # not UTF-8: held as a surrogate escape
TIMEOUT = 60


def cli(*args):
    return run_cli(*args, timeout=TIMEOUT)


def tree_hash(root: Path) -> str:
    """Names, link targets and contents of everything under root (links not followed)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*"), key=lambda p: os.fsencode(str(p))):
        digest.update(os.fsencode(str(path.relative_to(root))))
        if path.is_symlink():
            digest.update(b"->" + os.fsencode(os.readlink(path)))
        elif path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def skipped_rows(tree: Path):
    """(file, reason) of skipped_files.csv; every file listed is Python, or no file (a path noted)."""
    with open(tree / "transplant_result_file" / "skipped_files.csv", newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    assert table[0] == ["File", "Reason", "File Kind"]
    assert all(row[2] in ("python", "") for row in table[1:]), table
    return [row[:2] for row in table[1:]]


@pytest.fixture
def hostile(tmp_path):
    """A project with a non-UTF-8 name, a loop of links, a link named like the report folder
    (pointing at a folder outside the input), and files nested beyond the limits."""
    root = tmp_path / "proj"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_bytes(CUDA_FILE)
    (root / BAD_NAME).write_bytes(CUDA_FILE)
    os.symlink("l2", root / "sub" / "l1")
    os.symlink("l1", root / "sub" / "l2")
    (tmp_path / "elsewhere").mkdir()
    os.symlink("../elsewhere", root / "transplant_result_file")
    (root / "brackets.py").write_text(
        "import torch\nx = " + "[" * 300 + "]" * 300 + "\ny = torch.zeros(1).cuda()\n"
    )
    (root / "chain.py").write_text("import torch\nx = 1" + "+1" * 2000 + "\ny = torch.zeros(1).cuda()\n")
    return root


EXPECTED_NOTES = [
    ["brackets.py", "brackets nested deeper than 200 levels, the limit of Python's parser; copied unchanged"],
    ["chain.py", f"nesting deeper than {MAX_DEPTH} levels, the limit of gpu2npu; copied unchanged"],
    ["sub/l1", "symbolic link to l2, a loop of links; recreated as a link"],
    ["sub/l2", "symbolic link to l1, a loop of links; recreated as a link"],
    [
        "transplant_result_file",
        "a symbolic link named like the report folder; not copied (the reports are written there)",
    ],
]


def test_migrate_reports_each_hostile_path_and_changes_nothing_of_the_input(hostile, tmp_path):
    before = tree_hash(hostile)
    result = cli("migrate", "-i", hostile, "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    assert tree_hash(hostile) == before
    assert list((tmp_path / "elsewhere").iterdir()) == []  # where the link named like the reports points
    out = tmp_path / "out" / "proj_msft"
    assert sorted(skipped_rows(out)) == EXPECTED_NOTES
    assert (out / BAD_NAME).read_bytes() == CUDA_FILE.replace(b"\nx", b"\nimport torch_npu\nx").replace(
        b"cuda()", b"npu()"
    )
    assert (out / "brackets.py").read_bytes() == (hostile / "brackets.py").read_bytes()
    assert os.readlink(out / "sub" / "l1") == "l2"
    assert (out / "transplant_result_file").is_dir() and not (out / "transplant_result_file").is_symlink()
    changes = (out / "transplant_result_file" / "change_list.csv").read_text(encoding="utf-8")
    assert "b\\xff.py,2,2,MODIFY,change function cuda to npu,G2N003" in changes


def test_check_and_analyse_get_through_the_same_tree(hostile, tmp_path):
    before = tree_hash(hostile)
    check = cli("check", hostile, "-v", "2.8.0")
    assert check.returncode == 0, check.stderr
    assert "b\\xff.py\n  1:1  note  convertible" in check.stdout
    # the files too deep to parse are findings, not silence: a gate must not pass what it never read
    unchecked = [line for line in check.stdout.splitlines() if "[not-checked]" in line]
    assert unchecked == [
        f"  1:1  warning  unchecked  not checked: {reason.replace('; copied unchanged', '')}; "
        "fix the file or exclude it (--exclude)  [not-checked]"
        for name, reason in EXPECTED_NOTES
        if name.endswith(".py")
    ]
    assert cli("check", hostile, "-v", "2.8.0", "--fail-on", "unknown").returncode == 1
    for mode in ("torch_apis", "affinity_apis", "dynamic_shape", "third_party"):
        result = cli("analyse", "-i", hostile, "-o", tmp_path / mode, "-m", mode, "-v", "2.8.0")
        assert result.returncode == 0, (mode, result.stderr)
    assert tree_hash(hostile) == before
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_file_deep_enough_to_crash_a_parser_is_reported_not_fatal(tmp_path):
    """5000 nested brackets crash libcst's native parser (SIGSEGV) if it ever sees them."""
    project = tmp_path / "deep"
    project.mkdir()
    (project / "deep.py").write_text(
        "x = " + "[" * 5000 + "]" * 5000 + "\nimport torch\ny = torch.zeros(1).cuda()\n"
    )
    result = cli("migrate", "-i", project / "deep.py", "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    rows = skipped_rows(tmp_path / "out" / "deep_msft")
    assert rows == [
        ["deep.py", "brackets nested deeper than 200 levels, the limit of Python's parser; copied unchanged"]
    ]


def double_or_die(job: int) -> int:
    if job == 7:
        os.kill(os.getpid(), signal.SIGKILL)  # a worker killed on this job (a crash, the memory killer)
    return job * 2


def test_a_dead_worker_costs_its_job_only():
    results = run_jobs(double_or_die, list(range(40)), 2, False, crashed=lambda job: ("died", job))
    assert results == [job * 2 if job != 7 else ("died", 7) for job in range(40)]


def test_without_a_crash_result_a_dead_worker_fails_the_run():
    with pytest.raises(BrokenProcessPool):
        run_jobs(double_or_die, list(range(40)), 2, False)


# -- output faults: one line, exit 2, no partial tree, the old tree kept ----------------------------

TODO = "check that the output folder can be created and written and that the disk has room"


@pytest.fixture
def small(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_bytes(CUDA_FILE)
    (root / "data.bin").write_bytes(b"x" * 300_000)
    return root


@pytest.mark.parametrize("command", ["migrate", "analyse"])
def test_an_output_under_a_file_is_one_line(small, tmp_path, command):
    (tmp_path / "afile").write_text("")
    before = tree_hash(small)
    extra = ["-m", "torch_apis"] if command == "analyse" else []
    result = cli(command, "-i", small, "-o", tmp_path / "afile" / "sub", "-v", "2.8.0", *extra)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"gpu2npu: error: cannot write the output '{tmp_path / 'afile' / 'sub'}' (Not a directory); {TODO}"
    )
    assert tree_hash(small) == before


def test_an_output_name_too_long_is_one_line(small, tmp_path):
    result = cli("migrate", "-i", small, "-o", tmp_path / ("n" * 300), "-v", "2.8.0")
    assert result.returncode == 2
    last = result.stderr.splitlines()[-1]
    assert last.startswith("gpu2npu: error: cannot write the output ") and last.endswith(
        f"(File name too long); {TODO}"
    )


def limit_file_size():
    """Files may not grow past 100 kB (as on a full disk, a write fails half-way)."""
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))


def test_a_write_failing_half_way_leaves_no_partial_tree_and_keeps_the_old_one(small, tmp_path):
    out = tmp_path / "out"
    assert cli("migrate", "-i", small, "-o", out, "-v", "2.8.0").returncode == 0
    old = tree_hash(out)
    command = gpu2npu_command() + ["migrate", "-i", str(small), "-o", str(out), "-v", "2.8.0", "--force"]
    result = subprocess.run(
        command, preexec_fn=limit_file_size, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"gpu2npu: error: cannot write the output '{out / 'proj_msft' / 'data.bin'}' (File too large); {TODO}"
    )
    assert tree_hash(out) == old  # the earlier tree, whole; no temporary folder beside it
    assert sorted(p.name for p in out.iterdir()) == ["proj_msft"]


# -- signals: the workers die with the run, no temporary folder stays ------------------------------


def children(pid: int):
    """Processes whose parent is ``pid`` (from /proc)."""
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat_file.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def busy_project(tmp_path):
    """Enough files for a pool of workers and a run that lasts a few seconds."""
    root = tmp_path / "busy"
    root.mkdir()
    body = CUDA_FILE + b"".join(b"y%d = torch.ones(%d).cuda()\n" % (i, i) for i in range(400))
    for number in range(300):
        (root / f"m{number}.py").write_bytes(body)
    return root


def start_migration(project: Path, out: Path) -> subprocess.Popen:
    command = gpu2npu_command() + ["migrate", "-i", str(project), "-o", str(out), "-v", "2.8.0", "-j", "2"]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible
    )


def interruptible() -> None:
    """SIGINT as at a terminal: a suite started in the background (``cmd &`` in a script) has it
    ignored, and an ignored signal stays ignored in every child (gpu2npu rightly keeps it so)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
@pytest.mark.parametrize("sent,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_workers_and_removes_the_temporary_tree(busy_project, tmp_path, sent, code):
    out = tmp_path / "out"
    run = start_migration(busy_project, out)
    assert wait_for(lambda: len(children(run.pid)) >= 2), "no workers started"
    workers = children(run.pid)
    run.send_signal(sent)
    _, stderr = run.communicate(timeout=TIMEOUT)
    assert run.returncode == code, stderr
    word = "terminated" if sent == signal.SIGTERM else "interrupted"
    assert stderr.splitlines()[-1] == f"gpu2npu: {word}; nothing was written"
    assert wait_for(lambda: not any(alive(pid) for pid in workers))
    assert not out.exists()  # neither the temporary tree nor the folder made for it


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_workers_die_when_the_run_is_killed(busy_project, tmp_path):
    run = start_migration(busy_project, tmp_path / "out")
    assert wait_for(lambda: len(children(run.pid)) >= 2), "no workers started"
    workers = children(run.pid)
    run.kill()
    run.communicate(timeout=TIMEOUT)
    assert wait_for(lambda: not any(alive(pid) for pid in workers)), "orphaned workers"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's parent-death signal")
@pytest.mark.parametrize(
    "forked_by_this_process,exit_code,output", [(True, 0, "still running\n"), (False, 1, "")]
)
def test_a_worker_whose_parent_died_before_it_started_leaves(forked_by_this_process, exit_code, output):
    """A run killed between a worker's fork and its request to die with the run: the worker, by
    then another process's child, must not wait on the job queue for ever (it holds the pipes)."""
    parent = os.getpid() if forked_by_this_process else os.getpid() + 1_000_000  # never a pid
    code = f"from gpu2npu.project.parallel import _die_with_parent; _die_with_parent({parent}); "
    worker = subprocess.run(
        [sys.executable, "-c", code + "print('still running')"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert (worker.returncode, worker.stdout, worker.stderr) == (exit_code, output, "")


# -- a worker that dies costs its file, in every command that has workers ---------------------------

KILLER = Path(__file__).parent / "killer"  # its sitecustomize kills the worker on GPU2NPU_TEST_KILL


@pytest.fixture
def pool_sized(tmp_path):
    """Enough files for a pool of workers (gpu2npu.project.parallel.IN_PROCESS_BELOW)."""
    root = tmp_path / "pool"
    root.mkdir()
    for number in range(30):
        (root / f"m{number}.py").write_bytes(CUDA_FILE + b"y = torch.npu_format_cast\n")
    return root


def cli_killing_a_worker_on(victim: str, *args):
    env = dict(os.environ, PYTHONPATH=str(KILLER), GPU2NPU_TEST_KILL=victim)
    return run_cli(*args, "-j", "2", env=env, timeout=TIMEOUT)


DIED = "the worker process died on it (killed by a signal, or out of memory)"


def test_migrate_copies_and_reports_the_file_a_worker_died_on(pool_sized, tmp_path):
    before = tree_hash(pool_sized)
    result = cli_killing_a_worker_on(
        "m7.py", "migrate", "-i", pool_sized, "-o", tmp_path / "out", "-v", "2.8.0"
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no traceback from the workers the broken pool stopped
    tree = tmp_path / "out" / "pool_msft"
    assert skipped_rows(tree) == [["m7.py", f"{DIED}; copied unchanged"]]
    assert (tree / "m7.py").read_bytes() == (pool_sized / "m7.py").read_bytes()
    assert b"torch_npu" in (tree / "m8.py").read_bytes()  # the run went on after the crash
    assert tree_hash(pool_sized) == before


@pytest.mark.parametrize(
    "mode,reason",
    [
        ("torch_apis", DIED),
        ("affinity_apis", f"{DIED}; not analysed"),
        ("dynamic_shape", f"{DIED}; copied unchanged"),
    ],
)
def test_analyse_reports_the_file_a_worker_died_on(pool_sized, tmp_path, mode, reason):
    before = tree_hash(pool_sized)
    out = tmp_path / mode
    result = cli_killing_a_worker_on(
        "m7.py", "analyse", "-i", pool_sized, "-o", out, "-m", mode, "-v", "2.8.0"
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    log = (out / "pool_analysis" / "pytorch_analysis.txt").read_text(encoding="utf-8").splitlines()
    assert f"m7.py: skipped: {reason}" in log
    assert tree_hash(pool_sized) == before


def test_check_reports_the_file_a_worker_died_on_as_unchecked(pool_sized, tmp_path):
    result = cli_killing_a_worker_on(
        "m7.py", "check", pool_sized, "-v", "2.8.0", "--format", "json", "--fail-on", "unknown"
    )
    assert result.returncode == 1, result.stderr
    unchecked = [f for f in json.loads(result.stdout)["findings"] if f["category"] == "unchecked"]
    assert [(f["file"], f["line"], f["severity"], f["rule"], f["message"]) for f in unchecked] == [
        (
            f"{os.path.relpath(pool_sized)}/m7.py",
            1,
            "warning",
            "not-checked",
            f"not checked: {DIED}; fix the file or exclude it (--exclude)",
        )
    ]


# -- permissions: a folder the user may not write, a file the user may not read ----------------------


@pytest.fixture
def shared_folder():
    """A folder every user may enter (pytest's are private to their owner): the project, an
    unreadable file in it and a read-only folder for the output."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        root.chmod(0o777)
        project = root / "proj"
        project.mkdir(mode=0o755)
        (project / "a.py").write_bytes(CUDA_FILE)
        (project / "secret.py").write_bytes(CUDA_FILE)
        (project / "secret.py").chmod(0o000)
        (root / "ro").mkdir(mode=0o555)
        try:
            yield root
        finally:
            (root / "ro").chmod(0o755)
            (project / "secret.py").chmod(0o644)


def unprivileged_cli(cwd: Path, *args):
    prefix = as_unprivileged_user()
    if prefix is None:
        pytest.skip("running as root without user namespaces: permissions do not apply")
    return run_cli(*args, cwd=cwd, command=list(prefix) + gpu2npu_command(), timeout=TIMEOUT)


@pytest.mark.parametrize(
    "args,final",
    [
        (("migrate", "-i", "proj", "-o", "ro"), "proj_msft"),
        (("analyse", "-i", "proj", "-o", "ro"), "proj_analysis"),
    ],
    ids=["migrate", "analyse"],
)
def test_an_output_folder_without_write_permission_is_one_line(shared_folder, args, final):
    result = unprivileged_cli(shared_folder, *args, "-v", "2.8.0")
    assert result.returncode == 2
    where = shared_folder / "ro" / final
    assert result.stderr.splitlines() == [
        f"gpu2npu: error: cannot write the output '{where}' (Permission denied); {TODO}"
    ]
    assert list((shared_folder / "ro").iterdir()) == []


def test_a_file_without_read_permission_is_reported_by_every_command(shared_folder):
    migrated = unprivileged_cli(shared_folder, "migrate", "-i", "proj", "-o", "out", "-v", "2.8.0")
    assert migrated.returncode == 0, migrated.stderr
    assert skipped_rows(shared_folder / "out" / "proj_msft") == [
        ["secret.py", "cannot be read (Permission denied); not copied"]
    ]
    analysed = unprivileged_cli(shared_folder, "analyse", "-i", "proj", "-o", "an", "-v", "2.8.0")
    assert analysed.returncode == 0, analysed.stderr
    log = (shared_folder / "an" / "proj_analysis" / "pytorch_analysis.txt").read_text(encoding="utf-8")
    assert "secret.py: skipped: cannot be read (Permission denied)\n" in log
    checked = unprivileged_cli(shared_folder, "check", "proj", "-v", "2.8.0", "--fail-on", "unknown")
    assert checked.returncode == 1
    assert (
        "proj/secret.py\n  1:1  warning  unchecked  not checked: cannot be read (Permission denied); "
        "fix the file or exclude it (--exclude)  [not-checked] (fails)\n" in checked.stdout
    )


FORKED_BEFORE_RESET = """
import os, signal, sys, time
from gpu2npu import cli
cli._terminated.pid = os.getpid()
signal.signal(signal.SIGTERM, cli._terminated)
child = os.fork()
if child == 0:  # a pool worker before its initializer set SIGTERM back to the default
    time.sleep(30)
    os._exit(0)
time.sleep(0.2)
os.kill(child, signal.SIGTERM)
_, status = os.waitpid(child, 0)
print(os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM)
"""


def test_a_worker_terminated_before_its_initializer_dies_quietly():
    """The CLI's SIGTERM handler raises Terminated only in the process that installed it; a
    worker the pool stops while still forking dies as SIGTERM's default would, no traceback."""
    run = subprocess.run(
        [sys.executable, "-c", FORKED_BEFORE_RESET], capture_output=True, text=True, timeout=60
    )
    assert (run.stdout, run.stderr) == ("True\n", "")


SIGNAL_WHILE_FORKING = """
import os, signal
from gpu2npu.project.parallel import run_jobs

class Stop(BaseException):
    pass

def stop(signum, frame):
    raise Stop()

signal.signal(signal.SIGTERM, stop)
# the signal comes in while the pool forks: its handler would run inside fork's own handlers
os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGTERM))
try:
    run_jobs(abs, list(range(-200, 0)), workers=2, show_progress=False)
    print("finished")
except Stop:
    print("stopped")
"""


def test_a_signal_that_comes_while_the_pool_forks_still_stops_the_run():
    """Raised inside a fork handler, the handler's exception would be printed and dropped
    ("Exception ignored in ...") and the run would go on to the end (seen as a hang of the signal
    test on a loaded machine): the pool holds SIGINT and SIGTERM while it forks."""
    run = subprocess.run(
        [sys.executable, "-c", SIGNAL_WHILE_FORKING], capture_output=True, text=True, timeout=60
    )
    assert (run.stdout, run.stderr) == ("stopped\n", "")


@pytest.mark.parametrize("command", [["migrate", "-j", "1"], ["migrate", "-j", "2"], ["check"]])
def test_the_warnings_python_gives_about_the_users_code_are_not_shown(tmp_path, command):
    source = tmp_path / "src"
    source.mkdir()
    for n in range(4):  # several files, so that -j 2 parses in the workers too
        (source / f"t{n}.py").write_text("import torch\nx = 1\nif x is 1:\n    torch.cuda.synchronize()\n")
    args = [*command, "-i", source, "-o", tmp_path / "out"] if command[0] == "migrate" else [*command, source]
    result = run_cli(*args, "-v", "2.8.0")
    assert result.returncode in (0, 1), result.stderr
    assert result.stderr == ""

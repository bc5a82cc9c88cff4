"""`gpu2npu check --baseline`: a hostile baseline is one error line and exit 2, never a hang,
a traceback or a written file."""

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from helpers import as_unprivileged_user, gpu2npu_command, tree_files, write

UNSUPPORTED = "import torch\n\nmodel = torch.autograd.profiler.emit_nvtx(net)\n"
RECREATE = "recreate it with --update-baseline"
WRITABLE = "name a file in a writable folder"
READABLE = "check the path and its permissions"
# Well under the 60 s a test may take: a run that blocks on a FIFO or reads /dev/zero fails here.
TIMEOUT = 45


def check(cwd: Path, *args, prefix=()) -> subprocess.CompletedProcess:
    return subprocess.run(
        list(prefix) + gpu2npu_command() + ["check", "bad.py", "-v", "2.8", "-j", "1", *map(str, args)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def digests(root: Path) -> dict:
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in tree_files(root).items()}


def assert_refused(project: Path, line: str, *args, prefix=()) -> None:
    """Exit 2, exactly ``line`` on stderr, nothing on stdout, no file in the project changed."""
    before = digests(project)
    result = check(project, *args, prefix=prefix)
    assert (result.returncode, result.stderr, result.stdout) == (2, f"gpu2npu: error: {line}\n", "")
    assert digests(project) == before


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "bad.py", UNSUPPORTED)
    return tmp_path


def entry(count: str, fingerprint: str = '"0123456789abcdef0123"') -> bytes:
    """A baseline whose one entry has the given JSON texts as its count and fingerprint."""
    return (
        '{"tool": "gpu2npu", "baseline_version": 1, "findings": '
        f'[{{"fingerprint": {fingerprint}, "count": {count}}}]}}'
    ).encode()


NOT_BASELINE = "is not a gpu2npu baseline: "
RANGE = "not a whole number from 1 to 1000000000"
LATIN_1 = entry("1", '"cafX"').replace(b"X", b"\xe9")  # a fingerprint saved by a Latin-1 editor


@pytest.mark.parametrize(
    "content,problem",
    [
        (b"", "is not valid JSON (Expecting value at line 1, column 1)"),
        (b"{", "is not valid JSON (Expecting property name enclosed in double quotes at line 1, column 2)"),
        (b'{"findings": []} x', "is not valid JSON (Extra data at line 1, column 18)"),
        (b"[]", NOT_BASELINE + "the top level is a list, not an object"),
        (b'"baseline"', NOT_BASELINE + "the top level is a string, not an object"),
        (b"null", NOT_BASELINE + "the top level is null, not an object"),
        (b'{"findings": []}', NOT_BASELINE + "the key 'baseline_version' is missing"),
        (b'{"baseline_version": 1}', NOT_BASELINE + "the key 'findings' is missing"),
        (b'{"baseline_version": "1", "findings": []}', NOT_BASELINE + 'baseline_version is "1", not 1'),
        (b'{"baseline_version": 2, "findings": []}', NOT_BASELINE + "baseline_version is 2, not 1"),
        (b'{"baseline_version": true, "findings": []}', NOT_BASELINE + "baseline_version is true, not 1"),
        (b'{"baseline_version": 1, "findings": {}}', NOT_BASELINE + "findings is an object, not a list"),
        (
            b'{"baseline_version": 1, "findings": [1]}',
            NOT_BASELINE + "findings[0] is a number, not an object",
        ),
        (b'{"baseline_version": 1, "findings": [{}]}', NOT_BASELINE + "findings[0] has no 'fingerprint'"),
        (
            b'{"baseline_version": 1, "findings": [{"fingerprint": "ab"}]}',
            NOT_BASELINE + "findings[0] has no 'count'",
        ),
        (entry("1", "5"), NOT_BASELINE + "findings[0] fingerprint is 5, not a non-empty string"),
        (entry("1", '""'), NOT_BASELINE + 'findings[0] fingerprint is "", not a non-empty string'),
        (entry("1", "[]"), NOT_BASELINE + "findings[0] fingerprint is a list, not a non-empty string"),
        (entry('"2"'), NOT_BASELINE + f'findings[0] count is "2", {RANGE}'),
        (entry("true"), NOT_BASELINE + f"findings[0] count is true, {RANGE}"),
        (entry("null"), NOT_BASELINE + f"findings[0] count is null, {RANGE}"),
        (entry("2.5"), NOT_BASELINE + f"findings[0] count is 2.5, {RANGE}"),
        (entry("0"), NOT_BASELINE + f"findings[0] count is 0, {RANGE}"),
        (entry("-1"), NOT_BASELINE + f"findings[0] count is -1, {RANGE}"),
        (entry(str(10**10)), NOT_BASELINE + f"findings[0] count is 10000000000, {RANGE}"),
        (entry("1e999"), "holds the out-of-range number 1e999"),
        (entry("-1e999"), "holds the out-of-range number -1e999"),
        (entry("NaN"), "holds the non-finite number NaN"),
        (entry("Infinity"), "holds the non-finite number Infinity"),
        (entry("-Infinity"), "holds the non-finite number -Infinity"),
        (entry(str(10**400)), "holds the out-of-range number 10000000000000000000... (401 characters)"),
        (entry(str(-(10**400))), "holds the out-of-range number -1000000000000000000... (402 characters)"),
        (b"[" * 100_000, "is nested too deeply to be a gpu2npu baseline"),
        (b'{"a": ' * 100_000, "is nested too deeply to be a gpu2npu baseline"),
        (b"\xff\xfe{}", "is not UTF-8 text (byte 0xff at offset 0)"),
        (LATIN_1, f"is not UTF-8 text (byte 0xe9 at offset {LATIN_1.index(0xE9)})"),
    ],
    ids=lambda value: value.decode("latin-1")[:40] if isinstance(value, bytes) else None,
)
def test_a_broken_baseline_is_one_line(project, content, problem):
    write(project / "b.json", content)
    assert_refused(project, f"baseline 'b.json' {problem}; {RECREATE}", "--baseline", "b.json")


def test_a_baseline_over_64_mib_is_not_read(project):
    with open(project / "b.json", "wb") as big:
        big.truncate(64 * 1024 * 1024 + 1)  # sparse: no disk, no time
    assert_refused(project, f"baseline 'b.json' is larger than 64 MiB; {RECREATE}", "--baseline", "b.json")


def test_a_byte_order_mark_is_accepted(project):
    assert check(project, "--baseline", "b.json", "--update-baseline").returncode == 0
    (project / "b.json").write_bytes(b"\xef\xbb\xbf" + (project / "b.json").read_bytes())
    result = check(project, "--baseline", "b.json")
    assert (result.returncode, result.stderr) == (0, "")


def test_a_directory_is_refused_for_reading_and_writing(project):
    (project / "dir").mkdir()
    assert_refused(project, "baseline 'dir' is a directory; pass the baseline JSON file", "--baseline", "dir")
    assert_refused(
        project,
        "baseline 'dir' is a directory; name a file to write with --baseline",
        "--baseline",
        "dir",
        "--update-baseline",
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("update", [False, True])
def test_a_fifo_is_refused_without_blocking(project, update):
    os.mkfifo(project / "fifo.json")  # nobody writes or reads it: opening it plainly would block
    if update:
        line = "baseline 'fifo.json' is not a regular file; name a file to write with --baseline"
        assert_refused(project, line, "--baseline", "fifo.json", "--update-baseline")
    else:
        line = "baseline 'fifo.json' is not a regular file; pass the baseline JSON file"
        assert_refused(project, line, "--baseline", "fifo.json")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize("update", [False, True])
def test_an_endless_device_is_refused(project, update):
    if update:
        line = "baseline '/dev/zero' is not a regular file; name a file to write with --baseline"
        assert_refused(project, line, "--baseline", "/dev/zero", "--update-baseline")
    else:
        line = "baseline '/dev/zero' is not a regular file; pass the baseline JSON file"
        assert_refused(project, line, "--baseline", "/dev/zero")


@pytest.mark.parametrize(
    "target,problem",
    [
        ("bad.py/b.json", "'bad.py' is not a directory"),
        ("missing/b.json", "the folder 'missing' does not exist"),
    ],
)
def test_a_baseline_that_cannot_be_written(project, target, problem):
    line = f"baseline '{target}' cannot be written ({problem}); {WRITABLE}"
    assert_refused(project, line, "--baseline", target, "--update-baseline")


LONG = "x" * 300 + ".json"  # one name longer than any file system allows (255 bytes)


@pytest.mark.parametrize(
    "args,line",
    [
        (
            ("--baseline", "bad.py/b.json"),
            f"cannot be read (not a directory); {READABLE}",
        ),
        (("--baseline", LONG), f"cannot be read (file name too long); {READABLE}"),
        (("--baseline", LONG, "--update-baseline"), f"cannot be written (file name too long); {WRITABLE}"),
    ],
    ids=["read below a file", "read a long name", "write a long name"],
)
def test_a_path_the_system_refuses(project, args, line):
    assert_refused(project, f"baseline '{args[1]}' {line}", *args)


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_a_baseline_in_a_read_only_folder(project):
    prefix = as_unprivileged_user()
    if prefix is None:
        pytest.skip("running as root without user namespaces: permissions do not apply")
    # pytest's temporary folders are private to their owner; the unprivileged user must read the project.
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        root.chmod(0o755)
        write(root / "bad.py", UNSUPPORTED, mode=0o644)
        (root / "ro").mkdir(mode=0o555)
        try:
            line = f"baseline 'ro/b.json' cannot be written (permission denied); {WRITABLE}"
            assert_refused(root, line, "--baseline", "ro/b.json", "--update-baseline", prefix=prefix)
        finally:
            (root / "ro").chmod(0o755)  # so that the folder can be removed

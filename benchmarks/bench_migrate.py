#!/usr/bin/env python3
"""Measure the end-to-end speed and memory of ``gpu2npu migrate`` (or, with
``--subcommand``, of ``gpu2npu analyse -m MODE``).

For every source tree (given on the command line and/or generated with
``gen_corpus.py``) the installed command is run several times as

    <cmd> <subcommand> -i TREE -o <fresh temp dir> -j J --force

and the best/median wall time, throughput and peak memory are reported.

Memory is measured two ways because they answer different questions:

* "peak RSS (tree)": a background thread polls the process tree (the command
  and all of its descendants, e.g. worker processes) every ~20 ms and sums
  VmRSS from /proc; the maximum sum approximates the machine memory the run
  needs.  Needs Linux /proc, otherwise "n/a".  Very short-lived processes can
  be missed between two polls.
* "peak RSS (largest proc)": ru_maxrss of the reaped command, i.e. the largest
  single process of its tree.  It is read per run from ``os.wait4`` because
  ``getrusage(RUSAGE_CHILDREN)`` only ever grows over the life of this script
  and would mix up trees; that cumulative value is still printed in the footer.

Only the standard library is used so the script runs in any environment.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

try:
    import resource
except ImportError:  # not available on Windows
    resource = None  # type: ignore[assignment]

SKIPPED_DIR_NAMES = ("transplant_result_file",)
POLL_INTERVAL_S = 0.02
PROC = Path("/proc")


# --------------------------------------------------------------------------
# Corpus statistics
# --------------------------------------------------------------------------


def count_python_sources(tree: Path) -> Tuple[int, int]:
    """Return (number of .py files, total newline count) under ``tree``.

    Directories named like the tool's own output are skipped so that a tree
    that was migrated in place before is not counted twice.
    """
    files = lines = 0
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIR_NAMES)
        for name in filenames:
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name), "rb") as handle:
                    lines += handle.read().count(b"\n")
                files += 1
    return files, lines


def load_gen_corpus():
    """Import gen_corpus.py from next to this script, whatever the cwd is."""
    path = Path(__file__).resolve().with_name("gen_corpus.py")
    spec = importlib.util.spec_from_file_location("gen_corpus", path)
    if spec is None or spec.loader is None:
        raise RuntimeError("cannot load %s" % path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------
# Process-tree memory polling
# --------------------------------------------------------------------------


def read_rss_kib(pid: int) -> int:
    """VmRSS of ``pid`` in KiB, 0 if the process is gone or has no memory."""
    try:
        with open(PROC / str(pid) / "status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def children_from_task_files(pid: int) -> List[int]:
    """Children of every thread of ``pid`` via /proc/<pid>/task/*/children."""
    try:
        tasks = os.listdir(PROC / str(pid) / "task")
    except OSError:
        return []
    children: List[int] = []
    for task in tasks:
        try:
            with open(PROC / str(pid) / "task" / task / "children", "rb") as handle:
                children.extend(int(x) for x in handle.read().split())
        except OSError:
            # The thread exited meanwhile; support for the file itself
            # (CONFIG_PROC_CHILDREN) is probed once by the caller.
            continue
    return children


def parent_map_from_stat() -> Dict[int, List[int]]:
    """Map ppid -> [pid] by scanning every /proc/<pid>/stat (the slow fallback)."""
    mapping: Dict[int, List[int]] = {}
    for entry in os.listdir(PROC):
        if not entry.isdigit():
            continue
        try:
            with open(PROC / entry / "stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        # The command name may contain spaces or parentheses: split after the last ')'.
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            mapping.setdefault(int(fields[1]), []).append(int(entry))
    return mapping


def proc_children_files_supported() -> bool:
    return (PROC / str(os.getpid()) / "task" / str(os.getpid()) / "children").exists()


def process_tree(root: int, use_children_files: bool) -> List[int]:
    """``root`` plus all of its live descendants."""
    if use_children_files:
        get_children = children_from_task_files
    else:
        mapping = parent_map_from_stat()
        get_children = lambda pid: mapping.get(pid, [])  # noqa: E731
    seen = [root]
    index = 0
    while index < len(seen):
        for child in get_children(seen[index]):
            if child not in seen:
                seen.append(child)
        index += 1
    return seen


class TreeRssPoller(threading.Thread):
    """Background thread recording the max summed VmRSS of a process tree."""

    def __init__(self, root_pid: int, interval: float = POLL_INTERVAL_S) -> None:
        super().__init__(daemon=True)
        self.root_pid = root_pid
        self.interval = interval
        self.peak_kib = 0
        self.samples = 0
        self._stop_event = threading.Event()
        self._use_children_files = proc_children_files_supported()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.sample_once()
            self._stop_event.wait(self.interval)

    def sample_once(self) -> None:
        total = sum(read_rss_kib(pid) for pid in process_tree(self.root_pid, self._use_children_files))
        self.peak_kib = max(self.peak_kib, total)
        self.samples += 1

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def proc_available() -> bool:
    return (PROC / str(os.getpid()) / "status").exists()


# --------------------------------------------------------------------------
# Running the command
# --------------------------------------------------------------------------


class RunResult:
    def __init__(self, seconds: float, tree_peak_kib: Optional[int], largest_proc_kib: Optional[int]) -> None:
        self.seconds = seconds
        self.tree_peak_kib = tree_peak_kib
        self.largest_proc_kib = largest_proc_kib


def maxrss_to_kib(value: int) -> int:
    """ru_maxrss is KiB on Linux but bytes on macOS."""
    return value // 1024 if sys.platform == "darwin" else value


def wait_for_child(proc: subprocess.Popen) -> Optional[int]:
    """Reap ``proc`` and return its ru_maxrss in KiB (None where unsupported).

    os.wait4 gives the rusage of this one child (including its reaped
    descendants), so each run gets its own figure.
    """
    if not hasattr(os, "wait4"):
        proc.wait()
        return None
    _, status, usage = os.wait4(proc.pid, 0)
    # Tell Popen the child is reaped so it never waits for it again.
    proc.returncode = os.waitstatus_to_exitcode(status)
    return maxrss_to_kib(usage.ru_maxrss)


def run_once(argv: Sequence[str], poll_memory: bool) -> Tuple[RunResult, int, bytes, bytes]:
    """Run the command once; return timings, exit code, stdout and stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # Output goes to files rather than pipes: nothing has to drain pipes
        # while we wait, so a chatty tool can neither block nor skew timings.
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        poller = TreeRssPoller(proc.pid) if poll_memory else None
        if poller is not None:
            poller.start()
        try:
            largest = wait_for_child(proc)
        finally:
            if poller is not None:
                poller.stop()
        elapsed = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        result = RunResult(elapsed, poller.peak_kib if poller is not None else None, largest)
        return result, proc.returncode, out.read(), err.read()


SUBCOMMAND = ["migrate"]  # set from --subcommand


def build_argv(cmd: Sequence[str], tree: Path, out_dir: Path, jobs: int) -> List[str]:
    return list(cmd) + SUBCOMMAND + ["-i", str(tree), "-o", str(out_dir), "-j", str(jobs), "--force"]


def benchmark_tree(
    label: str,
    tree: Path,
    cmd: Sequence[str],
    jobs: int,
    repeat: int,
    scratch: Optional[str],
    poll_memory: bool,
) -> Dict[str, object]:
    """Run the command ``repeat`` times on ``tree`` and summarise the runs."""
    files, lines = count_python_sources(tree)
    print("== %s: %d .py files, %d lines" % (label, files, lines), flush=True)
    runs: List[RunResult] = []
    for index in range(repeat):
        # A fresh, non-existent output path every run, so no run benefits from
        # files (or directory entries) written by the previous one.
        parent = tempfile.mkdtemp(prefix="gpu2npu-bench-out-", dir=scratch)
        try:
            argv = build_argv(cmd, tree, Path(parent) / "out", jobs)
            result, code, stdout, stderr = run_once(argv, poll_memory)
        finally:
            shutil.rmtree(parent, ignore_errors=True)
        if code != 0:
            fail_run(argv, code, stdout, stderr)
        runs.append(result)
        print("   run %d/%d: %.3f s" % (index + 1, repeat, result.seconds), flush=True)
    # A generated corpus lives in a temp dir that is deleted afterwards.
    return summarise(label, None if label.startswith("generated(") else tree, files, lines, runs)


def fail_run(argv: Sequence[str], code: int, stdout: bytes, stderr: bytes) -> None:
    """Show what the tool said and stop: timings of a failing run mean nothing."""
    print("error: command failed with exit code %d: %s" % (code, shlex.join(argv)), file=sys.stderr)
    if stdout.strip():
        sys.stderr.write(
            "--- stdout (last 4000 bytes) ---\n" + stdout[-4000:].decode("utf-8", "replace") + "\n"
        )
    sys.stderr.write("--- stderr ---\n" + stderr.decode("utf-8", "replace") + "\n")
    raise SystemExit(1)


def summarise(
    label: str, tree: Optional[Path], files: int, lines: int, runs: Sequence[RunResult]
) -> Dict[str, object]:
    times = [r.seconds for r in runs]
    best = min(times)
    tree_peaks = [r.tree_peak_kib for r in runs if r.tree_peak_kib is not None]
    largest = [r.largest_proc_kib for r in runs if r.largest_proc_kib is not None]
    return {
        "tree": label,
        "path": str(tree) if tree is not None else None,
        "files": files,
        "lines": lines,
        "times_s": [round(t, 4) for t in times],
        "best_s": round(best, 4),
        "median_s": round(statistics.median(times), 4),
        "lines_per_s": round(lines / best, 1) if best > 0 else None,
        "files_per_s": round(files / best, 1) if best > 0 else None,
        "peak_rss_tree_mib": round(max(tree_peaks) / 1024.0, 1) if tree_peaks else None,
        "peak_rss_largest_proc_mib": round(max(largest) / 1024.0, 1) if largest else None,
    }


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------

COLUMNS = [
    ("tree", "tree", "{}"),
    ("files", "files", "{:,}"),
    ("lines", "lines", "{:,}"),
    ("best s", "best_s", "{:.3f}"),
    ("median s", "median_s", "{:.3f}"),
    ("lines/s", "lines_per_s", "{:,.0f}"),
    ("files/s", "files_per_s", "{:,.1f}"),
    ("peak RSS (tree) MiB", "peak_rss_tree_mib", "{:.1f}"),
    ("peak RSS (largest proc) MiB", "peak_rss_largest_proc_mib", "{:.1f}"),
]


def format_cell(value: object, fmt: str) -> str:
    return "n/a" if value is None else fmt.format(value)


def render_table(results: Sequence[Dict[str, object]]) -> str:
    """Plain-text table; numbers right-aligned, the tree name left-aligned."""
    header = [title for title, _, _ in COLUMNS]
    rows = [[format_cell(r[key], fmt) for _, key, fmt in COLUMNS] for r in results]
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]

    def line(cells: Sequence[str]) -> str:
        parts = [cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return " | ".join(parts)

    separator = "-+-".join("-" * w for w in widths)
    return "\n".join([line(header), separator] + [line(r) for r in rows])


def usable_cpus() -> str:
    total = os.cpu_count() or 0
    if hasattr(os, "sched_getaffinity"):
        usable = len(os.sched_getaffinity(0))
        if usable != total:
            return "%d (%d usable)" % (total, usable)
    return str(total)


def cumulative_children_maxrss_mib() -> Optional[float]:
    if resource is None:
        return None
    return round(maxrss_to_kib(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024.0, 1)


def environment_info(cmd: Sequence[str], args: argparse.Namespace) -> Dict[str, object]:
    return {
        "command": shlex.join(
            list(cmd) + SUBCOMMAND + ["-i", "TREE", "-o", "OUT", "-j", str(args.jobs), "--force"]
        ),
        "jobs": args.jobs,
        "repeat": args.repeat,
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cpus": usable_cpus(),
        "platform": platform.platform(),
        "rusage_children_maxrss_mib": cumulative_children_maxrss_mib(),
    }


def print_report(results: Sequence[Dict[str, object]], env: Dict[str, object]) -> None:
    print()
    print(render_table(results))
    print()
    print(
        "command: %s | -j %s | repeat %s | Python %s | CPUs %s"
        % (env["command"], env["jobs"], env["repeat"], env["python"], env["cpus"])
    )
    print(
        "lines/s and files/s use the best wall time; RUSAGE_CHILDREN max RSS over all runs: %s MiB"
        % format_cell(env["rusage_children_maxrss_mib"], "{:.1f}")
    )


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark `gpu2npu migrate` end to end on one or more source trees."
    )
    parser.add_argument("trees", nargs="*", metavar="TREE", help="source directories to migrate")
    parser.add_argument(
        "--generate",
        type=int,
        metavar="N",
        default=None,
        help="also benchmark a generated corpus of N .py files (default: 1000 when no TREE is given)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for the generated corpus (default: 0)")
    parser.add_argument(
        "-j", "--jobs", type=int, default=2, help="value passed as -j to the tool (default: 2)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per tree (default: 3)")
    parser.add_argument(
        "--cmd",
        default="gpu2npu",
        help="command to benchmark, split shell-style, e.g. 'python -m gpu2npu' (default: gpu2npu)",
    )
    parser.add_argument(
        "--subcommand",
        default="migrate",
        help="what to run, split shell-style, e.g. 'analyse -m torch_apis -v 2.8.0' (default: migrate)",
    )
    parser.add_argument(
        "--tmp",
        metavar="DIR",
        default=None,
        help="where to put the generated corpus and outputs (default: system temp dir)",
    )
    parser.add_argument("--json", metavar="FILE", default=None, help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.generate is None and not args.trees:
        args.generate = 1000
    for tree in args.trees:
        if not os.path.isdir(tree):
            parser.error("not a directory: %s" % tree)
    return args


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """-v, -j, --cmd and --json, as cache_speed.py and golden_corpus.py take them."""
    parser.add_argument("-v", "--version", default="2.1.0")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--cmd", default="gpu2npu")
    parser.add_argument("--json", type=Path)


def resolve_command(cmd: str) -> List[str]:
    """Split --cmd and make sure its program exists before timing anything."""
    argv = shlex.split(cmd)
    if not argv:
        raise SystemExit("error: --cmd is empty")
    if shutil.which(argv[0]) is None:
        raise SystemExit("error: command not found: %s (is gpu2npu installed? see --cmd)" % argv[0])
    return argv


def generate_tree(n_files: int, seed: int, scratch: Optional[str]) -> Tuple[str, Path]:
    """Generate the corpus in-process (no extra child process to pollute rusage)."""
    gen_corpus = load_gen_corpus()
    parent = tempfile.mkdtemp(prefix="gpu2npu-bench-corpus-", dir=scratch)
    tree = Path(parent) / "corpus"
    started = time.perf_counter()
    try:
        gen_corpus.generate_corpus(tree, n_files=n_files, seed=seed)
    except gen_corpus.CorpusError as exc:
        shutil.rmtree(parent, ignore_errors=True)
        raise SystemExit("error: cannot generate corpus: %s" % exc) from None
    print("generated corpus of %d .py files in %.1f s" % (n_files, time.perf_counter() - started), flush=True)
    return parent, tree


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    SUBCOMMAND[:] = shlex.split(args.subcommand)
    cmd = resolve_command(args.cmd)
    poll_memory = proc_available()
    if not poll_memory:
        print("note: /proc not available, process-tree RSS will be reported as n/a", file=sys.stderr)
    targets: List[Tuple[str, Path]] = [(tree, Path(tree).resolve()) for tree in args.trees]
    cleanup: List[str] = []
    try:
        if args.generate is not None:
            parent, tree = generate_tree(args.generate, args.seed, args.tmp)
            cleanup.append(parent)
            targets.append(("generated(%d, seed %d)" % (args.generate, args.seed), tree))
        results = [
            benchmark_tree(label, tree, cmd, args.jobs, args.repeat, args.tmp, poll_memory)
            for label, tree in targets
        ]
    finally:
        for path in cleanup:
            shutil.rmtree(path, ignore_errors=True)
    env = environment_info(cmd, args)
    print_report(results, env)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"environment": env, "results": results}, handle, indent=2)
            handle.write("\n")
        print("wrote " + args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

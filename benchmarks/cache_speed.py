"""Cold and warm runs of migrate and check (the per-file result cache), with their memory.

    python benchmarks/cache_speed.py TREE [TREE ...] [-v 2.1.0] [-j 2] [--cmd gpu2npu] [--json out.json]

For each tree, in a fresh cache folder (--cache-dir): migrate cold (empty cache), migrate warm
(the cache the cold run wrote), check cold (its own empty cache), check warm, check warm after
one file changed (one line appended to the largest Python file of a copy of the tree: what a
pull request costs), and migrate with --no-cache (what the cache costs a cold run). Per run: the
wall time, lines/s, the peak RSS of the whole process tree (sampled from /proc, the workers
included) and of the largest process, and how many files came from the cache. The command's
exit code 1 from check (findings) is expected; any other failure stops the script.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_migrate import (  # noqa: E402
    add_run_options,
    count_python_sources,
    fail_run,
    resolve_command,
    run_once,
)

REUSED = re.compile(rb"; (\d+) of (\d+) files from the cache")


def measure(label: str, argv: List[str], lines: int, ok=(0,)) -> Dict[str, object]:
    result, code, out, err = run_once(argv, poll_memory=True)
    if code not in ok:
        fail_run(argv, code, out, err)
    reused = REUSED.search(out)
    return {
        "run": label,
        "seconds": round(result.seconds, 2),
        "lines/s": round(lines / result.seconds),
        "peak RSS tree MiB": round(result.tree_peak_kib / 1024, 1) if result.tree_peak_kib else None,
        "peak RSS largest MiB": round(result.largest_proc_kib / 1024, 1) if result.largest_proc_kib else None,
        "from cache": f"{reused.group(1).decode()}/{reused.group(2).decode()}" if reused else "",
    }


def bench_tree(tree: Path, cmd: List[str], version: str, jobs: int, scratch: Path) -> List[dict]:
    files, lines = count_python_sources(tree)
    common = ["-v", version, "-j", str(jobs)]
    migrate_cache, check_cache = scratch / "migrate-cache", scratch / "check-cache"

    def migrate(label: str, *flags: str) -> dict:
        out = scratch / f"out-{label.replace(' ', '-')}"
        figures = measure(label, cmd + ["migrate", "-i", str(tree), "-o", str(out), *common, *flags], lines)
        shutil.rmtree(out, ignore_errors=True)
        return figures

    def check(label: str, target: Path) -> dict:
        argv = cmd + ["check", str(target), *common, "--cache-dir", str(check_cache)]
        return measure(label, argv, lines, ok=(0, 1))

    results = [
        migrate("migrate cold", "--cache-dir", str(migrate_cache)),
        migrate("migrate warm", "--cache-dir", str(migrate_cache)),
        migrate("migrate --no-cache", "--no-cache"),
        check("check cold", tree),
        check("check warm", tree),
    ]
    changed = scratch / tree.name
    shutil.copytree(tree, changed, symlinks=True)
    largest = max(changed.rglob("*.py"), key=lambda path: path.stat().st_size if path.is_file() else 0)
    with open(largest, "a", encoding="utf-8") as handle:
        handle.write("\nx = 1  # one changed line\n")
    check("check warm (copy)", changed)  # the copy's own paths: cold once
    results.append(check("check warm, 1 file changed", changed))
    for row in results:
        row.update(tree=tree.name, files=files, lines=lines)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trees", nargs="+", type=Path)
    add_run_options(parser)
    args = parser.parse_args()
    cmd = resolve_command(args.cmd)
    everything = []
    for tree in args.trees:
        with tempfile.TemporaryDirectory(prefix="gpu2npu-cache-bench-") as scratch:
            results = bench_tree(tree.resolve(), cmd, args.version, args.jobs, Path(scratch))
        everything += results
        print(f"\n{tree} ({results[0]['files']} .py files, {results[0]['lines']:,} lines), -j {args.jobs}")
        columns = ["run", "seconds", "lines/s", "peak RSS tree MiB", "peak RSS largest MiB", "from cache"]
        print("  ".join(f"{c:>26}" if n == 0 else f"{c:>20}" for n, c in enumerate(columns)))
        for row in results:
            print(
                "  ".join(f"{row[c]!s:>26}" if n == 0 else f"{row[c]!s:>20}" for n, c in enumerate(columns))
            )
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

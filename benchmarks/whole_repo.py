"""Whole-repository figures: CUDA uses outside Python before and after a migration, by file kind.

    python benchmarks/whole_repo.py TREE [TREE ...] [-v 2.1.0] [--cmd gpu2npu]

For each tree: migrate it (the installed command), then per file kind count the files, the
CUDA words (cuda, nccl, cudnn, nvcc, nvidia-smi and the CUDA-only packages flash-attn, xformers,
apex, triton, pynvml, cupy, bitsandbytes) before and after, the files changed, the files with a
report row (change or manual work), and whether every changed file that parsed before still
parses with its own parser (bash for shell, YAML, JSON, TOML, nbformat, ast for Python;
requirement lines with packaging). Words left after the migration are in comments, prose and
values no rule may change; "silent" counts those in files that got no row at all.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

# CUDA words and the CUDA-only packages of the dependency plan (gpu2npu's MENTION_PATTERN).
WORDS = re.compile(
    rb"(?i)(?<![a-z])(cuda|nccl|cudnn|nvcc|nvidia-smi|flash[-_]attn|xformers|apex|triton|pynvml|cupy"
    rb"|bitsandbytes)(?![a-z])"
)
REPORTS = "transplant_result_file"


def parses(kind: str, data: bytes) -> bool:
    """Whether ``data`` reads with the parser of its kind (True where there is none)."""
    try:
        if kind == "python":
            ast.parse(data)
        elif kind == "shell":
            import bashlex

            bashlex.parse(data.decode("utf-8", "surrogateescape"))
        elif kind in ("yaml", "conda-env"):
            import yaml

            list(yaml.safe_load_all(data))
        elif kind == "json":
            json.loads(data)
        elif kind in ("toml", "packaging") and not data.lstrip().startswith(b"["):
            import tomlkit

            tomlkit.parse(data.decode("utf-8"))
        elif kind == "notebook":
            import nbformat

            nbformat.validate(nbformat.reads(data.decode("utf-8"), as_version=nbformat.NO_CONVERT))
        elif kind == "requirements":
            from packaging.requirements import Requirement

            for line in data.decode("utf-8", "replace").splitlines():
                line = line.split(" #", 1)[0].strip()
                if line and not line.startswith(("#", "-", "git+", "http", ".", "/")) and "@" not in line:
                    Requirement(line)
    except Exception:
        return False
    return True


def kinds_of(report: dict) -> dict:
    return {entry["file"]: entry["kind"] for entry in report["files"] + report["other_files"]}


def rows_by_file(reports: Path) -> set:
    files = set()
    for name in ("change_list.csv", "manual_work.csv"):
        with open(reports / name, newline="", encoding="utf-8") as handle:
            files |= {row[0] for row in list(csv.reader(handle))[1:]}
    return files


def measure(tree: Path, command: list, version: str) -> dict:
    out = Path(tempfile.mkdtemp(prefix="whole-repo-"))
    try:
        started = time.monotonic()
        subprocess.run(
            command + ["migrate", "-i", str(tree), "-o", str(out), "-v", version, "-j", "2"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        seconds = time.monotonic() - started
        migrated = out / f"{tree.name}_msft"
        report = json.loads((migrated / REPORTS / "report.json").read_text(encoding="utf-8"))
        with_rows = rows_by_file(migrated / REPORTS)
        table = defaultdict(lambda: defaultdict(int))
        for rel, kind in kinds_of(report).items():
            before, after = (tree / rel).read_bytes(), (migrated / rel).read_bytes()
            row = table[kind]
            row["files"] += 1
            row["words before"] += len(WORDS.findall(before))
            row["words after"] += len(WORDS.findall(after))
            row["changed"] += before != after
            row["with rows"] += rel in with_rows
            if rel not in with_rows:
                row["silent words"] += len(WORDS.findall(after))
            if before != after:
                parsed_before = parses(kind, before)
                row["parsed before"] += parsed_before  # a script bashlex cannot read before stays so
                row["parse after"] += parsed_before and parses(kind, after)
        return {"seconds": seconds, "kinds": {k: dict(v) for k, v in sorted(table.items())}}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def print_table(tree: Path, figures: dict) -> None:
    columns = ["files", "changed", "with rows", "words before", "words after", "silent words"]
    print(f"\n{tree} ({figures['seconds']:.1f} s)")
    print(f"  {'kind':<13}" + "".join(f"{c:>14}" for c in columns) + f"{'parse ok':>14}")
    for kind, row in figures["kinds"].items():
        ok = f"{row.get('parse after', 0)}/{row.get('parsed before', 0)}"
        print(f"  {kind:<13}" + "".join(f"{row.get(c, 0):>14}" for c in columns) + f"{ok:>14}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("-v", "--version", default="2.1.0")
    parser.add_argument(
        "--cmd", default="gpu2npu", help="how to run gpu2npu (default: the installed command)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    results = {}
    for tree in args.trees:
        results[str(tree)] = measure(tree.resolve(), args.cmd.split(), args.version)
        print_table(tree, results[str(tree)])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

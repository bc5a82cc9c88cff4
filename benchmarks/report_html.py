"""How long report.html takes to write and to open, for a migrated tree.

    python benchmarks/report_html.py TREE [--runs 3]

Migrates TREE (with the installed gpu2npu, into a temporary folder), then opens its
report.html in headless Chromium RUNS times and prints, per run, the milliseconds from
navigation to a usable page (the page's script has run: the findings sort and filter) and to the
load event, as the page itself measures them (performance.now()), with the page's size and the
time the migration took. Needs Chromium (Debian: apt-get install chromium)."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpu2npu.report.html import HEADLESS_CHROMIUM

FLAGS = (*HEADLESS_CHROMIUM, "--dump-dom")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("Chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        gpu2npu = Path(sys.executable).with_name("gpu2npu")
        subprocess.run(
            [str(gpu2npu), "migrate", "-i", str(args.tree), "-o", scratch], check=True, capture_output=True
        )
        migrate_s = time.perf_counter() - started
        (output,) = Path(scratch).glob("*_msft")
        page = output / "transplant_result_file" / "report.html"
        files = sum(1 for p in output.rglob("*") if p.is_file())
        size = page.stat().st_size / 1e6
        print(f"{args.tree.name}: {files} files, migrate {migrate_s:.1f} s, report.html {size:.1f} MB")
        for run in range(args.runs):
            profile = Path(scratch) / f"profile{run}"
            dom = subprocess.run(
                [chromium, *FLAGS, f"--user-data-dir={profile}", page.as_uri()],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            body = re.search(r"<body[^>]*>", dom).group(0)
            ready = re.search(r'data-ready="(\d+)"', body).group(1)
            loaded = re.search(r'data-loaded="(\d+)"', body).group(1)
            print(f"run {run + 1}: usable after {ready} ms, loaded after {loaded} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

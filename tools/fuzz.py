#!/usr/bin/env python3
"""The long fuzzing run: generated programs (and random bytes) through the migration, with the
properties of tests/fuzzing.py; prints cases/s and every failure.

    python tools/fuzz.py [--programs 20000] [--bytes 20000] [--seed 0] [--chunk 1000]

Needs the test extra (hypothesis, hypothesmith). Exit status 1 when a case failed.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRESS_EVERY = 1000
sys.path.insert(0, str(ROOT / "tests"))

from fuzzing import check_migration, programs  # noqa: E402
from helpers import builtin_index  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def run(strategy, count: int, wrap, chosen_seed: int, index, chunk_size: int = 1000) -> tuple:
    """(cases, distinct cases, failures, seconds); each failure is printed with its input. The
    cases are drawn in chunks of ``chunk_size``, each a fresh Hypothesis run with a seed of its own: one
    long run slows down and grows without bound (its record of every example drawn), while a
    chunk runs at the speed of a fresh start."""
    tally = {"cases": 0, "failures": 0}
    seen = set()

    def check(data):
        tally["cases"] += 1
        seen.add(hashlib.sha256(wrap(data)).digest())
        if tally["cases"] % PROGRESS_EVERY == 0:  # a long run shows that it is alive
            print(f"  {tally['cases']} cases, {tally['failures']} failure(s)", flush=True)
        try:
            check_migration(wrap(data), index)
        except Exception as exc:  # report and go on: one run finds them all
            tally["failures"] += 1
            print(f"FAILURE {type(exc).__name__}: {exc}\n{wrap(data)!r}\n", flush=True)

    start = time.perf_counter()
    for number, first in enumerate(range(0, count, chunk_size)):
        examples = min(chunk_size, count - first)
        chunk = seed(chosen_seed * 1_000_003 + number)(
            settings(
                max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
            )(given(strategy)(check))
        )
        chunk()
    return tally["cases"], len(seen), tally["failures"], time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=20000)
    parser.add_argument("--bytes", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=1000, help="cases per Hypothesis run")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # the generated programs' own SyntaxWarnings
    index = builtin_index()
    failed = 0
    suites = [
        ("programs", programs(), args.programs, lambda data: data),
        ("bytes", st.binary(max_size=4000), args.bytes, lambda data: b"import torch\nx = y.cuda()\n" + data),
    ]
    for name, strategy, count, wrap in suites:
        if count <= 0:
            continue
        cases, distinct, failures, seconds = run(strategy, count, wrap, args.seed, index, args.chunk)
        failed += failures
        rate = cases / seconds
        print(
            f"{name}: {cases} cases ({distinct} distinct) in {seconds:.0f} s ({rate:.1f} cases/s), ", end=""
        )
        print(f"{failures} failure(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

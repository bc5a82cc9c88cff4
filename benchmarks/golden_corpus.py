"""msFmkTransplt's golden corpus, migrated the way its own test and its measured timings do.

    python benchmarks/golden_corpus.py NET_DIR [--cmd gpu2npu] [-v 2.1.0] [-j 2] [--json out.json]

NET_DIR is the anchor's ``test/msFmkTransplt/resources/net`` (public, in Ascend/msprobe; take it
from commit 81f0042c, which anchor-spec.md section 19 measured: 26 nets compared, 327 .py files,
47,657 lines). Two measurements, both cold (``--no-cache``, fresh output folders):

1. per net, one command each, in sequence, as the anchor was timed (1,155 s in all): ``-v 2.1.0``,
   and the five ``*_multi`` nets in the distributed mode with ``-t model`` and their main
   scripts; ``barlowtwins_amp`` (no golden) is left out, as in the anchor's test;
2. the corpus as one tree: the 26 nets in one folder, one ``migrate`` (what migrating 47,657
   lines costs once the fixed start-up cost is paid once).

Per run: wall seconds and the peak RSS of the largest process. The start-up cost is measured
too: ``migrate`` of a one-line file.
"""

from __future__ import annotations

import argparse
import json
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

# The main scripts of the distributed nets. The anchor's test names main.py for FOTS_MS_multi,
# whose training loop is in train.py (main.py calls its fit()): gpu2npu asks for the script with
# the loop, so train.py here.
MAIN_SCRIPTS = {
    "ID0338_CarPeting_Pytorch_FOTS_MS_multi": "train.py",
    "ID0339_CarPeting_Pytorch_EAST_multi": "train_ICDAR15.py",
    "ID0476_CarPeting_Pytorch_3D_nested_unet_multi": "train.py",
    "ID0478_CarPeting_Pytorch_3D_attentionnet_multi": "train.py",
    "ID0669_CarPeting_Pytorch_GENet_multi": "train.py",
}
LEFT_OUT = {"barlowtwins_amp"}  # no golden output in the anchor


def nets(net_dir: Path) -> List[Path]:
    return sorted(p for p in net_dir.iterdir() if p.is_dir() and p.name not in LEFT_OUT)


def migrate_argv(cmd: List[str], net: Path, out: Path, version: str, jobs: int) -> List[str]:
    argv = cmd + ["migrate", "-i", str(net), "-o", str(out), "-v", version, "-j", str(jobs), "--no-cache"]
    if net.name in MAIN_SCRIPTS:
        argv += ["distributed", "-m", str(net / MAIN_SCRIPTS[net.name]), "-t", "model"]
    return argv


def timed(argv: List[str]) -> Dict[str, float]:
    result, code, out, err = run_once(argv, poll_memory=True)
    if code != 0:
        fail_run(argv, code, out, err)
    return {"seconds": result.seconds, "peak MiB": (result.largest_proc_kib or 0) / 1024}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("net_dir", type=Path)
    add_run_options(parser)
    args = parser.parse_args()
    cmd = resolve_command(args.cmd)
    corpus = nets(args.net_dir.resolve())
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpu2npu-golden-") as scratch:
        scratch = Path(scratch)
        (scratch / "one.py").write_text("import torch\n")
        startup = timed(migrate_argv(cmd, scratch / "one.py", scratch / "out-one", args.version, args.jobs))
        for net in corpus:
            files, lines = count_python_sources(net)
            figures = timed(migrate_argv(cmd, net, scratch / "out" / net.name, args.version, args.jobs))
            rows.append({"net": net.name, "files": files, "lines": lines, **figures})
        together = scratch / "golden"
        together.mkdir()
        for net in corpus:
            shutil.copytree(net, together / net.name, symlinks=True)
        files, lines = count_python_sources(together)
        one_tree = timed(migrate_argv(cmd, together, scratch / "out-together", args.version, args.jobs))
    print(f"{'net':<48} {'files':>5} {'lines':>6} {'seconds':>8} {'peak MiB':>9}")
    for row in rows:
        sizes = f"{row['files']:>5} {row['lines']:>6}"
        print(f"{row['net']:<48} {sizes} {row['seconds']:>8.2f} {row['peak MiB']:>9.1f}")
    total = sum(row["seconds"] for row in rows)
    each = f"start-up alone {startup['seconds']:.2f} s a run"
    print(f"\nper net, in sequence: {len(rows)} runs, {total:.1f} s ({each})")
    print(
        f"one tree ({files} files, {lines:,} lines): {one_tree['seconds']:.2f} s, "
        f"{lines / one_tree['seconds']:,.0f} lines/s, peak {one_tree['peak MiB']:.1f} MiB"
    )
    if args.json:
        summary = {"startup": startup, "per_net": rows, "per_net_total": total, "one_tree": one_tree}
        args.json.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Generate src/gpu2npu/api_support/aliases.csv: other spellings of the torch names the API
table (api_support.csv) lists. The lists name a class or function where it is defined or where
one package exports it, and code names it another way: ``torch.nn.Parameter`` is the table's
``torch.nn.parameter.Parameter``, ``torch.utils.data.sampler.BatchSampler`` its
``torch.utils.data.BatchSampler``. Two spellings are aliases only when torch gives the same
object for both, so this needs torch installed:

    pip install torch==2.13.0
    python tools/gen_aliases.py            # rewrite aliases.csv
    python tools/gen_aliases.py --check    # exit 1 if aliases.csv is not what torch gives

Only classes and functions are followed (a constant such as ``True`` is many names' value).
"""

from __future__ import annotations

import argparse
import csv
import importlib
import inspect
import io
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "src" / "gpu2npu" / "api_support" / "api_support.csv"
OUTPUT = ROOT / "src" / "gpu2npu" / "api_support" / "aliases.csv"
# The packages whose exports code names directly (torch.nn.Parameter, torch.utils.data.Sampler).
PUBLIC_MODULES = (
    "torch torch.nn torch.nn.init torch.nn.utils torch.nn.parallel torch.optim torch.optim.lr_scheduler "
    "torch.utils.data torch.utils.checkpoint torch.utils.tensorboard torch.autograd torch.distributed "
    "torch.multiprocessing torch.amp torch.cuda torch.cuda.amp torch.profiler torch.distributions "
    "torch.linalg torch.fft torch.special"
).split()


def table_names() -> List[str]:
    with open(TABLE, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        next(reader)
        return [row[0] for row in reader]


def resolve(name: str) -> Optional[object]:
    """The object a dotted name gives (the longest importable module, then attributes)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:end]))
        except Exception:  # noqa: BLE001 - any failing import means: not a module name
            continue
        for attribute in parts[end:]:
            try:
                value = getattr(value, attribute)
            except Exception:  # noqa: BLE001 - a lazy attribute may raise (torch.cuda without CUDA)
                return None
        return value
    return None


def followed(value: object) -> bool:
    return inspect.isclass(value) or inspect.isfunction(value) or inspect.isbuiltin(value)


def spellings(value: object) -> Iterable[str]:
    """Where the object is defined (``module.qualname``), when that is a plain dotted name."""
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        yield f"{module}.{qualname}"


def public_exports() -> Iterable[Tuple[str, object]]:
    for module_name in PUBLIC_MODULES:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001 - an optional part (tensorboard) may be missing
            print(f"skipped {module_name}: it does not import here", file=sys.stderr)
            continue
        for attribute in sorted(vars(module)):
            if not attribute.startswith("__"):
                yield f"{module_name}.{attribute}", vars(module)[attribute]


def aliases() -> Dict[str, str]:
    """Spelling -> the table's name for the same object, for spellings the table lacks."""
    names = table_names()
    listed = set(names)
    by_object: Dict[int, List[str]] = {}
    keep_alive = []  # ids stay unique only while the objects live
    for name in names:
        value = resolve(name)
        if followed(value):
            keep_alive.append(value)
            by_object.setdefault(id(value), []).append(name)
    found: Dict[str, str] = {}
    candidates = [(name, resolve(name)) for name in names]
    candidates += list(public_exports())
    for spelled, value in candidates:
        if not followed(value) or id(value) not in by_object:
            continue
        for spelling in [spelled, *spellings(value)]:
            if spelling not in listed and spelling.startswith("torch.") and not _internal(spelling):
                found.setdefault(spelling, _nearest(spelling, by_object[id(value)]))
    return dict(sorted(found.items()))


def _nearest(spelling: str, names: List[str]) -> str:
    """Of the table's names for one object, the one sharing most leading parts with the spelling:
    torch.nn.modules.module.Module.double is torch.nn.Module.double, not the inherited
    torch.jit.ScriptModule.double."""
    parts = spelling.split(".")

    def shared(name: str) -> int:
        return next((n for n, (a, b) in enumerate(zip(parts, name.split("."))) if a != b), len(parts))

    return min(names, key=lambda name: (-shared(name), name))


def _internal(spelling: str) -> bool:
    """A name code does not write: through a private module or class (torch._C._fft.fft_fft,
    torch._VariableFunctionsClass.add, torch._tensor.Tensor.add)."""
    return any(part.startswith("_") for part in spelling.split(".")[1:-1])


def render(found: Dict[str, str]) -> str:
    import torch

    out = io.StringIO()
    out.write(f"# generated by tools/gen_aliases.py with torch {torch.__version__}; do not edit\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["name", "table_name"])
    writer.writerows(found.items())
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if aliases.csv is out of date")
    args = parser.parse_args()
    text = render(aliases())
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        strip = lambda t: t.split("\n", 1)[-1]  # noqa: E731 - the torch version line may differ
        if strip(current) != strip(text):
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run python tools/gen_aliases.py")
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}: {text.count(chr(10)) - 2} aliases")
    return 0


if __name__ == "__main__":
    sys.exit(main())

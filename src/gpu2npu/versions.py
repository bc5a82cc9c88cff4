"""Target torch versions: parsing -v, short forms, and version ranges in rule files."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Tuple

import yaml

from gpu2npu.errors import UserError

VERSIONS_FILE = Path(__file__).resolve().parent / "versions.yaml"

VersionKey = Tuple[int, ...]


def version_key(version: str) -> VersionKey:
    return tuple(int(part) for part in version.split("."))


@lru_cache(maxsize=1)
def known_versions() -> tuple:
    with open(VERSIONS_FILE, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    return tuple(sorted((str(v) for v in data["versions"]), key=version_key))


def default_version() -> str:
    return known_versions()[-1]


def resolve_version(text: str) -> str:
    """Turn '2.1', '2.1.0' or 'v2.1' into a known full version, or raise a UserError."""
    wanted = text.strip().lstrip("vV")
    for version in known_versions():
        if wanted == version or version.startswith(wanted + ".") and wanted.count(".") == 1:
            return version
    raise UserError(
        f"unknown torch version '{text}'",
        "choose one of " + ", ".join(known_versions()),
    )


_RANGE_PART = re.compile(r"^\s*(>=|<=|>|<|==)?\s*v?([0-9]+(?:\.[0-9]+)*)\s*$")


def parse_version_spec(spec) -> frozenset:
    """The set of known versions a rule's ``versions`` field selects.

    Accepts ``all``, a list of versions, or a comma-separated range such as
    ``">=2.1.0"`` or ``">=2.1, <2.7.1"``. Raises ValueError with a readable message.
    """
    versions = known_versions()
    if spec is None or spec == "all":
        return frozenset(versions)
    if isinstance(spec, (list, tuple)):
        return frozenset(_one_version(str(item)) for item in spec)
    if not isinstance(spec, str):
        raise ValueError(f"'versions' must be 'all', a list or a range string, not {spec!r}")
    selected = set(versions)
    for part in spec.split(","):
        match = _RANGE_PART.match(part)
        if not match:
            raise ValueError(f"cannot read version range part {part.strip()!r} (use e.g. '>=2.1.0')")
        op, bound = match.group(1) or "==", match.group(2)
        selected &= set(_compare(versions, op, bound))
    return frozenset(selected)


def _one_version(text: str) -> str:
    try:
        return resolve_version(text)
    except UserError as exc:
        raise ValueError(str(exc)) from None


def _compare(versions: Iterable[str], op: str, bound: str):
    if op == "==":
        return [_one_version(bound)]
    limit = version_key(bound)
    tests = {
        ">=": lambda k: k >= limit,
        ">": lambda k: k > limit,
        "<=": lambda k: k <= limit,
        "<": lambda k: k < limit,
    }
    return [v for v in versions if tests[op](version_key(v))]


def compact_versions(selected) -> "str | list":
    """The shortest spelling of a set of versions: 'all', '>=2.1.0', '<=2.7.1',
    '>=2.1.0, <=2.6.0' when contiguous, else the sorted list."""
    ordered = list(known_versions())
    chosen = [v for v in ordered if v in set(selected)]
    if chosen == ordered:
        return "all"
    first, last = ordered.index(chosen[0]), ordered.index(chosen[-1])
    if chosen != ordered[first : last + 1]:
        return chosen
    if last == len(ordered) - 1:
        return f">={chosen[0]}"
    if first == 0:
        return f"<={chosen[-1]}"
    return f">={chosen[0]}, <={chosen[-1]}"

"""A baseline: findings the team has accepted. Later runs fail only on findings not in it.

Entries are fingerprints of (file, rule, API, code of the line), counted, so an unrelated edit
that moves lines keeps them, and a second copy of the same finding in a file is new.

A baseline is user input (often committed, sometimes hand-edited), so reading it is defensive:
every way it can be wrong ends as one UserError line, never a hang, a traceback or a write.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections import Counter
from pathlib import Path
from typing import Iterable, List, Optional

from gpu2npu.commands.check.findings import Finding
from gpu2npu.errors import UserError, shown
from gpu2npu.project.output import write_atomically
from gpu2npu.source.files import FileTooLarge, NotRegularFile, read_regular_file

FORMAT_VERSION = 1
# A written baseline takes a few hundred bytes per finding: 64 MiB is far beyond any real one,
# and reading stops there, so a huge or endless file cannot exhaust memory.
MAX_BYTES = 64 * 1024 * 1024
# A count is how often one finding repeats; more than a billion is not a count but garbage.
MAX_COUNT = 1_000_000_000
# Longer digit strings are refused before int() sees them (int() of a huge one is slow).
MAX_INT_DIGITS = 20
RECREATE = "recreate it with --update-baseline"
PASS_A_FILE = "pass the baseline JSON file"


def write_baseline(path: Path, findings: Iterable[Finding]) -> None:
    _check_writable(path)
    counts = Counter(f.fingerprint for f in findings)
    entries = []
    for finding in sorted({f.fingerprint: f for f in findings}.values()):
        entries.append(
            {
                "fingerprint": finding.fingerprint,
                "count": counts[finding.fingerprint],
                "file": finding.file,
                "rule": finding.rule,
                "api": finding.api,
                "code": finding.code,
            }
        )
    data = {"tool": "gpu2npu", "baseline_version": FORMAT_VERSION, "findings": entries}
    _write_whole(path, shown(json.dumps(data, indent=2) + "\n"))


def _write_whole(path: Path, text: str) -> None:
    """The new baseline in place of the old one, whole or not at all."""
    try:
        write_atomically(path, text.encode("utf-8"))
    except OSError as exc:
        raise _unwritable(path, _reason(exc)) from None


def _check_writable(path: Path) -> None:
    """Refuse targets that open() would hang on (a FIFO) or fail on, before anything is written."""
    target = _stat_or_none(path, path)
    if target is not None and stat.S_ISDIR(target.st_mode):
        raise UserError(f"baseline '{path}' is a directory", "name a file to write with --baseline")
    if target is not None and not stat.S_ISREG(target.st_mode):
        raise UserError(f"baseline '{path}' is not a regular file", "name a file to write with --baseline")
    folder = _stat_or_none(path.parent, path)
    if folder is None:
        raise _unwritable(path, f"the folder '{path.parent}' does not exist")
    if not stat.S_ISDIR(folder.st_mode):
        raise _unwritable(path, f"'{path.parent}' is not a directory")


def _stat_or_none(path: Path, baseline: Path) -> Optional[os.stat_result]:
    """None when nothing is there; other failures (a name too long, no permission) are errors."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _unwritable(baseline, _reason(exc)) from None


def _unwritable(path: Path, why: str) -> UserError:
    return UserError(f"baseline '{path}' cannot be written ({why})", "name a file in a writable folder")


def read_baseline(path: Path) -> Counter:
    """The accepted fingerprints and their counts."""
    text = _decode(path, _read_capped(path))
    return _accepted(path, _parse(path, text))


def _read_capped(path: Path) -> bytes:
    """The file's bytes: only a regular file (a FIFO or /dev/zero would block or never end), and
    at most MAX_BYTES of it."""
    try:
        return read_regular_file(path, MAX_BYTES)
    except FileNotFoundError:
        raise UserError(f"baseline '{path}' does not exist", "create it with --update-baseline") from None
    except NotRegularFile as exc:
        what = "a directory" if exc.kind == "a directory" else "not a regular file"
        raise UserError(f"baseline '{path}' is {what}", PASS_A_FILE) from None
    except FileTooLarge:
        raise _too_large(path) from None
    except OSError as exc:
        raise _unreadable(path, exc) from None


def _too_large(path: Path) -> UserError:
    return UserError(f"baseline '{path}' is larger than {MAX_BYTES // (1024 * 1024)} MiB", RECREATE)


def _unreadable(path: Path, exc: OSError) -> UserError:
    return UserError(
        f"baseline '{path}' cannot be read ({_reason(exc)})", "check the path and its permissions"
    )


def _reason(exc: OSError) -> str:
    return (exc.strerror or type(exc).__name__).lower()


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")  # -sig: a BOM some Windows editors add is harmless
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start]
        raise UserError(
            f"baseline '{path}' is not UTF-8 text (byte 0x{byte:02x} at offset {exc.start})", RECREATE
        ) from None


class _BadNumber(Exception):
    """A number no baseline holds; raised from the JSON parser's hooks."""


def _parse(path: Path, text: str):
    try:
        return json.loads(
            text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_bounded_int
        )
    except _BadNumber as exc:
        raise UserError(f"baseline '{path}' holds {exc}", RECREATE) from None
    except json.JSONDecodeError as exc:
        raise UserError(
            f"baseline '{path}' is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
            RECREATE,
        ) from None
    except RecursionError:  # the parser recurses per nesting level; a baseline has three
        raise UserError(
            f"baseline '{path}' is nested too deeply to be a gpu2npu baseline", RECREATE
        ) from None


def _no_constant(name: str):
    # Python's json accepts NaN, Infinity and -Infinity, which are not JSON.
    raise _BadNumber(f"the non-finite number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to inf
        raise _BadNumber(f"the out-of-range number {_shorten(text)}")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _BadNumber(f"the out-of-range number {_shorten(text)}")
    return int(text)


def _shorten(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:20]}... ({len(text)} characters)"


def _accepted(path: Path, data) -> Counter:
    """Check the document's shape and return its counted fingerprints."""

    def wrong(problem: str) -> UserError:
        return UserError(f"baseline '{path}' is not a gpu2npu baseline: {problem}", RECREATE)

    if not isinstance(data, dict):
        raise wrong(f"the top level is {_kind(data)}, not an object")
    for key in ("baseline_version", "findings"):
        if key not in data:
            raise wrong(f"the key '{key}' is missing")
    if not _is_int(data["baseline_version"]) or data["baseline_version"] != FORMAT_VERSION:
        raise wrong(f"baseline_version is {_show(data['baseline_version'])}, not {FORMAT_VERSION}")
    if not isinstance(data["findings"], list):
        raise wrong(f"findings is {_kind(data['findings'])}, not a list")
    accepted = Counter()
    for number, entry in enumerate(data["findings"]):
        problem = _entry_problem(entry)
        if problem:
            raise wrong(f"findings[{number}] {problem}")
        accepted[entry["fingerprint"]] = entry["count"]
    return accepted


def _entry_problem(entry) -> str:
    """What is wrong with one entry of findings ('' when nothing is)."""
    if not isinstance(entry, dict):
        return f"is {_kind(entry)}, not an object"
    for key in ("fingerprint", "count"):
        if key not in entry:
            return f"has no '{key}'"
    if not isinstance(entry["fingerprint"], str) or not entry["fingerprint"]:
        return f"fingerprint is {_show(entry['fingerprint'])}, not a non-empty string"
    if not _is_int(entry["count"]) or not 1 <= entry["count"] <= MAX_COUNT:
        return f"count is {_show(entry['count'])}, not a whole number from 1 to {MAX_COUNT}"
    return ""


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is not a number


def _kind(value) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _show(value) -> str:
    """A value as JSON, short enough for one error line."""
    return (
        _shorten(json.dumps(value))
        if isinstance(value, (str, int, float, bool, type(None)))
        else _kind(value)
    )


def new_findings(findings: List[Finding], accepted: Counter) -> List[Finding]:
    """The findings beyond what the baseline accepts (each accepted fingerprint, count times)."""
    left = Counter(accepted)
    fresh = []
    for finding in findings:
        if left[finding.fingerprint] > 0:
            left[finding.fingerprint] -= 1
        else:
            fresh.append(finding)
    return fresh

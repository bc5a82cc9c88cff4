"""``migrate --patch FILE``: the migration as one unified diff in git's format, which ``git apply``
and ``patch -p1`` apply to the input tree to give the migrated tree (its reports folder aside).

Bytes in, bytes out: lines end at ``\\n`` only (a ``\\r`` stays in its line, so CRLF and lone-CR
files round-trip), text that is not UTF-8 is kept as it is, and a last line without a newline is
marked as git marks it. Names git would quote are quoted as git quotes them."""

from __future__ import annotations

import difflib
from typing import Iterable, List, Optional, Tuple

NO_NEWLINE = b"\\ No newline at end of file\n"
FILE_MODE = {False: b"100644", True: b"100755"}
# C escapes git writes in a quoted name; other control bytes and non-ASCII bytes are octal
ESCAPES = {0x07: b"\\a", 0x08: b"\\b", 0x09: b"\\t", 0x0A: b"\\n", 0x0B: b"\\v", 0x0C: b"\\f", 0x0D: b"\\r"}
ESCAPES.update({ord('"'): b'\\"', ord("\\"): b"\\\\"})


def tree_patch(files: Iterable[Tuple[str, Optional[bytes], bytes, bool]]) -> bytes:
    """The patch of ``(rel, old bytes or None for a new file, new bytes, executable)``, in order."""
    return b"".join(file_patch(*item) for item in files)


def file_patch(rel: str, old: Optional[bytes], new: bytes, executable: bool = False) -> bytes:
    """One file's diff; empty when nothing changed."""
    if old == new:
        return b""
    name = rel.encode("utf-8", "surrogateescape")
    header = [b"diff --git " + _quoted(b"a/" + name) + b" " + _quoted(b"b/" + name) + b"\n"]
    if old is None:
        header += [b"new file mode " + FILE_MODE[executable] + b"\n", b"--- /dev/null\n"]
    else:
        header.append(b"--- " + _path_line(b"a/" + name) + b"\n")
    header.append(b"+++ " + _path_line(b"b/" + name) + b"\n")
    hunks = difflib.diff_bytes(difflib.unified_diff, _lines(old or b""), _lines(new), lineterm=b"\n")
    body = [_marked(line) for number, line in enumerate(hunks) if number >= 2]  # after ---/+++
    return b"".join(header + body)


def _lines(data: bytes) -> List[bytes]:
    """The lines of ``data``, each with its ``\\n``; the last one without, where the file has none."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    return lines + [parts[-1]] if parts[-1] else lines


def _marked(line: bytes) -> bytes:
    """A hunk line; a content line without its newline is the file's last: git's marker follows."""
    return line if line.endswith(b"\n") else line + b"\n" + NO_NEWLINE


def _quoted(path: bytes) -> bytes:
    if not any(byte in ESCAPES or byte < 0x20 or byte >= 0x7F for byte in path):
        return path
    escaped = b"".join(
        ESCAPES.get(byte) or (b"\\%03o" % byte if byte < 0x20 or byte >= 0x7F else bytes([byte]))
        for byte in path
    )
    return b'"' + escaped + b'"'


def _path_line(path: bytes) -> bytes:
    """The name on a ---/+++ line: git ends a name holding a space with a tab, so that patch(1)
    does not read what follows the space as a date."""
    quoted = _quoted(path)
    return quoted + b"\t" if b" " in path and quoted == path else quoted

"""The one exception family for mistakes a user can fix, and how names are shown.

The CLI prints these as a single line (``gpu2npu: error: <what>; <what to do>``) and exits
with status 2; anything else is a bug and keeps its traceback behind ``--debug``.

A file name that is not valid UTF-8 reaches Python with its bytes as surrogate escapes
(``b'\\xff.py'`` -> ``'b\\udcff.py'``); it is used as it is to open the file and shown with
those bytes escaped (``b\\xff.py``) in every report and message (``shown``, and the
``ESCAPE_BYTES`` error handler the CLI sets on its output streams).
"""

import codecs
import sys

ESCAPE_BYTES = "gpu2npu-escape-bytes"


def _escape_bytes(error: UnicodeError):
    """A surrogate-escaped byte as ``\\xNN``; any other unencodable character as ``\\uNNNN``."""
    text = error.object[error.start : error.end]
    return "".join(
        f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else f"\\u{ord(c):04x}" for c in text
    ), error.end


codecs.register_error(ESCAPE_BYTES, _escape_bytes)


def shown(text: str) -> str:
    """``text`` for a report or a message: encodable as UTF-8, file-name bytes escaped."""
    return text.encode("utf-8", ESCAPE_BYTES).decode("utf-8")


class UserError(Exception):
    """A problem with the user's input, flags or rule files."""

    exit_code = 2

    def __init__(self, what: str, todo: str = ""):
        super().__init__(what)
        self.what = what
        self.todo = todo

    def __str__(self) -> str:
        return f"{self.what}; {self.todo}" if self.todo else self.what


class RuleFileError(UserError):
    """A rule file that cannot be read or does not follow the schema."""

    def __init__(self, path, where: str, problem: str):
        location = f"{path}: {where}" if where else str(path)
        super().__init__(f"{location}: {problem}", "fix the rule file (see 'Rule files' in README.md)")


def output_error(path, exc: OSError) -> UserError:
    """An OS error while writing the output (permissions, a full disk, a file where a folder is
    needed, a name too long): the run stops and leaves no partial tree."""
    return UserError(
        f"cannot write the output '{path}' ({exc.strerror or exc})",
        "check that the output folder can be created and written and that the disk has room",
    )


def warn(what: str, todo: str = "") -> None:
    """One warning line on standard error (the run goes on): what happened; what to do."""
    print(f"gpu2npu: warning: {shown(what)}" + (f"; {todo}" if todo else ""), file=sys.stderr)

"""The one exception family for mistakes a user can fix.

The CLI prints these as a single line (``gpu2npu: error: <what>; <what to do>``) and exits
with status 2; anything else is a bug and keeps its traceback behind ``--debug``.
"""


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

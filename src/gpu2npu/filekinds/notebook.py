"""Jupyter notebooks (``*.ipynb``): the Python of their code cells, migrated like a script.

Cells are one program. A notebook runs its cells in one namespace, top to bottom: ``torch`` is
imported in one cell and used in the next, and a cell that calls ``torch.cuda.is_available()``
without importing torch itself must still be migrated (the Python engine resolves names through
the imports it sees). So the code cells are joined into one program, each separated from the
next by a marker statement, migrated in one pass of the Python engine, and split again at the
markers: ``import torch_npu`` is inserted once, after the first ``import torch`` (in its cell),
and every later cell is read with the names the earlier ones imported. Each cell is written
back on its own, so the joined program's order of statements never reaches the notebook (a
later ``from __future__`` import or a top-level ``await`` is a cell like the others). Should the
engine refuse the joined program, the cells it refuses alone are reported and kept, and the
others are joined again.

IPython syntax is kept byte for byte: escaped lines (magics, ``!`` shell lines, ``x?``) are
masked for the engine and put back after it (gpu2npu.filekinds._ipython); a ``%%bash`` cell is
shell, and a cell in another language (``%%html``, ``%%writefile``) is left as it is. A cell
that still does not parse is kept as it is and reported, and the others are migrated.

The notebook is checked with nbformat's schema (``nbformat.validate`` on the parsed JSON, not
``nbformat.reads``, which logs to stderr); a complaint about outputs or metadata, which the
migration neither reads nor writes, does not stop it. A notebook of format 3 or older (from
before PyTorch existed) is copied as it is. It is never written out from its parsed form: only
the ``source`` strings of the changed lines are replaced in the JSON text
(gpu2npu.filekinds._notebook_json), so outputs, metadata and layout stay identical. Rows point
at the .ipynb file's own lines (the JSON string of that source line), with ``cell N, line M``.

The API reports (unsupported and unknown APIs, advice, code the rules keep on CUDA) describe the
input, as for a .py file: the cells the engine migrates are analysed as they were written, as one
program (``context.analyse_python``, once per notebook), and each use is moved to the .ipynb line
of its source line. Cells the migration skips are not analysed, nor are IPython lines.

Shell lines (``!cmd``, ``files = !cmd``, ``%sx``, ``%system``, each with its continuation lines)
and the body of a ``%%bash`` cell are read by the shell kind (gpu2npu.filekinds.shell), as a
launch script is: environment variables renamed (EnvVarRenameRule) or reported
(EnvVarReportRule), option values changed (ConfigValueRule: ``--dist-backend nccl``), commands
reported (CommandReportRule: ``!nvidia-smi``). A ``%env`` line renames its variable, and one that
sets it is reported as ``export`` would be.
"""

from __future__ import annotations

import ast
import bisect
import json
import re
import warnings
from dataclasses import dataclass, field, replace
from typing import List, Optional, Tuple, Union

from gpu2npu.filekinds import FileKind
from gpu2npu.filekinds._ipython import PYTHON, SHELL, MaskedCell, mask_cell
from gpu2npu.filekinds._notebook_json import CellSource, NotebookText, apply_edits
from gpu2npu.filekinds.base import UNKNOWN, KindContext, KindOutcome, Reported, decode
from gpu2npu.filekinds.shell import ShellEdits, read_shell, report_unread
from gpu2npu.rewrite.changes import Change, Kept

NOT_MIGRATED = "not-migrated"
COPIED = "; copied unchanged"
CELL_MARKER = "_gpu2npu_notebook_cell_"
SEPARATOR = f"\n{CELL_MARKER}\n"
# Schema complaints the migration cannot make worse: it only edits code cells' sources.
HARMLESS_PLACES = frozenset({"outputs", "metadata", "attachments", "execution_count", "id"})
PYTHON_LANGUAGES = re.compile(r"(?i)i?python\d?")
UNCHANGED = re.compile(r";\s*(?:copied|kept) unchanged$")
# A %env line's variable, and whether a value follows it (%env NAME=1, %env NAME 1: set; %env NAME: read).
ENV_ARGUMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?=[ \t\r\n=]|$)([ \t]*=|[ \t]+(?=\S))?")


class Notebook(FileKind):
    name = "notebook"
    order = 10
    holds_code = True

    def claims(self, rel, head):
        return rel.lower().endswith(".ipynb")

    def migrate(self, data: bytes, rel: str, context: KindContext) -> KindOutcome:
        document = read_notebook(data)
        if isinstance(document, str):
            return KindOutcome(skipped=document)
        return _Migration(document, rel, context).run()


class _Unread(Exception):
    """Why a notebook is copied as it is (the skip reason)."""


def read_notebook(data: bytes) -> Union[NotebookText, str]:
    """The notebook's text with its cells located, or why it is not read (the skip reason)."""
    try:
        text = _utf8(data)
        notebook = _parsed(text)
        _check_notebook(notebook)
        return _located(text, notebook)
    except _Unread as exc:
        return str(exc)


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _invalid(f"not UTF-8 text at byte {exc.start}") from None


def _parsed(text: str):
    try:
        return json.loads(text[1:] if text.startswith("\ufeff") else text)
    except RecursionError:
        raise _invalid("nested too deeply") from None
    except ValueError as exc:
        raise _invalid(str(exc)) from None


def _check_notebook(notebook) -> None:
    """A notebook of format 4, valid where the migration reads and writes, of a Python kernel."""
    if not isinstance(notebook, dict) or not isinstance(notebook.get("nbformat"), int):
        raise _invalid("not a notebook: no nbformat version")
    if notebook["nbformat"] > 4:
        raise _invalid(f"format {notebook['nbformat']}: nbformat knows formats up to 4")
    if notebook["nbformat"] < 4:
        version = notebook["nbformat"]
        raise _Unread(f"a notebook of format {version}, from before PyTorch: convert it to format 4{COPIED}")
    import nbformat  # only for notebooks: it loads jsonschema

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nbformat warns of a missing cell id (and fills it in)
            nbformat.validate(notebook)
    except nbformat.ValidationError as exc:
        place = list(getattr(exc, "absolute_path", None) or [])
        if not _harmless(place):
            where = "/".join(str(part) for part in place) or "the notebook"
            raise _invalid(f"{where}: {getattr(exc, 'message', None) or exc}") from None
    except Exception as exc:  # noqa: BLE001 -- a validator failing on odd input: the file is not read
        raise _invalid(str(exc) or type(exc).__name__) from None
    language = _kernel_language(notebook.get("metadata"))
    if language and not PYTHON_LANGUAGES.fullmatch(language):
        raise _Unread(f"not a Python notebook (kernel language {language}){COPIED}")


def _harmless(place: list) -> bool:
    """Whether a schema complaint is about what the migration never reads nor writes."""
    return place[:1] == ["metadata"] or (
        place[:1] == ["cells"] and len(place) > 2 and place[2] in HARMLESS_PLACES
    )


def _located(text: str, notebook: dict) -> NotebookText:
    try:
        document = NotebookText(text)
    except (ValueError, IndexError, RecursionError) as exc:
        raise _invalid(str(exc)) from None
    if len(document.cells) != len(notebook["cells"]):
        raise _invalid("its cells could not be located in the text")
    return document


def _kernel_language(metadata) -> str:
    if not isinstance(metadata, dict):
        return ""
    for key, inner in (("kernelspec", "language"), ("language_info", "name")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(inner), str) and value[inner].strip():
            return value[inner].strip()
    return ""


def _invalid(reason: str) -> _Unread:
    return _Unread(f"invalid notebook ({_first_line(reason)}){COPIED}")


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= 160 else line[:157] + "..."


@dataclass
class _CodeCell:
    number: int  # 1-based, among all cells
    source: CellSource
    masked: MaskedCell
    new_lines: Optional[List[str]] = None  # None: unchanged
    changes: List[Change] = field(default_factory=list)


class _Migration:
    """One notebook's migration: the cells read, migrated, written back, and the rows."""

    def __init__(self, document: NotebookText, rel: str, context: KindContext):
        self.document = document
        self.rel = rel
        self.context = context
        self.outcome = KindOutcome()
        self.cells = [
            _CodeCell(number, source, mask_cell(source.text))
            for number, source in enumerate(document.cells, start=1)
            if source.cell_type == "code"
        ]
        self.migrated: List[_CodeCell] = []  # the cells the engine took, in order

    def run(self) -> KindOutcome:
        python = [cell for cell in self.cells if cell.masked.kind == PYTHON and self._parses(cell)]
        shell = [cell for cell in self.cells if cell.masked.kind == SHELL]
        for cell in python + shell:
            self._shell_and_env(cell)
        if python:
            self._migrate_python(python)
        if self.migrated:
            self._analyse(self.migrated)
        edits = []
        for cell in python + shell:
            edits += self.document.source_edits(cell.source, "\n".join(_final_lines(cell)))
            self.outcome.changes += cell.changes
        if edits:
            self.outcome.new_bytes = apply_edits(self.document.text, edits).encode("utf-8")
        self.outcome.changes.sort()
        self.outcome.reported.sort()
        self.outcome.lines = sum(len(cell.masked.lines) for cell in self.cells if cell.source.text)
        return self.outcome

    # -- Python ------------------------------------------------------------------------------------

    def _parses(self, cell: _CodeCell) -> bool:
        """Whether the masked cell is Python; if not, it is reported and kept as it is."""
        text = cell.masked.masked_text
        if not text.strip():
            return False
        try:
            ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            line = getattr(exc, "lineno", None) or 1
            reason = f"{getattr(exc, 'msg', None) or exc} at line {line}"
            self._not_migrated(cell, min(max(line, 1), len(cell.masked.lines)), reason)
            return False
        return True

    def _migrate_python(self, cells: List[_CodeCell]) -> None:
        """The cells migrated as one program. Should the engine refuse it, the cells it refuses
        on their own are reported and kept, and the others migrated together again (as a last
        resort, each on its own)."""
        if self._migrate_together(cells):
            return
        accepted = [cell for cell in cells if self._accepted_alone(cell)]
        if len(accepted) == len(cells) or not accepted or not self._migrate_together(accepted):
            for cell in accepted:
                self._migrate_together([cell])

    def _accepted_alone(self, cell: _CodeCell) -> bool:
        _, _, skipped, _ = self.context.migrate_python(cell.masked.masked_text.encode("utf-8"), self.rel)
        if skipped:
            self._not_migrated(cell, 1, skipped)
            cell.changes = []  # kept as it is: not even the notebook's own edits
            cell.new_lines = cell.masked.lines
        return not skipped

    def _migrate_together(self, cells: List[_CodeCell]) -> bool:
        """Migrate the cells as one program; False (nothing done) when the engine refuses it."""
        joined = SEPARATOR.join(cell.masked.masked_text for cell in cells)
        new, changes, skipped, kept = self.context.migrate_python(joined.encode("utf-8"), self.rel)
        if skipped:
            return False
        if new is not None:
            text = new.decode("utf-8")
            parts = text.split(SEPARATOR) if len(cells) > 1 else [text]
            if len(parts) != len(cells):  # a cell holds the marker line itself
                return False
            for cell, part in zip(cells, parts):
                cell.new_lines = cell.masked.restore(part)
        first_lines = list(_first_lines(cells))
        for change in changes:
            position = max(bisect.bisect_right(first_lines, change.start_line) - 1, 0)
            first = first_lines[position]
            self._record(cells[position], change, change.start_line - first + 1, change.end_line - first + 1)
        self._keep(kept, cells)
        self.migrated += cells
        return True

    # -- the API reports ---------------------------------------------------------------------------

    def _analyse(self, cells: List[_CodeCell]) -> None:
        """The API uses and kept code of the cells as written, at the .ipynb lines: the cells the
        engine migrated, joined again (those migrated one by one too: a later cell's names come
        from an earlier one's imports)."""
        joined = SEPARATOR.join(cell.masked.masked_text for cell in cells)
        calls, kept = self.context.analyse_python(joined.encode("utf-8"), self.rel)
        lines = _ProgramLines(cells)
        for call in calls:
            span = lines.span(call.start_line, call.end_line)
            if span is not None:
                cell, first, last = span
                self.outcome.calls.append(
                    replace(
                        call,
                        start_line=self._file_line(cell, first),
                        end_line=self._file_line(cell, last),
                        column=_source_column(cell, first, call.column),
                    )
                )
        self._keep(kept, cells)
        self.outcome.calls.sort()
        self.outcome.kept.sort()

    def _keep(self, kept: List[Kept], cells: List[_CodeCell]) -> None:
        """The kept code of the cells joined as one program, at the .ipynb lines; what the rules
        keep before the rewrite pass comes from both the migration and the analysis: once."""
        lines = _ProgramLines(cells)
        seen = {(item.line, item.key) for item in self.outcome.kept}
        for item in kept:
            span = lines.span(item.line, item.end_line)
            if span is not None:
                cell, first, last = span
                placed = replace(
                    item, line=self._file_line(cell, first), end_line=self._file_line(cell, last)
                )
                if (placed.line, placed.key) not in seen:
                    seen.add((placed.line, placed.key))
                    self.outcome.kept.append(placed)

    # -- the notebook's own edits and reports ------------------------------------------------------

    def _shell_and_env(self, cell: _CodeCell) -> None:
        """The cell's shell code and %env lines read with the shell kind's rules: its edits go
        into the lines put back after the migration, its rows to the notebook's lines."""
        found = _read_shell_code(cell.masked, self.context.index)
        if found is None:
            return
        outcome, new_lines = found
        for change in outcome.changes:
            self._record(cell, change, change.start_line, change.end_line)
        for row in outcome.reported:
            first, last = self._file_line(cell, row.line), self._file_line(cell, row.end_line)
            self.outcome.reported.append(
                replace(row, line=first, end_line=last, cell=_cell_label(cell, row.line))
            )
        for index, line in enumerate(new_lines):
            if line != cell.masked.lines[index]:
                cell.masked.restored[index] = line

    # -- rows --------------------------------------------------------------------------------------

    def _record(self, cell: _CodeCell, change: Change, first: int, last: int) -> None:
        """A change row at the .ipynb lines of the cell's lines ``first`` to ``last``."""
        count = len(cell.masked.lines)
        first, last = min(max(first, 1), count), min(max(last, first), count)
        cell.changes.append(
            Change(
                self._file_line(cell, first),
                self._file_line(cell, last),
                change.operation,
                change.message,
                change.rule,
                _cell_label(cell, first),
            )
        )

    def _not_migrated(self, cell: _CodeCell, line: int, reason: str) -> None:
        file_line = self._file_line(cell, line)
        reason = UNCHANGED.sub("", reason)  # the cell is kept as it is, not the file
        tip = f"the cell is not Python the migration can read ({_first_line(reason)}); migrate it by hand"
        self.outcome.reported.append(
            Reported(
                file_line,
                file_line,
                f"cell {cell.number}",
                tip,
                NOT_MIGRATED,
                UNKNOWN,
                _cell_label(cell, line),
            )
        )

    def _file_line(self, cell: _CodeCell, line: int) -> int:
        """The .ipynb line of the JSON string that holds the cell's line ``line`` (1-based)."""
        offset = sum(len(text) + 1 for text in cell.masked.lines[: line - 1])
        if not cell.source.strings:
            return self.document.line_of(cell.source.start)
        return self.document.line_of(cell.source.string_at(offset).start)


def _read_shell_code(masked: MaskedCell, index) -> Optional[Tuple[KindOutcome, List[str]]]:
    """The shell kind's outcome for the cell's shell code and %env lines (rows at the cell's
    lines), with the cell's lines after its edits; None when the cell has neither."""
    regions = _shell_regions(masked)
    env_lines = [(i, e.env_from) for i, e in sorted(masked.escapes.items()) if e.env_from is not None]
    if not regions and not env_lines:
        return None
    shell = _CellShellText(masked.lines)
    edits = ShellEdits(shell.data, shell.text, index)
    for first, start, last in regions:
        begin, end = shell.position(first, start), shell.line_end(last)
        report_unread(read_shell(shell.text[begin:end], begin, edits).unread, edits)
    for line, start in env_lines:
        _env_line(edits, shell.position(line, start))
    outcome = edits.outcome()
    new_lines = shell.lines_of(outcome.new_bytes) if outcome.new_bytes is not None else masked.lines
    return outcome, new_lines


def _shell_regions(masked: MaskedCell) -> List[Tuple[int, int, int]]:
    """(first line, where its shell code starts, last line) of each shell command of the cell:
    a shell line with its continuation lines (each read on its own, as IPython runs it), or a
    shell cell's body after its magic line."""
    regions: List[Tuple[int, int, int]] = []
    for index, start in masked.shell_lines():
        if regions and start == 0 and regions[-1][2] == index - 1:  # a continuation line
            regions[-1] = (regions[-1][0], regions[-1][1], index)
        else:
            regions.append((index, start, index))
    return regions


def _env_line(edits: ShellEdits, position: int) -> None:
    """A %env line whose argument starts at ``position``: the variable renamed, and reported
    where the line sets it (as ``export NAME=value`` would be)."""
    found = ENV_ARGUMENT.match(edits.text, position)
    if found is None:
        return
    if found.group(2):
        edits.variable_set(found.group(1), position)
    else:
        edits.rename(found.group(1), position)


class _CellShellText:
    """A cell's text as the shell kind reads a file: bytes, and their text decoded with
    ``surrogateescape``. The JSON may hold lone surrogates (``"\\ud800"``), which UTF-8 cannot
    encode: they travel as ``surrogatepass`` bytes and come back as they were."""

    def __init__(self, lines: List[str]):
        self.data = "\n".join(lines).encode("utf-8", "surrogatepass")
        self.text = decode(self.data)
        self.starts = [0]
        for line in self.text.split("\n")[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)
        self.source_lines = lines

    def position(self, index: int, column: int) -> int:
        """The position in ``text`` of the column ``column`` of the cell's line ``index``."""
        return self.starts[index] + len(_as_shell_text(self.source_lines[index][:column]))

    def line_end(self, index: int) -> int:
        """Past the line's end, its newline included (a CRLF line end is then a line end)."""
        return self.starts[index + 1] if index + 1 < len(self.starts) else len(self.text)

    @staticmethod
    def lines_of(data: bytes) -> List[str]:
        return data.decode("utf-8", "surrogatepass").split("\n")


def _as_shell_text(text: str) -> str:
    return decode(text.encode("utf-8", "surrogatepass"))


class _ProgramLines:
    """Which cell, and which line of it, each line of a joined program is."""

    def __init__(self, cells: List[_CodeCell]):
        self.cells = cells
        self.first_lines = list(_first_lines(cells))

    def span(self, start: int, end: int) -> Optional[Tuple[_CodeCell, int, int]]:
        """(cell, first line, last line in it) of the program's lines ``start`` to ``end``; None
        where ``start`` is not the cell's Python (a marker between cells, an IPython line)."""
        position = bisect.bisect_right(self.first_lines, start) - 1
        if position < 0:
            return None
        cell, first = self.cells[position], start - self.first_lines[position] + 1
        count = len(cell.masked.lines)
        if first > count or _is_escape(cell, first):
            return None
        return cell, first, min(max(end - self.first_lines[position] + 1, first), count)


def _is_escape(cell: _CodeCell, line: int) -> bool:
    """Whether the cell's line is an IPython line the engine saw as a placeholder (a %time
    line's statement is Python, seen as it is)."""
    escape = cell.masked.escapes.get(line - 1)
    return escape is not None and not escape.code_prefix


def _source_column(cell: _CodeCell, line: int, column: int) -> int:
    """The column of the cell's source line (the .ipynb file's column would add the position of
    its JSON string's quote and count escapes: the rows name the source line's own column). A
    %time line's statement stands after the magic there, not at the line's indent."""
    escape = cell.masked.escapes.get(line - 1)
    if escape is None or not escape.code_prefix:
        return column
    indent = len(escape.text) - len(escape.text.lstrip(" \t"))
    shift = len(escape.code_prefix.encode("utf-8"))  # ast columns count UTF-8 bytes
    return column + shift if column > indent else column


def _final_lines(cell: _CodeCell) -> List[str]:
    """The cell's lines as written back: migrated (or kept) by the engine, else the original
    lines with the notebook's own edits."""
    if cell.new_lines is not None:
        return cell.new_lines
    if cell.masked.kind == PYTHON:  # the engine changed nothing
        return cell.masked.restore(cell.masked.masked_text)
    return [cell.masked.current(index) for index in range(len(cell.masked.lines))]


def _first_lines(cells: List[_CodeCell]):
    """The line of the joined program on which each cell starts."""
    line = 1
    for cell in cells:
        yield line
        line += len(cell.masked.lines) + 1  # the cell, then the marker


def _cell_label(cell: _CodeCell, line: int) -> str:
    return f"cell {cell.number}, line {line}"

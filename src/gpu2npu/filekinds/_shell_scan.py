"""Shell text read without a parser: quotes, comments, here-documents and where statements end.

bashlex reads most of bash but not all of it (``case``, ``[[ ]]``, arrays, arithmetic, quoted
here-document delimiters). This scan gives the shell kind what it needs around the parser:

* a *view* of the text, of the same length, in which comments and here-document bodies are
  blanked (so nothing there is ever read, let alone edited), CRLF line ends are plain newlines and
  quoted here-document delimiters are unquoted (which bashlex cannot read);
* the spans of single-quoted text, which is data (bashlex reports ``$X`` inside ``'...'$Y``);
* the top-level statements (one per logical line), and the pieces of one statement, so that a
  script the parser refuses whole can be read piece by piece.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import List, Tuple

Span = Tuple[int, int]

# <<EOF, <<-EOF, << 'EOF', <<"EOF", <<\EOF (not the here-string <<<)
HEREDOC = re.compile(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([^\s'\"<>;&|()`]+))")
WORD_BREAKS = " \t\n;&|()<>"
# Words that open or close a compound command, and a case pattern (``a|b)``), at a piece's start.
PIECE_LEAD = re.compile(
    r"\s*(?:(?:if|then|elif|else|while|until|do|done|fi|esac|time|!|\{|\}|\(|\)|\(\(|\)\))(?=\s|$)\s*)*"
    r"(?:\(?[^\s()'\"|;&]+(?:\|[^\s()'\"|;&]+)*\)(?!\))\s*)?"
)
CLOSERS = {"fi", "done", "esac", "}", ")", "then", "do", "else", ""}


@dataclass
class ShellScan:
    view: str
    single_quoted: List[Span]  # sorted, not overlapping
    statements: List[Span]

    def in_single_quotes(self, position: int) -> bool:
        index = bisect.bisect_right(self.single_quoted, (position, float("inf"))) - 1
        return index >= 0 and self.single_quoted[index][0] < position < self.single_quoted[index][1]


def scan_shell(text: str) -> ShellScan:
    return _Scanner(text).run()


class _Scanner:
    def __init__(self, text: str):
        self.text = text
        self.chars = list(text)
        self.single: List[Span] = []
        self.statements: List[Span] = []
        self.pending: List[Tuple[str, bool]] = []  # here-documents whose bodies start on the next line

    def run(self) -> ShellScan:
        text, n = self.text, len(self.text)
        stack: List[str] = []  # open contexts: '"', '(' ($( or a subshell), '`', '{' (${)
        i = start = 0
        while i < n:
            char = text[i]
            top = stack[-1] if stack else ""
            if char == "\\":
                i = self._escaped(i)
            elif top == '"':
                i = self._in_double_quotes(i, stack)
            elif char == "'":
                i = self._single_quoted(i)
            elif char == "$" and text.startswith(("$(", "${"), i):
                stack.append(text[i + 1])
                i += 2
            elif char in '"`':
                if char == "`" and top == "`":
                    stack.pop()
                else:
                    stack.append(char)
                i += 1
            elif char == "(":
                stack.append("(")
                i += 1
            elif char in ")}":
                if top == ("(" if char == ")" else "{"):
                    stack.pop()
                i += 1
            elif char == "#" and top != "{" and (i == 0 or text[i - 1] in WORD_BREAKS):
                i = self._comment(i)
            elif char == "<" and text.startswith("<<<", i):
                i += 3  # a here-string: its word follows on the line (no heredoc at its second <)
            elif char == "<" and text.startswith("<<", i):
                i = self._heredoc_operator(i)
            elif char == "\r" and text.startswith("\r\n", i):
                self.chars[i] = " "
                i += 1
            elif char == "\n":
                i = self._bodies(i + 1) if self.pending else i + 1
                if not stack:
                    self.statements.append((start, i))
                    start = i
            else:
                i += 1
        if start < n:
            self.statements.append((start, n))
        return ShellScan("".join(self.chars), self.single, self.statements)

    def _escaped(self, i: int) -> int:
        """An escaped character; a line continuation is blanked (bashlex misplaces the nodes
        after one inside quotes and command substitutions)."""
        for continuation in ("\\\n", "\\\r\n"):
            if self.text.startswith(continuation, i):
                self.chars[i : i + len(continuation)] = " " * len(continuation)
                return i + len(continuation)
        return i + 2

    def _in_double_quotes(self, i: int, stack: List[str]) -> int:
        text = self.text
        if text[i] == '"':
            stack.pop()
        elif text.startswith(("$(", "${"), i):
            stack.append(text[i + 1])
            return i + 2
        elif text[i] == "`":
            stack.append("`")
        return i + 1

    def _single_quoted(self, i: int) -> int:
        text, n = self.text, len(self.text)
        ansi = i > 0 and text[i - 1] == "$"  # $'...' knows backslash escapes
        j = i + 1
        while j < n and text[j] != "'":
            j += 2 if ansi and text[j] == "\\" else 1
        end = min(j + 1, n)
        self.single.append((i, end))
        return end

    def _comment(self, i: int) -> int:
        end = self.text.find("\n", i)
        end = len(self.text) if end == -1 else end
        self.chars[i:end] = " " * (end - i)
        return end

    def _heredoc_operator(self, i: int) -> int:
        match = HEREDOC.match(self.text, i)
        if not match:
            return i + 2
        delimiter = next(group for group in match.groups()[1:] if group is not None)
        self.pending.append((delimiter, bool(match.group(1))))
        for position in range(i + 2 + len(match.group(1)), match.end()):  # quotes bashlex cannot read
            if self.text[position] in "'\"\\":
                self.chars[position] = " "
        return match.end()

    def _bodies(self, position: int) -> int:
        """Blank the bodies of the pending here-documents, which start at ``position``; the
        position after the last delimiter line."""
        text, n = self.text, len(self.text)
        for delimiter, strip_tabs in self.pending:
            while position < n:
                end = text.find("\n", position)
                end = n if end == -1 else end
                line = text[position:end]
                line = line[:-1] if line.endswith("\r") else line
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    if text[end - 1 : end] == "\r":
                        self.chars[end - 1] = " "
                    position = end + 1
                    break
                self.chars[position:end] = " " * (end - position)
                position = end + 1
        self.pending.clear()
        return min(position, n)


def statement_pieces(view: str, start: int, end: int) -> List[Span]:
    """The simple commands of one statement the parser refused: split at its lines and at ``;``,
    ``&&``, ``||``, ``|`` and ``&`` outside quotes, without the words that open or close compound
    commands (``if``, ``then``, ``do``, ``fi``...) or a case pattern before them. Quotes are
    followed within one line, so one stray quote costs one line."""
    pieces: List[Span] = []
    piece_start, quote, i = start, "", start
    while i < end:
        char = view[i]
        if char == "\\" and quote != "'":
            i += 2
            continue
        if char == "\n":
            pieces.append((piece_start, i))
            piece_start, quote = i + 1, ""
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char in ";&|" and not _redirection(view, i):
            pieces.append((piece_start, i))
            while i + 1 < end and view[i + 1] in ";&|":
                i += 1
            piece_start = i + 1
        i += 1
    pieces.append((piece_start, end))
    return [piece for piece in (_without_lead(view, span) for span in pieces) if piece]


def _redirection(view: str, i: int) -> bool:
    """Whether the ``&`` or ``|`` at ``i`` belongs to a redirection (``2>&1``, ``&>``, ``>|``)."""
    char = view[i]
    return char != ";" and (view[i - 1 : i] in ("<", ">") or char == "&" and view[i + 1 : i + 2] == ">")


def _without_lead(view: str, span: Span):
    start, end = span
    start = PIECE_LEAD.match(view, start, end).end()
    text = view[start:end].strip()
    if text in CLOSERS:
        return None
    return start, start + len(view[start:end].rstrip())

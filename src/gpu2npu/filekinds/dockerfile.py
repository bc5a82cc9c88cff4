"""Dockerfiles (``Dockerfile``, ``Dockerfile.*``, ``*.Dockerfile``, ``Containerfile``): a CUDA base
image is reported (BaseImageRule); ``ENV`` and ``ARG`` lines and the commands of ``RUN``, ``CMD``,
``ENTRYPOINT`` and ``HEALTHCHECK`` go through the shell kind's rules (variables renamed or
reported, option values changed, commands reported), edited by byte span in the Dockerfile.

The instructions are read by a small line scanner that follows Docker's format: parser directives
(``# escape=```), comment lines, line continuations (comment and empty lines inside one are
dropped, as Docker does), and here-documents (``RUN <<EOF``: a body with no command before it is a
shell script and is read as one, else it is data). The shell reader gets a *view* of an
instruction of the same length as the text, in which what Docker removes is blanked and a
continuation is a shell continuation, so its positions are the Dockerfile's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Dict, List, Optional, Tuple

from gpu2npu.filekinds import FileKind
from gpu2npu.filekinds._shell_scan import scan_shell
from gpu2npu.filekinds.base import decode
from gpu2npu.filekinds.shell import (
    EXPANSION,
    SHELLS,
    ShellEdits,
    Word,
    read_command,
    read_shell,
    report_unread,
    shebang_shell,
)
from gpu2npu.rules.kinds.base_image import image_matches, normalised_image

DIRECTIVE = re.compile(r"#[ \t]*([A-Za-z]+)[ \t]*=[ \t]*(\S+)[ \t]*$")
KEYWORD = re.compile(r"[ \t]*([A-Za-z]+)(?=[ \t\r\\]|$)")
FLAG = re.compile(r"[ \t]*--[A-Za-z][A-Za-z0-9-]*(=\S*)?(?=\s|$)")
HEREDOC = re.compile(r"(?<!<)<<(-?)([\"']?)([A-Za-z_][A-Za-z0-9_]*)\2")
TOKEN = re.compile(r"(?:[^\s\"']+|\"(?:[^\"\\]|\\.)*\"?|'[^']*'?)+")
JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
ARG_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-+]([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")
COMMAND_INSTRUCTIONS = {"RUN", "CMD", "ENTRYPOINT"}
FLAGGED = {"RUN", "FROM", "HEALTHCHECK"}  # instructions whose --flags come before their arguments


@dataclass
class Instruction:
    keyword: str  # upper case
    arguments: int  # where its arguments start (after any --flags)
    end: int  # the end of its last line, before the line end
    bodies: List[Tuple[int, int]] = field(default_factory=list)  # its here-documents' bodies


class DockerfileKind(FileKind):
    name = "dockerfile"
    order = 20
    max_bytes = 1024 * 1024

    def claims(self, rel, head):
        name = PurePosixPath(rel).name.lower()
        return (
            name in ("dockerfile", "containerfile")
            or name.startswith(("dockerfile.", "containerfile."))
            or name.startswith(("dockerfile-", "dockerfile_"))
            and "." not in name  # Dockerfile-arm64
            or name.endswith((".dockerfile", ".containerfile"))
        )

    def migrate(self, data, rel, context):
        text = decode(data)
        edits = ShellEdits(data, text, context.index, context, rel)
        instructions, view = read_instructions(text)
        _DockerfileReader(view, edits, context.index).read(instructions)
        return edits.outcome()


# ---------------------------------------------------------------------------------------------
# The instructions


def read_instructions(text: str) -> Tuple[List[Instruction], str]:
    """The instructions of a Dockerfile and the view the shell reader reads them in."""
    return _Scanner(text).run()


class _Scanner:
    def __init__(self, text: str):
        self.text = text
        self.chars = list(text)
        self.lines: List[Tuple[int, int]] = []  # (start, end before "\n")
        position = 0
        while position <= len(text):
            newline = text.find("\n", position)
            end = len(text) if newline == -1 else newline
            self.lines.append((position, end))
            position = end + 1
        self.escape = "\\"

    def run(self) -> Tuple[List[Instruction], str]:
        k = self._directives()
        instructions = []
        while k < len(self.lines):
            if self._empty_or_comment(k):
                k += 1
                continue
            instruction, k = self._instruction(k)
            if instruction is not None:
                instructions.append(instruction)
        return instructions, "".join(self.chars)

    def _line(self, k: int) -> str:
        start, end = self.lines[k]
        return self.text[start:end]

    def _directives(self) -> int:
        k = 0
        while k < len(self.lines):
            found = DIRECTIVE.match(self._line(k).rstrip("\r"))
            if not found:
                break
            if found.group(1).lower() == "escape" and found.group(2) in ("\\", "`"):
                self.escape = found.group(2)
            k += 1
        return k

    def _empty_or_comment(self, k: int) -> bool:
        stripped = self._line(k).strip()
        return not stripped or stripped.startswith("#")

    def _instruction(self, k: int) -> Tuple[Optional[Instruction], int]:
        start, _ = self.lines[k]
        keyword = KEYWORD.match(self.text, start, self.lines[k][1])
        while self._continues(k) and k + 1 < len(self.lines):
            k += 1
            while k + 1 < len(self.lines) and self._empty_or_comment(k):  # dropped by Docker
                line_start, line_end = self.lines[k]
                self.chars[line_start : line_end + 1] = " " * (line_end + 1 - line_start)
                k += 1
        end = self._line_end(k)
        if keyword is None:
            return None, k + 1
        name = keyword.group(1).upper()
        arguments = keyword.end()
        while arguments < end and self.text[arguments] in " \t":
            arguments += 1
        if name in FLAGGED:
            while True:
                flag = FLAG.match(self.chars_view(arguments, end))
                if not flag:
                    break
                arguments += flag.end()
        instruction = Instruction(name, arguments, end)
        if name in ("RUN", "COPY", "ADD"):
            k = self._heredocs(instruction, k)
        return instruction, k + 1

    def chars_view(self, start: int, end: int) -> str:
        return "".join(self.chars[start:end])

    def _line_end(self, k: int) -> int:
        """The end of line k; a CR before its LF is blanked in the view."""
        start, end = self.lines[k]
        if end > start and self.text[end - 1] == "\r":
            self.chars[end - 1] = " "
        return end

    def _continues(self, k: int) -> bool:
        """Whether line k ends with the escape character; if so the view has a shell continuation
        (a backslash right before the line end)."""
        start, end = self.lines[k]
        last = end - 1
        while last >= start and self.text[last] in " \t\r":
            last -= 1
        if last < start or self.text[last] != self.escape:
            return False
        self.chars[last:end] = " " * (end - last)
        self.chars[end - 1] = "\\"
        return True

    def _heredocs(self, instruction: Instruction, k: int) -> int:
        """Blank the here-document operators of an instruction and note their bodies, which
        follow its last line (k); the last line of the last body. An operator in quotes, or
        whose delimiter line never comes, is text."""
        arguments = self.chars_view(instruction.arguments, instruction.end)
        for found in HEREDOC.finditer(arguments):
            before = re.sub(r"\\.", "", arguments[: found.start()])
            if before.count('"') % 2 or before.count("'") % 2:
                continue
            strip_tabs, delimiter = bool(found.group(1)), found.group(3)
            last = self._delimiter_line(k + 1, delimiter, strip_tabs)
            if last is None:
                continue
            start = instruction.arguments + found.start()
            self.chars[start : instruction.arguments + found.end()] = " " * (found.end() - found.start())
            instruction.bodies.append((self.lines[k + 1][0], self.lines[last][0]))
            k = last
        return k

    def _delimiter_line(self, k: int, delimiter: str, strip_tabs: bool) -> Optional[int]:
        for j in range(k, len(self.lines)):
            line = self._line(j).rstrip("\r")
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                return j
        return None


# ---------------------------------------------------------------------------------------------
# What the rules do with them


class _DockerfileReader:
    def __init__(self, view: str, edits: ShellEdits, index):
        self.view = view
        self.edits = edits
        self.images = index.rules_of("BaseImageRule")
        self.arguments: Dict[str, str] = {}  # ARG defaults, for FROM ${BASE}

    def read(self, instructions: List[Instruction]) -> None:
        for instruction in instructions:
            keyword, start, end = instruction.keyword, instruction.arguments, instruction.end
            if keyword == "FROM":
                self._base_image(start, end)
            elif keyword == "ARG":
                self._arg(start, end)
            elif keyword == "ENV":
                self._env(start, end)
            elif keyword in COMMAND_INSTRUCTIONS:
                self._command(instruction)
            elif keyword == "HEALTHCHECK":
                found = re.match(r"\s*CMD(?=\s)", self.view[start:end], re.IGNORECASE)
                if found:
                    self._command(Instruction("CMD", start + found.end(), end))

    def _tokens(self, start: int, end: int) -> List[Tuple[int, str]]:
        return [(found.start(), found.group(0)) for found in TOKEN.finditer(self.view, start, end)]

    def _base_image(self, start: int, end: int) -> None:
        tokens = self._tokens(start, end)
        if not tokens or not self.images:
            return
        position, written = tokens[0]
        image = ARG_REFERENCE.sub(self._argument_value, written).strip("\"'")
        reference = normalised_image(image)
        for rule in self.images:
            if image_matches(rule, reference):
                self.edits.report(
                    position, position + len(written), image, rule["tip"], rule.id, rule["category"]
                )
                return

    def _argument_value(self, found: "re.Match[str]") -> str:
        name = found.group(1) or found.group(3)
        return self.arguments.get(name, found.group(2) or "")

    def _arg(self, start: int, end: int) -> None:
        for position, token in self._tokens(start, end):
            name, equals, value = token.partition("=")
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                continue
            self.edits.variable_set(name, position)
            if equals:
                self.arguments[name] = value.strip("\"'")
                self._expansions(position + len(name) + 1, position + len(token))

    def _env(self, start: int, end: int) -> None:
        tokens = self._tokens(start, end)
        if not tokens:
            return
        position, first = tokens[0]
        if "=" in first:  # ENV A=1 B="x y": shell assignments
            report_unread(read_shell(self.view[start:end], start, self.edits).unread, self.edits)
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", first):  # ENV NAME value
            self.edits.variable_set(first, position)
            self._expansions(position + len(first), end)

    def _expansions(self, start: int, end: int) -> None:
        scan = scan_shell(self.view[start:end])
        for found in EXPANSION.finditer(scan.view):
            if not scan.in_single_quotes(found.start()):
                self.edits.rename(found.group(1), start + found.start(1))

    def _command(self, instruction: Instruction) -> None:
        start, end = instruction.arguments, instruction.end
        if self.view[start:end].lstrip().startswith("[") and self._exec_form(start, end):
            return
        if instruction.bodies and not self.view[start:end].strip():  # RUN <<EOF: the bodies are scripts
            for body_start, body_end in instruction.bodies:
                body = self.view[body_start:body_end]
                if (
                    not body.startswith("#!")
                    or shebang_shell(body[:256].encode("utf-8", "surrogateescape")) in SHELLS
                ):
                    report_unread(read_shell(body, body_start, self.edits).unread, self.edits)
            return
        report_unread(read_shell(self.view[start:end], start, self.edits).unread, self.edits)

    def _exec_form(self, start: int, end: int) -> bool:
        """``CMD ["python", "train.py", "--backend", "nccl"]``: read as a command; False when it
        is not a JSON list of strings (Docker then runs it with the shell)."""
        text = re.sub(r"\\\n", "  ", self.view[start:end])
        try:
            values = json.loads(text)
        except ValueError:
            return False
        if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
            return False
        strings = list(JSON_STRING.finditer(text))
        if len(strings) != len(values):
            return False
        words = [
            Word(start + found.start(1), start + found.end(1), value, found.group(1))
            for found, value in zip(strings, values)
        ]
        read_command(words, self.edits)
        return True

"""Shell scripts (``*.sh``, ``*.bash``, scripts with a sh/bash shebang): the launch scripts of a
training repository, read with bashlex and edited by byte span.

What changes, by rule:

* environment variables an EnvVarRenameRule renames (``CUDA_VISIBLE_DEVICES`` ->
  ``ASCEND_RT_VISIBLE_DEVICES``), where they are set (``export``, ``VAR=1 cmd``, ``env VAR=1``,
  plain assignments, ``declare``/``local``/``readonly``), unset and expanded (``$VAR``, ``${VAR:-x}``)
  outside single quotes;
* the values of command-line options and Hydra overrides that ConfigValueRule knows
  (``--dist-backend nccl``, ``--device=cuda:$LOCAL_RANK``, ``trainer.device=cuda``): the value's
  characters only, its quotes kept;
* the code of ``python -c '...'`` (Qwen's ``$(python -c 'import torch;
  print(torch.cuda.device_count())')``), migrated as Python, where it is one quoted word and its
  new code still fits those quotes on as many lines.

What is reported, by rule: variables without an NPU counterpart where they are set
(EnvVarReportRule), commands without one where they run (CommandReportRule: ``nvidia-smi``,
``nvcc``, ``docker run --gpus``...).

Comments, here-document bodies and single-quoted text are data and never read. A script bashlex
refuses whole is read statement by statement, then piece by piece, then (for what is left) by a
pattern for expansions and leading assignments; what none of these reads is reported
("not-migrated") when it holds a word the rules look for. The dockerfile kind reads its ``RUN``
commands and ``ENV`` lines with ``read_shell`` and ``read_command`` of this module, the notebook
kind its shell lines and ``%%bash`` cells with ``read_shell``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from gpu2npu.filekinds import FileKind, KindOutcome, Reported
from gpu2npu.filekinds._shell_scan import ShellScan, scan_shell, statement_pieces
from gpu2npu.filekinds.base import UNKNOWN, CharOffsets, SpanEdits, decode
from gpu2npu.rules.kinds.config_report import reports_for
from gpu2npu.rules.kinds.config_value import change_message, new_value

SUFFIXES = (".sh", ".bash")
# cluster job scripts (nanoVLM's slurm/*.slurm): shell scripts where their shebang says so
JOB_SUFFIXES = ("", ".slurm", ".sbatch", ".job", ".pbs", ".qsub", ".lsf", ".run")
SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}
WHOLE_SCRIPT_LIMIT = 64 * 1024  # characters; a larger script is parsed statement by statement (speed)
NAME = r"[A-Za-z_][A-Za-z0-9_]*"
ASSIGNED_NAME = re.compile(rf"({NAME})(?:\+?=|$)")
EXPANSION = re.compile(rf"\$\{{?[#!]?({NAME})")
LEADING_ASSIGNMENT = re.compile(
    rf"(?:(?:export|declare|typeset|local|readonly)\s+(?:-[A-Za-z]+\s+)*)?({NAME})\+?=(?!=)"
)
PYTHON = re.compile(r"python(?:[0-9](?:\.[0-9]+)?)?")
INLINE_PYTHON = r"(?<![A-Za-z0-9_])python[0-9.]*\s(?:[^;&|\n]*\s)?-c\s"  # finds python -c
PYTHON_VALUE_OPTIONS = {"-W", "-X"}  # options of python taking the next word as their value
OPTION = re.compile(r"-{1,2}[A-Za-z][A-Za-z0-9_.\-]*")
OVERRIDE = re.compile(r"[+~]{0,2}([A-Za-z_][A-Za-z0-9_.\-/@]*)=")  # Hydra: trainer.device=cuda
DURATION = re.compile(r"[0-9.]+[smhd]?")
# a variable set at the start of a command inside a quoted command line: "A=1 cmd", "x; export A=1"
QUOTED_WORD = re.compile(r"(?:[^\s\\]|\\\S)+")  # a word of a quoted value; a lone \ continues the line
QUOTED_ASSIGNMENT = re.compile(rf"(?:^|(?<=[\s;&|(\"']))({NAME})=")
# Commands that run the command after them: options that take a value (skipped with it).
WRAPPERS: Dict[str, frozenset] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}),
    "nohup": frozenset(),
    "exec": frozenset({"-a"}),
    "time": frozenset(),
    "nice": frozenset({"-n"}),
    "env": frozenset({"-u", "-C", "-S"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "watch": frozenset({"-n", "-d", "--interval"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "command": frozenset(),
    "which": frozenset(),
}
DECLARING = {"export", "declare", "typeset", "local", "readonly"}
PRINTING = {"echo", "printf"}  # their arguments are text, not options
UNREAD_TIP = (
    "the shell parser cannot read this command, so it was left as it is: check it by hand for CUDA "
    "settings (devices, NCCL variables, GPU tools)"
)


class Word(NamedTuple):
    """A word of a command: character span in the file, value without quotes, text as written."""

    start: int
    end: int
    value: str
    raw: str


# ---------------------------------------------------------------------------------------------
# The rules, as tables built once per index


@dataclass
class ShellTables:
    renames: Dict[str, object]  # variable -> StringTarget of an EnvVarRenameRule
    reported_names: Dict[str, object]  # variable -> EnvVarReportRule
    reported_prefixes: List[Tuple[str, object]]  # longest first
    commands: Dict[str, List[Tuple[object, Optional["re.Pattern[str]"]]]]
    triggers: Optional["re.Pattern[str]"]  # a word one of the rules looks for
    byte_triggers: Optional["re.Pattern[bytes]"]
    strong: "re.Pattern[str]"  # the same, less the commands that need certain arguments

    def left_unread(self, text: str) -> bool:
        """Whether code the reader could not read may hold something a rule acts on."""
        if self.strong.search(text):
            return True
        return any(
            command in text and any(pattern is not None and pattern.search(text) for _, pattern in rules)
            for command, rules in self.commands.items()
        )

    def reported_variable(self, name: str):
        if name in self.reported_names:
            return self.reported_names[name]
        return next((rule for prefix, rule in self.reported_prefixes if name.startswith(prefix)), None)


def shell_tables(index) -> ShellTables:
    return index.derive("shell kind tables", _build_tables)


def _build_tables(index) -> ShellTables:
    renames = {
        old: target
        for old, target in index.strings.exact.items()
        if getattr(index.rules_by_id.get(target.rule_id), "kind", "") == "EnvVarRenameRule"
    }
    names, prefixes = {}, []
    for rule in index.rules_of("EnvVarReportRule"):
        if rule.get("name"):
            names.setdefault(rule["name"], rule)
        else:
            prefixes.append((rule["prefix"], rule))
    prefixes.sort(key=lambda item: -len(item[0]))
    commands: Dict[str, list] = {}
    for rule in index.rules_of("CommandReportRule"):
        pattern = re.compile(rule["arguments"]) if rule.get("arguments") else None
        commands.setdefault(rule["command"], []).append((rule, pattern))
    values = {rule["old"] for rule in index.rules_of("ConfigValueRule")}
    options = {
        spelling
        for rule in index.rules_of("ConfigReportRule")
        if rule["shell_options"]
        for key in rule["keys"]
        for spelling in (key, key.replace("_", "-"))
    }
    whole = set(renames) | set(names) | values | options
    plain_commands = {name for name, rules in commands.items() if any(p is None for _, p in rules)}
    starts = {prefix for prefix, _ in prefixes}
    # a command reported only with some arguments (pip with a CUDA index) triggers by those
    # arguments, so that every script running python or pip is not parsed for nothing
    narrowed = [f"(?:{p.pattern})" for rules in commands.values() for _, p in rules if p is not None]
    every = "|".join(filter(None, [_words_pattern(whole | plain_commands, starts), *narrowed, INLINE_PYTHON]))
    return ShellTables(
        renames,
        names,
        prefixes,
        commands,
        re.compile(every) if every else None,
        re.compile(every.encode("utf-8")) if every else None,
        re.compile(_words_pattern(whole | plain_commands, starts) or "(?!)"),
    )


def _words_pattern(words, starts) -> str:
    """A regex finding any of ``words`` as a whole word, or a word starting with one of ``starts``."""
    whole = "|".join(re.escape(word) for word in sorted(filter(None, words), key=len, reverse=True))
    start = "|".join(re.escape(word) for word in sorted(filter(None, starts), key=len, reverse=True))
    parts = [f"(?<![A-Za-z0-9_])(?:{whole})(?![A-Za-z0-9_])"] if whole else []
    parts += [f"(?<![A-Za-z0-9_])(?:{start})"] if start else []
    return "|".join(parts)


# ---------------------------------------------------------------------------------------------
# Edits and reported rows of one file


class ShellEdits:
    """The edits and reported rows of one file, by character position in its decoded text."""

    def __init__(self, data: bytes, text: str, index, context=None, rel: str = ""):
        """``context``: the KindContext whose Python migration rewrites ``python -c`` code
        (None: such code is left as it is); ``rel``: the file's path."""
        self.text = text
        self.index = index
        self.context, self.rel = context, rel
        self.tables = shell_tables(index)
        self.offsets = CharOffsets(text)
        self.edits = SpanEdits(data)
        self.reported: Dict[tuple, Reported] = {}

    def line(self, position: int) -> int:
        return self.edits.lines.line_of(self.offsets.byte_offset(position))

    def replace(self, start: int, old: str, new: str, message: str, rule: str) -> bool:
        """Replace ``old``, the text at ``start``; nothing when the file holds other text there (a
        view of it that differs: a blanked continuation, a Dockerfile's escape character)."""
        end = start + len(old)
        if self.text[start:end] != old:
            return False
        byte = self.offsets.byte_offset
        return self.edits.replace(
            byte(start), byte(end), new.encode("utf-8", "surrogateescape"), message, rule
        )

    def report(self, start: int, end: int, subject: str, tip: str, rule: str, category: str) -> bool:
        row = Reported(self.line(start), self.line(max(start, end - 1)), subject, tip, rule, category)
        return self.reported.setdefault((row.line, row.subject, row.rule), row) is row

    def variable_set(self, name: str, start: int) -> bool:
        """A variable set or exported at ``start``: renamed, else reported when a rule knows it."""
        if self.rename(name, start):
            return True
        rule = self.tables.reported_variable(name)
        return rule is not None and self.report(
            start, start + len(name), name, rule["tip"], rule.id, rule["category"]
        )

    def rename(self, name: str, start: int) -> bool:
        target = self.tables.renames.get(name)
        return target is not None and self.replace(start, name, target.new, target.message, target.rule_id)

    def python_code(self, word: Word) -> None:
        """The code word of ``python -c``, migrated where the new code fits the word's quotes
        (unquoted code is left: the shell splits and expands it) on as many lines."""
        literal = literal_span(word.raw)
        if self.context is None or literal is None or not literal[0]:
            return
        offset, code = literal
        new, changes, skipped, _ = self.context.migrate_python(code.encode("utf-8"), self.rel)
        if new is None or skipped or not changes:
            return
        text = new.decode("utf-8")
        quote = word.raw[0]
        unsafe = "'" if quote == "'" else '"$`\\!'
        if any(char in text for char in unsafe) or text.count("\n") != code.count("\n"):
            return
        main = next((c for c in changes if c.operation != "INSERT"), changes[0])  # not import torch_npu
        message = "python -c: " + "; ".join(dict.fromkeys(c.message for c in changes))
        self.replace(word.start + offset, code, text, message, main.rule)

    def setting(self, key: str, start: int, raw: str) -> bool:
        """The value (``raw``, at ``start``) of an option or override ``key``, changed if a
        ConfigValueRule says so: only its literal characters, quotes kept."""
        literal = literal_span(raw)
        if literal is None:
            return False
        offset, value = literal
        found = new_value(self.index, key, value)
        if found is None:
            return self._report_setting(key, start + offset, value)
        new, rule = found
        prefix = len(_common_prefix(value, new))
        suffix = len(_common_prefix(value[prefix:][::-1], new[prefix:][::-1]))
        return self.replace(
            start + offset + prefix,
            value[prefix : len(value) - suffix],
            new[prefix : len(new) - suffix],
            change_message(rule, key, value, new),
            rule.id,
        )

    def _report_setting(self, key: str, start: int, value: str) -> bool:
        """An option a ConfigReportRule reports on command lines (portable's ``--dist-backend nccl``)."""
        rules = [rule for rule in reports_for(self.index, key, value) if rule["shell_options"]]
        for rule in rules:
            self.report(start, start + len(value), f"{key} {value}", rule["tip"], rule.id, rule["category"])
        return bool(rules)

    def outcome(self) -> KindOutcome:
        outcome = self.edits.outcome()
        outcome.reported = sorted(self.reported.values())
        return outcome


def literal_span(raw: str) -> Optional[Tuple[int, str]]:
    """(offset, text) of a word's literal characters: the word itself when unquoted, the inside
    of its quotes when it is quoted whole; None when quoting is mixed or escaped."""
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        inner = raw[1:-1]
        return None if any(char in inner for char in "'\"\\") else (1, inner)
    return None if any(char in raw for char in "'\"\\") else (0, raw)


def _common_prefix(a: str, b: str) -> str:
    size = 0
    while size < min(len(a), len(b)) and a[size] == b[size]:
        size += 1
    return a[:size]


# ---------------------------------------------------------------------------------------------
# One command, however it was read (bashlex, or a Dockerfile's exec form)


def read_command(words: List[Word], edits: ShellEdits) -> None:
    """A simple command's words: variables it sets, the command it runs, the options it passes."""
    while words and _base_name(words[0].value) in WRAPPERS:
        words = _after_wrapper(words, edits)
    if not words:
        return
    name = _base_name(words[0].value)
    if name in DECLARING or name == "unset":
        for word in words[1:]:
            found = ASSIGNED_NAME.match(word.raw)
            if found and (name != "unset" or found.end() == len(word.raw)):
                if name == "unset":
                    edits.rename(found.group(1), word.start)
                else:
                    edits.variable_set(found.group(1), word.start)
        return
    _report_command(name, words, edits)
    if PYTHON.fullmatch(name):
        _inline_python(words[1:], edits)
    if name not in PRINTING:
        _read_options(words[1:], edits)
        _quoted_assignments(words[1:], edits)


def _quoted_assignments(words: List[Word], edits: ShellEdits) -> None:
    """Variables a quoted command line sets for the command it runs (FastChat's ``screen -X
    stuff "CUDA_VISIBLE_DEVICES=1 python3 -m ..."``, ``bash -c 'export A=1; ...'``), renamed as
    where the script sets them itself."""
    for word in words:
        if word.raw[:1] in ("'", '"') and "=" in word.raw:
            for found in QUOTED_ASSIGNMENT.finditer(word.raw, 1):
                edits.rename(found.group(1), word.start + found.start(1))


def _inline_python(words: List[Word], edits: ShellEdits) -> None:
    """``python [options] -c CODE``: the code migrated (a script's arguments are left alone)."""
    i = 0
    while i < len(words) and words[i].value.startswith("-"):
        if words[i].value == "-c" and i + 1 < len(words):
            edits.python_code(words[i + 1])
            return
        i += 2 if words[i].value in PYTHON_VALUE_OPTIONS else 1


def _base_name(command: str) -> str:
    return command.rsplit("/", 1)[-1]


def _after_wrapper(words: List[Word], edits: ShellEdits) -> List[Word]:
    """The words of the command a wrapper runs (``sudo -u x env A=1 cmd`` -> ``env A=1 cmd``)."""
    wrapper = _base_name(words[0].value)
    takes_value = WRAPPERS[wrapper]
    rest, i = words[1:], 0
    while i < len(rest):
        value = rest[i].value
        if value.startswith("-") and value != "-":
            if wrapper == "env" and value == "-u" and i + 1 < len(rest):
                edits.rename(rest[i + 1].raw, rest[i + 1].start)
            i += 2 if value in takes_value else 1
        elif wrapper == "env" and ASSIGNED_NAME.match(rest[i].raw) and "=" in rest[i].raw:
            edits.variable_set(ASSIGNED_NAME.match(rest[i].raw).group(1), rest[i].start)
            i += 1
        elif wrapper == "timeout" and DURATION.fullmatch(value):
            i += 1
        else:
            break
    return rest[i:]


def _report_command(name: str, words: List[Word], edits: ShellEdits) -> None:
    found = reported_command(edits.tables, name, [word.value for word in words[1:]])
    if found is not None:
        rule, subject = found
        edits.report(words[0].start, words[-1].end, subject, rule["tip"], rule.id, rule["category"])


def reported_command(tables: ShellTables, command: str, arguments: List[str]):
    """(the CommandReportRule, the subject of its row) of the first rule that reports a command run
    with ``arguments`` (``docker --gpus`` where the rule's pattern matches), or None."""
    name = _base_name(command)
    rules = tables.commands.get("python" if PYTHON.fullmatch(name) else name, ())  # python3.10 runs python
    for rule, pattern in rules:
        if pattern is None:
            return rule, name
        found = pattern.search(" ".join(arguments))
        if found is not None:
            return rule, f"{name} {found.group(0).strip()}".strip()
    return None


def _read_options(words: List[Word], edits: ShellEdits) -> None:
    """``--key value``, ``--key=value`` and Hydra's ``key=value`` / ``+key=value``."""
    i = 0
    while i < len(words):
        word = words[i]
        raw = word.raw
        if raw.startswith("-"):
            key, equals, value = raw.partition("=")
            if OPTION.fullmatch(key):
                if equals:
                    edits.setting(key, word.start + len(key) + 1, value)
                elif i + 1 < len(words) and not words[i + 1].raw.startswith("-"):
                    following = words[i + 1]
                    if edits.setting(key, following.start, following.raw):
                        i += 1
        else:
            offset, inner = literal_span(raw) or (0, raw)
            found = OVERRIDE.match(inner)
            if found:
                edits.setting(found.group(1), word.start + offset + found.end(), inner[found.end() :])
        i += 1


# ---------------------------------------------------------------------------------------------
# Shell code: the parser where it reads, pieces and patterns where it does not


@dataclass
class Unread:
    start: int
    end: int
    reason: str


@dataclass
class ShellRead:
    understood: bool = False  # some of the code the rules look at was read
    unread: List[Unread] = field(default_factory=list)  # code holding a trigger that was not read


def read_shell(region: str, base: int, edits: ShellEdits) -> ShellRead:
    """Read shell code: ``region`` stands for the file's text from ``base`` on (same length; a
    Dockerfile blanks what is not shell in it)."""
    return _ShellReader(region, base, edits).read()


def _without_final_continuation(code: str) -> str:
    """The code with a backslash that ends it blanked (same length): bash reads a last line ending
    in ``\\`` as going on with nothing (InternVideo's launchers), bashlex refuses it."""
    last = len(code.rstrip()) - 1
    if last >= 0 and code[last] == "\\" and (last == 0 or code[last - 1] != "\\"):
        return code[:last] + " " + code[last + 1 :]
    return code


class _ShellReader:
    def __init__(self, region: str, base: int, edits: ShellEdits):
        self.scan: ShellScan = scan_shell(region)
        self.view = self.scan.view
        self.base = base
        self.edits = edits
        self.triggers = edits.tables.triggers

    def read(self) -> ShellRead:
        result = ShellRead()
        view = self.view
        if self.triggers is None or not self.triggers.search(view):
            result.understood = True
            return result
        if len(view) <= WHOLE_SCRIPT_LIMIT and self._parsed(0, len(view)) is None:
            result.understood = True
            return result
        for start, end in self.scan.statements:
            if not self.triggers.search(view, start, end):
                continue
            if self._parsed(start, end) is None:
                result.understood = True
                continue
            for piece_start, piece_end in statement_pieces(view, start, end):
                if self.triggers.search(view, piece_start, piece_end):
                    self._read_piece(piece_start, piece_end, result)
        return result

    def _parsed(self, start: int, end: int) -> Optional[str]:
        """Parse and read view[start:end]; None when done, else why the parser refused it."""
        import bashlex  # only where a script holds a trigger word: its import builds parser tables

        try:
            nodes = _nodes(bashlex.parse(_without_final_continuation(self.view[start:end])))
        except Exception as error:  # bashlex raises many kinds (ParsingError, NotImplementedError...)
            return self._reason(error, start)
        misplaced = next((node for node in nodes if not _in_place(node, self.view, start)), None)
        if misplaced is not None:  # bashlex misplaces the nodes of a second elif: read smaller pieces
            return self._reason(ValueError("the parser lost its place"), start + misplaced.pos[0])
        for node in nodes:
            self._read_node(node, start)
        return None

    def _reason(self, error: Exception, start: int) -> str:
        message = getattr(error, "message", None) or str(error) or type(error).__name__
        position = start + min(getattr(error, "position", 0) or 0, len(self.view) - start)
        return f"line {self.edits.line(self.base + position)}: {message.splitlines()[0][:100]}"

    def _read_piece(self, start: int, end: int, result: ShellRead) -> None:
        reason = self._parsed(start, end)
        if reason is None:
            result.understood = True
            return
        read, found = self._by_pattern(start, end)
        result.understood |= found
        rest = "".join(
            " " if any(a <= i < b for a, b in read) else char
            for i, char in enumerate(self.view[start:end], start)
        )
        if self.edits.tables.left_unread(rest):
            result.unread.append(Unread(self.base + start, self.base + end, reason))

    def _by_pattern(self, start: int, end: int) -> Tuple[List[Tuple[int, int]], bool]:
        """A piece the parser refused (``[[ $X ]]``, ``a=(...)``, arithmetic): its leading
        assignment and its expansions outside single quotes. The spans read, and whether a rule
        applied."""
        read, found = [], False
        text = self.view[start:end]
        assigned = LEADING_ASSIGNMENT.match(text)
        if assigned:
            read.append((start + assigned.start(1), start + assigned.end(1)))
            found |= self.edits.variable_set(assigned.group(1), self.base + start + assigned.start(1))
        for expansion in EXPANSION.finditer(text):
            if not self.scan.in_single_quotes(start + expansion.start()):
                read.append((start + expansion.start(1), start + expansion.end(1)))
                found |= self.edits.rename(expansion.group(1), self.base + start + expansion.start(1))
        return read, found

    def _read_node(self, node, offset: int) -> None:
        if node.kind == "command":
            words = [self._word(part, offset) for part in node.parts if part.kind == "word"]
            read_command(words, self.edits)
        elif node.kind == "assignment":
            self._assignment(node, offset)
        elif node.kind == "parameter":
            self._expansion(offset + node.pos[0], offset + node.pos[1])

    def _word(self, node, offset: int) -> Word:
        start, end = offset + node.pos[0], offset + node.pos[1]
        return Word(self.base + start, self.base + end, node.word, self.view[start:end])

    def _assignment(self, node, offset: int) -> None:
        start, end = offset + node.pos[0], offset + node.pos[1]
        found = ASSIGNED_NAME.match(self.view, start, end)
        if found and found.group(0) != found.group(1):  # NAME= or NAME+=
            self.edits.variable_set(found.group(1), self.base + start)
            value = self.view[found.end() : end]
            _read_options(quoted_words(value, self.base + found.end()), self.edits)

    def _expansion(self, start: int, end: int) -> None:
        for expansion in EXPANSION.finditer(self.view, start, end):
            if not self.scan.in_single_quotes(expansion.start()):
                self.edits.rename(expansion.group(1), self.base + expansion.start(1))


def quoted_words(value: str, start: int) -> List[Word]:
    """The words of a quoted value (at ``start``) that a command line expands later (GLM's
    ``gpt_options=" --distributed-backend nccl ..."``, then ``deepspeed train.py ${gpt_options}``),
    read for their options as the command's own words are; none for an unquoted value."""
    if len(value) < 2 or value[0] != value[-1] or value[0] not in "'\"":
        return []
    return [
        Word(start + word.start(), start + word.end(), word.group(), word.group())
        for word in QUOTED_WORD.finditer(value, 1, len(value) - 1)
    ]


def _nodes(tree) -> list:
    """Every node of a parse, in source order, here-documents left out (their bodies are data)."""
    found, stack = [], list(reversed(tree))
    while stack:
        node = stack.pop()
        if getattr(node, "kind", "") != "heredoc":
            found.append(node)
            stack.extend(reversed(list(_children(node))))
    return found


def _in_place(node, view: str, offset: int) -> bool:
    """Whether a node's position holds its text (words without quotes and backslashes compared)."""
    kind = node.kind
    if kind not in ("word", "assignment", "reservedword", "parameter"):
        return True
    start, end = offset + node.pos[0], offset + node.pos[1]
    raw = view[start:end]
    if kind == "parameter":
        return raw.startswith("$") and _bare(node.value.split(":", 1)[0]) in _bare(raw)
    return isinstance(node.word, str) and _bare(raw) == _bare(node.word)


def _bare(text: str) -> str:
    """A word without line continuations, quotes and backslashes (which bashlex's words drop)."""
    return re.sub(r"\\\n|[\"'\\]", "", text)


def _children(node) -> Iterator:
    import bashlex

    for value in vars(node).values():
        if isinstance(value, bashlex.ast.node):
            yield value
        elif isinstance(value, list):
            yield from (item for item in value if isinstance(item, bashlex.ast.node))


def report_unread(unread: List[Unread], edits: ShellEdits) -> None:
    for piece in unread:
        subject = " ".join(edits.text[piece.start : piece.end].split())
        subject = subject if len(subject) <= 60 else subject[:57] + "..."
        edits.report(piece.start, piece.end, subject, UNREAD_TIP, "not-migrated", UNKNOWN)


# ---------------------------------------------------------------------------------------------
# The kind


class ShellScript(FileKind):
    name = "shell"
    order = 20
    max_bytes = 2 * 1024 * 1024  # larger: an installer with a payload, copied unread

    def claims(self, rel, head):
        path = PurePosixPath(rel)
        if path.suffix in SUFFIXES:
            return True
        return path.suffix.lower() in JOB_SUFFIXES and shebang_shell(head()) in SHELLS

    def migrate(self, data, rel, context):
        tables = shell_tables(context.index)
        if tables.byte_triggers is None or not tables.byte_triggers.search(data):
            return KindOutcome()
        text = decode(data)
        edits = ShellEdits(data, text, context.index, context, rel)
        result = read_shell(text, 0, edits)
        if not result.understood and result.unread:
            return KindOutcome(
                skipped=f"shell parser cannot read it ({result.unread[0].reason}); copied unchanged"
            )
        report_unread(result.unread, edits)
        return edits.outcome()


def shebang_shell(head: bytes) -> str:
    """The shell a ``#!`` line names (``#!/usr/bin/env bash`` -> ``bash``), or ''."""
    if not head.startswith(b"#!"):
        return ""
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and _base_name(words[0]) == "env":
        words = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
    return _base_name(words[0]) if words else ""

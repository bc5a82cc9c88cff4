"""What the config kinds (yaml, json, toml) share: a config is read as a list of settings (a key
and its value, with where the value's characters lie), and the rules act on those.

* ConfigValueRule: a string value under a device or backend key is rewritten in place
  (``device: cuda:0`` -> ``npu:0``); one that names the CUDA value in a form no rule rewrites,
  or that cannot be edited in place (escapes, a block scalar), is reported instead;
* ConfigReportRule: a setting the NPU needs changed by hand is reported with its tip;
* EnvVarRenameRule (the Python side's rules): a key or a whole string value that is an
  environment variable name (``env: {CUDA_VISIBLE_DEVICES: "0"}``, ``- name: NCCL_DEBUG``,
  ``- CUDA_VISIBLE_DEVICES=0``) is renamed as in Python code.

Most JSON and YAML files of a repository are data (annotations, vocabularies); a file is parsed
only when its bytes hold a trigger: a compared key closely followed by a rule's CUDA value, a
reported key, or an environment variable name.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Iterable, List, Optional, Tuple

from gpu2npu.filekinds.base import LIMITED, UNKNOWN, KindOutcome, LineIndex, Reported, SpanEdits
from gpu2npu.rules.kinds.config_report import ConfigReport, reports_for
from gpu2npu.rules.kinds.config_value import (
    ConfigValue,
    built_by_matches,
    change_message,
    new_value,
    setting_key,
    value_rules,
)

STRING, SCALAR, NULL, LIST = "string", "scalar", "null", "list"
VOCABULARY_SIZE = 1000  # a token -> id map holds thousands; a config, tens to hundreds of settings
ENV_RULE_KIND = "EnvVarRenameRule"
# How far apart a compared key and a CUDA value may be in the bytes (quotes, ': ', '- ' of a list).
TRIGGER_GAP = 80
# What may stand between a reported key and its value (quotes, ':' or '=', spaces, a line break),
# and what may not follow the value.
REPORTED_VALUE = rb"""["']?\s*[:=]\s*["']?(?:%s)(?![a-z0-9_.:+-])"""
KEY_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-")
KEY_CHARACTERS = {bytes([byte]) for byte in KEY_BYTES}
SUBJECT_WIDTH = 80
ENV_ITEM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")

Span = Tuple[int, int]


@dataclass
class Setting:
    """One value of a config under its key (an item of a list: under the list's key)."""

    key: str  # as written; its last dotted part is compared
    text: str  # the value as text: a string as it reads, true/false, a number as written; "" for a list
    kind: str  # STRING, SCALAR (number, boolean, date), NULL, LIST (a non-empty list or mapping)
    line: int = 0  # 1-based line of the key (0: the line of the located value)
    end_line: int = 0
    span: Optional[Span] = None  # byte span of the value's characters (inside any quotes); None: not in place
    item: bool = False  # an item of a list (never reported by ConfigReportRule on its own)
    built_by: str = ""  # the class built from the mapping holding it (Hydra's _target_), "" none


@dataclass
class KeyName:
    """A mapping key written where it can be edited in place (an environment variable's name)."""

    name: str
    span: Span  # byte span of its characters (inside any quotes)


class InvalidConfig(Exception):
    """The parser refused the file: the one-line reason."""


def triggered(data: bytes, index) -> bool:
    """Whether a file may hold something a rule acts on (cheap: no parse)."""
    return index.derive("config-settings-triggers", _Triggers).found_in(data)


class _Triggers:
    """What a config must hold for any rule to act on it, searched in its bytes: a compared key
    closely followed by a rule's CUDA value (or, for a report, its value pattern), a reported key
    (a rule for any value or for lists), or an environment variable name. Keys are found without
    case, '-' and '_' alike; every needle is a plain byte search (no regex over the whole file)."""

    def __init__(self, index):
        self.names = sorted({name.encode("utf-8") for name in _env_names(index)})
        self.values = []  # (CUDA value, key needles, what must follow a needle)
        for rule in index.rules_of(ConfigValue.name):
            follow = re.compile(b"[\\s\\S]{0,%d}?%s" % (TRIGGER_GAP, re.escape(rule["old"].lower().encode())))
            self.values.append((rule["old"].encode("utf-8"), _needles(rule["keys"]), follow))
        self.reports = []  # (key needles, what must follow one, or None)
        for rule in index.rules_of(ConfigReport.name):
            follow = None
            if rule.get("value") is not None and not rule["lists"]:  # the key's whole value
                value = rule["value"].encode("utf-8")
                follow = re.compile(REPORTED_VALUE % value, re.IGNORECASE)
            self.reports.append((_needles(rule["keys"]), follow))

    def found_in(self, data: bytes) -> bool:
        if any(name in data for name in self.names):
            return True
        lowered = None
        for old, needles, follow in self.values:
            if old in data:
                lowered = lowered if lowered is not None else data.lower()
                if _near(lowered, needles, follow):
                    return True
        if self.reports:
            lowered = lowered if lowered is not None else data.lower()
            return any(_near(lowered, needles, follow) for needles, follow in self.reports)
        return False


def _needles(keys: Iterable[str]) -> List[bytes]:
    """The compared keys as bytes in lower case, with '_' and with '-'."""
    words = {setting_key(key) for key in keys}
    return sorted({spelling.encode("utf-8") for word in words for spelling in (word, word.replace("_", "-"))})


def _near(lowered: bytes, needles: List[bytes], follow) -> bool:
    """Whether a needle stands as a whole key (``device`` is not ``device_id``) with ``follow``
    (None: anything) after it."""
    for needle in needles:
        position = lowered.find(needle)
        while position != -1:
            end = position + len(needle)
            if (
                (position == 0 or lowered[position - 1] not in KEY_BYTES)
                and lowered[end : end + 1] not in KEY_CHARACTERS
                and (follow is None or follow.match(lowered, end))
            ):
                return True
            position = lowered.find(needle, position + 1)
    return False


def _env_names(index) -> List[str]:
    """The environment variable names an active EnvVarRenameRule renames."""
    return [
        rule.fields["old_name"]
        for rule in index.rules_by_id.values()
        if rule.kind == ENV_RULE_KIND and "old_name" in rule.fields
    ]


def env_rename(index, name: str) -> Optional[Tuple[str, object]]:
    """(new name, string target) when ``name`` is an environment variable an active rule renames."""
    if name not in index.derive("config-settings-env-names", lambda index: frozenset(_env_names(index))):
        return None
    found = index.strings.rewrite(name)
    if found is None:
        return None
    rule = index.rules_by_id.get(found[1].rule_id)
    return found if rule is not None and rule.kind == ENV_RULE_KIND else None


def migrate_settings(
    data: bytes, settings: Iterable[Setting], context, keys: Iterable[KeyName] = ()
) -> KindOutcome:
    """The edits and reports of the rules on the settings of one file."""
    index = context.index
    edits = SpanEdits(data)
    lines = edits.lines
    reported = set()
    for key in keys:
        _rename_env_key(key, edits, index)
    settings = list(settings)
    vocabulary = _is_vocabulary(settings)
    for setting in settings:
        if setting.kind == STRING:
            if _migrate_value(setting, edits, lines, index, reported) or _rename_env_value(
                setting, edits, index
            ):
                continue
        if not setting.item and not (vocabulary and setting.kind == SCALAR):
            _report(setting, lines, index, reported)
    return edits.outcome(KindOutcome(reported=sorted(reported)))


def _is_vocabulary(settings: List[Setting]) -> bool:
    """Whether the file is a token -> id map (a tokenizer's vocab.json: GLM's ``"GPU": 33346``),
    whose keys are words, not settings: thousands of values, nearly all of them numbers."""
    numbers = sum(setting.kind == SCALAR for setting in settings)
    return numbers >= VOCABULARY_SIZE and numbers * 10 >= len(settings) * 9


def _migrate_value(setting: Setting, edits: SpanEdits, lines: LineIndex, index, reported: set) -> bool:
    """Rewrite (or report) a device/backend value; whether a ConfigValueRule took it."""
    found = new_value(index, setting.key, setting.text, setting.built_by)
    if found is None:
        _report_unrewritten(setting, lines, index, reported)
        return False
    new, rule = found
    span = setting.span
    if span is None or data_differs(edits.data, span, setting.text):
        line, end_line = _lines(setting, span, lines)
        tip = f"change it to {new} by hand (written with escapes or as a block: left as it is)"
        reported.add(Reported(line, end_line, _subject(setting), tip, rule.id, LIMITED))
        return True
    message = change_message(rule, setting.key, setting.text, new)
    edits.replace(span[0], span[1], new.encode("utf-8"), message, rule.id)
    return True


def data_differs(data: bytes, span: Span, text: str) -> bool:
    """Whether the bytes of a span are not the value's text itself (escapes, folding)."""
    return data[span[0] : span[1]] != text.encode("utf-8", "surrogateescape")


def _report_unrewritten(setting: Setting, lines: LineIndex, index, reported: set) -> None:
    """A device/backend setting that names the CUDA value in a form no rule rewrites
    (``device: cuda:0,1``, ``backend: cpu:gloo,cuda:nccl``): manual work."""
    for rule in value_rules(index).get(setting_key(setting.key), ()):
        if built_by_matches(rule, setting.built_by) and re.search(
            rf"(?<![A-Za-z0-9]){re.escape(rule['old'])}(?![A-Za-z])", setting.text, re.IGNORECASE
        ):
            line, end_line = _lines(setting, None, lines)
            tip = f"write the NPU value ({rule['new']} for {rule['old']}) as the code reading it expects"
            reported.add(Reported(line, end_line, _subject(setting), tip, rule.id, UNKNOWN))
            return


def _rename_env_value(setting: Setting, edits: SpanEdits, index) -> bool:
    """``name: CUDA_VISIBLE_DEVICES`` (a k8s env entry) or ``- CUDA_VISIBLE_DEVICES=0`` (compose)."""
    text = setting.text
    item = ENV_ITEM.match(text)
    name = item.group(1) if item else text
    found = env_rename(index, name)
    if found is None:
        return False
    new, target = found
    span = setting.span
    if span is None or data_differs(edits.data, span, text):
        return False
    edits.replace(span[0], span[0] + len(name), new.encode("utf-8"), target.message, target.rule_id)
    return True


def _rename_env_key(key: KeyName, edits: SpanEdits, index) -> None:
    found = env_rename(index, key.name)
    if found is not None and not data_differs(edits.data, key.span, key.name):
        new, target = found
        edits.replace(key.span[0], key.span[1], new.encode("utf-8"), target.message, target.rule_id)


def _report(setting: Setting, lines: LineIndex, index, reported: set) -> None:
    if setting.kind == NULL:
        return
    rules = reports_for(index, setting.key, setting.text, setting.kind == LIST, setting.built_by)
    if not rules:
        return
    line, end_line = _lines(setting, None, lines)
    subject = _subject(setting)
    for rule in rules:
        reported.add(Reported(line, end_line, subject, rule["tip"], rule.id, rule["category"]))


def _subject(setting: Setting) -> str:
    """``key: value`` on one line (a long value cut), or the key of a list."""
    if setting.kind == LIST:
        return setting.key
    text = setting.text.strip().replace("\r", "\\r").replace("\n", "\\n")
    return f"{setting.key}: {text if len(text) <= SUBJECT_WIDTH else text[:SUBJECT_WIDTH] + '...'}"


def _lines(setting: Setting, span: Optional[Span], lines: LineIndex) -> Tuple[int, int]:
    if setting.line:
        return setting.line, max(setting.line, setting.end_line)
    span = span if span is not None else setting.span
    if span is None:
        return 1, 1
    return lines.line_of(span[0]), lines.line_of(max(span[0], span[1] - 1))


class TextLines:
    """Line numbers of character positions in decoded text."""

    def __init__(self, text: str):
        self.newlines = [found.start() for found in re.finditer("\n", text)]

    def line_of(self, position: int) -> int:
        return bisect.bisect_left(self.newlines, position) + 1


def require_utf8(data: bytes, what: str) -> str:
    """The text of a config file; one that is not UTF-8 is invalid (YAML, JSON and TOML all say so)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidConfig(
            f"invalid {what} (line {line}: not UTF-8, byte 0x{data[exc.start]:02x})"
        ) from None


def migrate_config(data: bytes, context, what: str, read) -> KindOutcome:
    """A config file of the format ``what`` migrated: not parsed at all without a trigger; ``read``
    turns its text into (settings, keys), or raises InvalidConfig (the file is then skipped)."""
    if not triggered(data, context.index):
        return KindOutcome()
    try:
        settings, keys = read(require_utf8(data, what))
    except InvalidConfig as exc:
        return skipped(str(exc))
    return migrate_settings(data, settings, context, keys)


def skipped(reason: str) -> KindOutcome:
    return KindOutcome(skipped=f"{reason}; copied unchanged")

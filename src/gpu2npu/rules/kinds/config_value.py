"""ConfigValueRule: the value of a setting whose key says it is a device or a distributed
backend, wherever settings are written outside Python: a key of a YAML, JSON or TOML config
(``device: cuda:0``, ``"backend": "nccl"``), an option of a command line in a launch script
(``--dist-backend nccl``, ``--device=cuda``) or a Hydra override (``trainer.device=cuda``).

``keys`` are compared without case, with ``-`` and ``_`` alike, and for a dotted key only its
last part. ``match`` says how the value is compared with ``old``: ``exact`` (the whole value)
or ``device`` (the device alone or with an index or placeholder: ``cuda:0``, ``cuda:${rank}``).
Values under other keys are never touched: prose that mentions cuda stays prose. With
``built_by``, a YAML setting is changed only where the mapping holding it builds a class whose
name the regular expression matches whole (Hydra's ``_target_``): ``accelerator: cuda`` is the
project's own trainer's device there, and Lightning's setting elsewhere.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from gpu2npu.rules.kind import FileRuleKind
from gpu2npu.rules.kinds._reported import regex_problem
from gpu2npu.rules.model import Field, Rule

MATCHES = ("exact", "device")
# An index or a placeholder after the device: cuda:0, cuda:$LOCAL_RANK, cuda:${rank}, cuda:{rank}
DEVICE_REST = re.compile(r"^(:([0-9]+|\$\{[^{}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\{[^{}]*\}|%[sd]))?$")


BUILT_BY_FIELD = Field(
    str, help="regex the class built from the setting's mapping (Hydra's _target_, '' none) must match"
)


class ConfigValue(FileRuleKind):
    name = "ConfigValueRule"
    file_kind = "yaml"
    example_file = "config.yaml"
    fields = {
        "keys": Field(list, required=True, help="setting names whose value is a device or a backend"),
        "old": Field(str, required=True, help="the CUDA value, e.g. cuda or nccl"),
        "new": Field(str, required=True, help="the NPU value, e.g. npu or hccl"),
        "match": Field(str, default="exact", help="exact or device (with an index: cuda:0)"),
        "built_by": BUILT_BY_FIELD,
    }

    def validate(self, fields):
        if fields["match"] not in MATCHES:
            return f"'match' must be one of {', '.join(MATCHES)}, not {fields['match']!r}"
        if not fields["keys"] or not all(isinstance(key, str) and key.strip() for key in fields["keys"]):
            return "'keys' must be a non-empty list of setting names"
        for key in ("old", "new"):
            if not re.fullmatch(r"[A-Za-z0-9_.\-]+", fields[key]):
                return f"'{key}' must be a plain value (letters, digits, '_', '.', '-'), not {fields[key]!r}"
        return regex_problem("built_by", fields["built_by"])

    def describe(self, rule):
        keys = rule["keys"]
        shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        return f"{shown}: {rule['old']} -> {rule['new']}"

    def subject(self, rule):
        return None


def setting_key(key: str) -> str:
    """A key as the rules compare it (an option's dashes gone): its last dotted part, lower
    case, '-' as '_'."""
    return key.strip().lstrip("-").rsplit(".", 1)[-1].lower().replace("-", "_")


def value_rules(index) -> Dict[str, List[Rule]]:
    """The rules by compared key (built once per index)."""

    def build(index) -> Dict[str, List[Rule]]:
        table: Dict[str, List[Rule]] = {}
        for rule in index.rules_of(ConfigValue.name):
            for key in rule["keys"]:
                table.setdefault(setting_key(key), []).append(rule)
        return table

    return index.derive(ConfigValue.name, build)


def new_value(index, key: str, value: str, built_by: str = "") -> Optional[tuple]:
    """(new value, rule) for the value of a setting, or None when no rule changes it;
    ``built_by``: the class built from the mapping holding the setting ("" none known)."""
    for rule in value_rules(index).get(setting_key(key), ()):
        if not built_by_matches(rule, built_by):
            continue
        old = rule["old"]
        if rule["match"] == "exact":
            if value == old:
                return rule["new"], rule
        elif value.startswith(old) and DEVICE_REST.fullmatch(value[len(old) :]):
            return rule["new"] + value[len(old) :], rule
    return None


def built_by_matches(rule: Rule, built_by: str) -> bool:
    """Whether a rule's ``built_by`` (a regex, if it has one) matches the class built from the
    mapping holding a setting ("" where none is known)."""
    return rule.get("built_by") is None or re.fullmatch(rule["built_by"], built_by) is not None


def change_message(rule: Rule, key: str, value: str, new: str) -> str:
    return f"change {setting_key(key)} {value} to {new}"

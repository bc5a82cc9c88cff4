"""ConfigReportRule: a setting of a config file (YAML, JSON, TOML) that selects something the NPU
lacks or names differently, where no rewrite is known to work (``accelerator: gpu`` for
Lightning, ``attn_implementation: flash_attention_2``, ``use_xformers: true``). The setting is
left as it is and reported with ``tip``, what to do, in ``category`` (a check category).

``keys`` are compared as ConfigValueRule compares them (without case, ``-`` and ``_`` alike, the
last part of a dotted key). ``value`` is a regular expression the whole value must match, without
case: a string as it reads, a boolean as ``true``/``false``, a number as written; without it any
value but an empty one or null matches. A list or mapping under the key matches only with
``lists: true`` (``gpu_ids: [0, 1]``); the items of a list are never compared one by one.
``built_by`` is ConfigValueRule's: the class built from the setting's mapping must match it.
With ``shell_options: true`` a shell command line's option is such a setting too
(``--distributed-backend nccl``, in the command or in a quoted value it expands later).

    rules:
      ConfigReportRule:
        - {id: G2N840, keys: [use_xformers], value: "true|1", tip: "...", category: unsupported}
"""

from __future__ import annotations

import re
from typing import Dict, List

from gpu2npu.rules.kind import FileRuleKind
from gpu2npu.rules.kinds._reported import regex_problem, report_problem
from gpu2npu.rules.kinds.config_value import BUILT_BY_FIELD, built_by_matches, setting_key
from gpu2npu.rules.model import Field, Rule


class ConfigReport(FileRuleKind):
    name = "ConfigReportRule"
    file_kind = "yaml"
    example_file = "config.yaml"
    fields = {
        "keys": Field(list, required=True, help="setting names, e.g. accelerator"),
        "value": Field(str, help="regex the whole value matches (no case); absent: any value but empty/null"),
        "lists": Field(bool, default=False, help="also a non-empty list or mapping under the key"),
        "tip": Field(str, required=True, help="what to do"),
        "category": Field(str, default="limited", help="unsupported, limited, unknown or mention"),
        "built_by": BUILT_BY_FIELD,
        "shell_options": Field(bool, default=False, help="also an option of a shell command line"),
    }

    def validate(self, fields):
        if not fields["keys"] or not all(isinstance(key, str) and key.strip() for key in fields["keys"]):
            return "'keys' must be a non-empty list of setting names"
        return (
            report_problem(fields)
            or regex_problem("value", fields["value"])
            or regex_problem("built_by", fields["built_by"])
        )

    def describe(self, rule):
        lists = " (or a list)" if rule["lists"] else ""
        return f"report {', '.join(rule['keys'])}: {rule.get('value', 'any value')}{lists}"


def report_rules(index) -> Dict[str, List[Rule]]:
    """The rules by compared key (built once per index)."""

    def build(index) -> Dict[str, List[Rule]]:
        table: Dict[str, List[Rule]] = {}
        for rule in index.rules_of(ConfigReport.name):
            for key in rule["keys"]:
                table.setdefault(setting_key(key), []).append(rule)
        return table

    return index.derive(ConfigReport.name, build)


def reports_for(index, key: str, text: str, is_list: bool = False, built_by: str = "") -> List[Rule]:
    """The rules that report a setting: ``text`` is its value as text (a list or mapping: ``is_list``,
    non-empty); ``built_by``: the class built from the mapping holding it."""
    found = []
    for rule in report_rules(index).get(setting_key(key), ()):
        if not built_by_matches(rule, built_by):
            continue
        if is_list:
            matches = rule["lists"]
        elif rule.get("value") is None:
            matches = bool(text) and text.lower() not in ("null", "none", "~")
        else:
            matches = re.fullmatch(rule["value"], text, re.IGNORECASE) is not None
        if matches:
            found.append(rule)
    return found

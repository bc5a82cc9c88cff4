"""A rule kind: the one unit a contributor adds to teach gpu2npu a new kind of rule.

A kind is a subclass of ``RuleKind`` that names itself; defining the class registers it.
The built-in kinds are the modules of ``gpu2npu.rules.kinds``, imported on first use by
walking that package, so a new kind is one new module there (plus its fixtures) and no list
to edit. A kind declares:

* ``name``: the key in rule files (msFmkTransplt's names where it has one);
* ``fields``: its fields (``gpu2npu.rules.model.Field``), checked by the loader;
* ``validate(fields)``: a readable problem with the values, or None;
* ``compile(rule, index)``: what it adds to the tables of the compiled index, which are the
  match points the rewrite pass offers (qualified names, methods, attributes, calls, string
  literals, imports) and the API statuses the reports read;
* ``trigger_words(rule)`` / ``triggers(rule)``: text one of which a file must contain for the
  rule to fire there (the byte scan that sends most files straight to the copy);
  ``trigger_names(rule)``: qualified names the rule acts on, for which the index picks words
  (``gpu2npu.rules.triggers.name_words``);
  ``text_only``: a file only such rules trigger can be edited as text, without a syntax tree;
* ``describe(rule)``: one line for ``gpu2npu rules list`` and the summary table;
* ``file_kind``: the kind of file its rules act on (``FileRuleKind`` for all but Python);
* ``subject(rule)``: what a change made by the rule converts, as a name (the rows of
  ``analyse -m third_party``); None when its changes are no use of an API.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import ClassVar, Dict, Iterable, Optional, Set

from gpu2npu.rules.model import Field, Rule

_REGISTRY: Dict[str, "RuleKind"] = {}
_BUILTIN_PACKAGE = "gpu2npu.rules.kinds"
_BUILTIN_LOADED = False


class RuleKind:
    name: ClassVar[str] = ""
    fields: ClassVar[Dict[str, Field]] = {}
    text_only: ClassVar[bool] = False
    file_kind: ClassVar[str] = "python"  # the file kind (gpu2npu.filekinds) its rules act on

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            _REGISTRY[cls.name] = cls()

    def validate(self, fields: Dict) -> Optional[str]:
        return None

    def compile(self, rule: Rule, index) -> None:
        raise NotImplementedError(f"{self.name} does not say how it compiles")

    def trigger_words(self, rule: Rule) -> Iterable[str]:
        return ()

    def trigger_names(self, rule: Rule) -> Iterable[str]:
        return ()

    def triggers(self, rule: Rule) -> Set:
        """Regexes (on the file's bytes, decoded as UTF-8) of which one must match; a
        ``(gate, pattern)`` pair matches where both do (``gpu2npu.rules.triggers.split_gated``)."""
        return {re.escape(word) for word in self.trigger_words(rule)}

    def describe(self, rule: Rule) -> str:
        return self.name

    def subject(self, rule: Rule) -> Optional[str]:
        return None


class FileRuleKind(RuleKind):
    """A kind whose rules act on files other than Python (``file_kind``): compiled into the
    index's ``file_rules``, read there by that file kind; its examples are files of that kind,
    named ``example_file``."""

    example_file: ClassVar[str] = ""

    def compile(self, rule: Rule, index) -> None:
        index.file_rules.setdefault(self.name, []).append(rule)


def kinds() -> Dict[str, RuleKind]:
    """Every registered kind by name: the built-in ones and any defined elsewhere."""
    if not _BUILTIN_LOADED:
        _load_builtin_kinds()
    return _REGISTRY


def kind_named(name: str) -> Optional[RuleKind]:
    return kinds().get(name)


def _load_builtin_kinds() -> None:
    global _BUILTIN_LOADED
    package = importlib.import_module(_BUILTIN_PACKAGE)
    for module in pkgutil.iter_modules(package.__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{_BUILTIN_PACKAGE}.{module.name}")
    _BUILTIN_LOADED = True

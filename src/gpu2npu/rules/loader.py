"""Read rule files (built-in YAML, user JSON or YAML) and validate every entry.

A file holds ``{"rules": {KindName: [entry, ...]}}`` -- msFmkTransplt's user-rule shape,
accepted verbatim -- plus an optional ``disable: [rule ids]`` list. Every problem is reported
as one error naming the file, the entry and what is allowed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

import yaml

from gpu2npu.errors import RuleFileError
from gpu2npu.rules.kind import RuleKind, kind_named, kinds
from gpu2npu.rules.location import builtin_rules_dir
from gpu2npu.rules.model import (
    COMMON_FIELDS,
    DOTTED_NAME,
    EQUIVALENCE,
    Optimization,
    Rule,
    RuleSet,
    check_type,
    type_name,
)
from gpu2npu.source.files import FileTooLarge, NotRegularFile, read_regular_file
from gpu2npu.versions import parse_version_spec

# libyaml's loader when PyYAML was built with it (about ten times faster), else pure Python.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The folder of rules/ that only --optimize loads; each of its rules says its `equivalence`.
OPTIMIZATIONS = "optimize"
# The rule folders of a full migration: rules/ itself, and the rules of every mode.
FULL_MIGRATION = ("", "every_mode")
MIB = 1024 * 1024
# The largest built-in rule file is about 50 KiB; 8 MiB leaves room for generated rule files while
# bounding the time and memory parsing one may take.
MAX_RULE_FILE_BYTES = 8 * MIB
# Rule files nest six levels (the file > rules > kind > entry > examples > example); 32 leaves room
# and stays far below where the parsers run out of stack (the json parser's recursion limit,
# libyaml's recursive composer).
MAX_NESTING = 32
# What libyaml (PyYAML 6.0.4 and later) says when its scanner meets nesting past its own limit,
# which a long line of '[' reaches before the events do.
LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"


def builtin_rule_files(folders: Sequence[str] = FULL_MIGRATION) -> List[Path]:
    """The built-in rule files of ``folders`` of rules/ ("" is rules/ itself; an entry ending in
    .yaml is that one file), in order."""
    root = builtin_rules_dir()
    return [
        path
        for folder in folders
        for path in ([root / folder] if folder.endswith(".yaml") else sorted((root / folder).glob("*.yaml")))
    ]


def every_builtin_rule_file() -> List[Path]:
    """Every built-in rule file, of every mode (for validation and the rules' own tests)."""
    root = builtin_rules_dir()
    return sorted(root.glob("*.yaml")) + sorted(root.glob("*/*.yaml"))


def load_builtin_rules(folders: Sequence[str] = FULL_MIGRATION) -> RuleSet:
    rule_set = RuleSet()
    for path in builtin_rule_files(folders):
        rule_set.extend(load_rule_file(path, id_prefix=None))
    return rule_set


def load_rules(user_files: Iterable = (), folders: Sequence[str] = FULL_MIGRATION) -> RuleSet:
    """The built-in rules of ``folders`` followed by those of the user's files (later files win)."""
    rule_set = load_builtin_rules(folders)
    rule_set.extend(load_rule_files(user_files))
    return rule_set


def load_rule_files(paths: Iterable) -> RuleSet:
    rule_set = RuleSet()
    for path in paths:
        rule_set.extend(load_rule_file(Path(path), id_prefix=Path(path).name))
    return rule_set


def load_rule_file(path: Path, id_prefix=None) -> RuleSet:
    """Load one file. User files (id_prefix set) get ids like ``my.json:ArgsModifyRule[0]``."""
    data = _read_structured(path)
    if not isinstance(data, dict) or not isinstance(data.get("rules", {}), dict):
        raise RuleFileError(path, "", "the top level must be a mapping with a 'rules' mapping of rule kinds")
    unknown_top = set(data) - {"rules", "disable"}
    if unknown_top:
        raise RuleFileError(
            path, "", f"unknown top-level key(s) {sorted(unknown_top, key=str)}; allowed: rules, disable"
        )
    rule_set = RuleSet(files=[str(path)])
    rule_set.disabled = set(_disabled_ids(path, data.get("disable", [])))
    for kind_name, entries in (data.get("rules") or {}).items():
        rule_set.rules.extend(_load_kind(path, kind_name, entries, id_prefix))
    _check_unique_ids(path, rule_set.rules)
    return rule_set


def _read_structured(path: Path) -> Any:
    text = _read_text(path)
    if path.suffix.lower() == ".json":
        return _parse_json(path, text)
    return _parse_yaml(path, text)


def _read_text(path: Path) -> str:
    """The file's text, read only when it is a regular file of at most MAX_RULE_FILE_BYTES."""
    try:
        data = read_regular_file(path, MAX_RULE_FILE_BYTES)
    except FileNotFoundError:
        raise RuleFileError(path, "", "file not found") from None
    except NotRegularFile as exc:
        raise _refused(path, f"not a regular file but {exc.kind}", "pass a JSON or YAML rule file") from None
    except FileTooLarge:
        raise _refused(
            path,
            f"larger than {MAX_RULE_FILE_BYTES // MIB} MiB, the most a rule file may hold",
            "split it into smaller rule files",
        ) from None
    except OSError as exc:
        raise RuleFileError(path, "", f"cannot read it ({exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RuleFileError(path, "", f"cannot read it ({exc})") from None


def _refused(path: Path, problem: str, todo: str) -> RuleFileError:
    """A rule-file error whose remedy is not editing the file."""
    error = RuleFileError(path, "", problem)
    error.todo = todo
    return error


def _too_deep(path: Path, where: str = "") -> RuleFileError:
    return RuleFileError(
        path, where, f"nested deeper than {MAX_NESTING} levels, the most a rule file may nest"
    )


def _parse_json(path: Path, text: str) -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RuleFileError(path, f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from None
    except RecursionError:  # the json parser counts its nesting against the recursion limit
        raise _too_deep(path) from None
    except ValueError as exc:  # a number with more digits than Python converts
        raise RuleFileError(path, "", f"invalid JSON: {_first_clause(exc)}") from None
    if _nesting(data) > MAX_NESTING:
        raise _too_deep(path)
    return data


def _nesting(data: Any) -> int:
    """How many lists and mappings deep ``data`` goes (walked without recursion); stops counting
    once past MAX_NESTING."""
    deepest, pending = 0, [(data, 1)]
    while pending and deepest <= MAX_NESTING:
        value, depth = pending.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is not None:
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in children)
    return deepest


def _parse_yaml(path: Path, text: str) -> Any:
    try:
        _check_yaml_events(path, text)
        return yaml.load(text, Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        if LIBYAML_TOO_DEEP in str(getattr(exc, "problem", "")):  # PyYAML 6.0.4+: libyaml's own limit
            raise _too_deep(path, where) from None
        raise RuleFileError(path, where, f"invalid YAML: {getattr(exc, 'problem', exc)}") from None
    except ValueError as exc:  # a number with more digits than Python converts, a date like 2020-13-01
        raise RuleFileError(path, "", f"invalid YAML: {_first_clause(exc)}") from None


def _first_clause(exc: Exception) -> str:
    # Python's own advice after the ';' (sys.set_int_max_str_digits) is no use to a rule author.
    return str(exc).split(";")[0]


def _check_yaml_events(path: Path, text: str) -> None:
    """Refuse deep nesting and aliases before building anything: libyaml's composer recurses
    (a few thousand levels crash the interpreter), and aliases of aliases expand exponentially."""
    depth = 0
    for event in yaml.parse(text, Loader=YAML_LOADER):
        if isinstance(event, yaml.AliasEvent):
            raise RuleFileError(
                path,
                _yaml_line(event),
                "YAML aliases (*name) are not allowed in rule files (write each value out)",
            )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise _too_deep(path, _yaml_line(event))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _yaml_line(event) -> str:
    return f"line {event.start_mark.line + 1}" if event.start_mark else ""


def _disabled_ids(path: Path, value: Any) -> List[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RuleFileError(path, "disable", "must be a list of rule ids")
    return value


def _load_kind(path: Path, kind_name: str, entries: Any, id_prefix) -> List[Rule]:
    kind = kind_named(kind_name)
    if kind is None:
        raise RuleFileError(
            path, f"rules.{_shown(kind_name)}", f"unknown rule kind; allowed: {', '.join(sorted(kinds()))}"
        )
    if not isinstance(entries, list):
        raise RuleFileError(path, f"rules.{_shown(kind_name)}", "must be a list of rule entries")
    rules = []
    for position, entry in enumerate(entries):
        where = f"rules.{kind_name}[{position}]"
        rule = _load_entry(path, where, kind, entry, id_prefix)
        if rule is not None:
            rules.append(rule)
    return rules


def _shown(value: Any) -> str:
    """A key of the file as a message shows it: as written, or escaped when it would break the
    one-line message (a line break, a control character)."""
    text = str(value)
    return text if text.isprintable() else repr(text)


def _quoted(value: Any) -> str:
    text = str(value)
    return f"'{text}'" if text.isprintable() else repr(text)


def _load_entry(path: Path, where: str, kind: RuleKind, entry: Any, id_prefix):
    if not isinstance(entry, dict):
        raise RuleFileError(path, where, "each entry must be a mapping of fields")
    allowed = {**COMMON_FIELDS, **kind.fields}
    for name in entry:
        if name not in allowed:
            raise RuleFileError(path, where, f"unknown field {_quoted(name)}; allowed: {', '.join(allowed)}")
    fields: Dict[str, Any] = {}
    for name, spec in kind.fields.items():
        fields[name] = _field_value(path, where, name, spec, entry)
    for name in ("note", "feature_switch"):  # common fields of a plain type: checked like the kind's
        if name in entry:
            _field_value(path, where, name, COMMON_FIELDS[name], entry)
    switches = entry.get("feature_switch")
    if switches is not None and not all(isinstance(switch, str) for switch in switches):
        raise RuleFileError(path, where, "'feature_switch' must be a list of mode names such as normal")
    problem = kind.validate(fields)
    if problem:
        raise RuleFileError(path, where, problem)
    rule_id = entry.get("id")
    if rule_id is None:
        if id_prefix is None:
            raise RuleFileError(path, where, "built-in rules need an 'id'")
        rule_id = f"{id_prefix}:{where[len('rules.') :]}"
    elif not str(rule_id).isprintable():  # ids go into one-line messages and the CSV reports
        raise RuleFileError(path, f"{where}.id", f"must be printable text on one line, not {str(rule_id)!r}")
    try:
        versions = parse_version_spec(entry.get("versions", "all"))
    except ValueError as exc:
        raise RuleFileError(path, f"{where} versions", str(exc)) from None
    return Rule(
        kind=kind.name,
        id=str(rule_id),
        fields=fields,
        versions=versions,
        source=f"{path.name}: {where}",
        note=str(entry.get("note", "")),
        examples=_examples(path, where, entry.get("examples", [])),
        builtin=id_prefix is None,
        switches=frozenset(switches) if switches is not None else None,
        optimization=_optimization(path, where, entry.get("optimization")),
    )


def _optimization(path: Path, where: str, value: Any) -> Optional[Optimization]:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"category", "equivalence", "doc"}:
        raise RuleFileError(
            path, f"{where}.optimization", "must have exactly 'category', 'equivalence' and 'doc'"
        )
    if not all(isinstance(text, str) and text for text in value.values()):
        raise RuleFileError(path, f"{where}.optimization", "'category', 'equivalence' and 'doc' must be text")
    if value["equivalence"] not in EQUIVALENCE:
        raise RuleFileError(
            path, f"{where}.optimization.equivalence", f"must be one of {', '.join(EQUIVALENCE)}"
        )
    return Optimization(value["category"], value["equivalence"], value["doc"])


def _field_value(path: Path, where: str, name: str, spec, entry: Dict[str, Any]) -> Any:
    if name not in entry or entry[name] is None and not spec.required:
        if spec.required:
            raise RuleFileError(
                path, where, f"missing required field '{name}' ({spec.help or type_name(spec.type)})"
            )
        return spec.default
    value = entry[name]
    if value is None and spec.nullable:
        return None
    if not check_type(value, spec.type):
        raise RuleFileError(path, f"{where}.{name}", f"must be {type_name(spec.type)}, not {value!r}")
    for item in (value if isinstance(value, list) else [value]) if spec.dotted else ():
        if not isinstance(item, str) or not DOTTED_NAME.match(item):
            raise RuleFileError(
                path,
                f"{where}.{name}",
                f"{item!r} is not a dotted Python name such as torch.cuda.synchronize",
            )
    return value


def _examples(path: Path, where: str, value: Any):
    if not isinstance(value, list):
        raise RuleFileError(path, f"{where}.examples", "must be a list of {before, after} mappings")
    pairs = []
    for number, example in enumerate(value):
        if not isinstance(example, dict) or set(example) != {"before", "after"}:
            raise RuleFileError(path, f"{where}.examples[{number}]", "must have exactly 'before' and 'after'")
        pairs.append((str(example["before"]), str(example["after"])))
    return tuple(pairs)


def _check_unique_ids(path: Path, rules: List[Rule]) -> None:
    seen = set()
    for rule in rules:
        if rule.id in seen:
            raise RuleFileError(path, rule.source.split(": ", 1)[-1], f"duplicate rule id '{rule.id}'")
        seen.add(rule.id)

"""Precision and performance advice for the call sites of a project.

The facts are data (advice.yaml beside this module, written from kb/perf_precision_advice.json);
this module only matches them against CallSite records:

* precision / performance advice: a call, class base or recorded attribute of exactly that API
  (a class deriving from torch.nn.Linear gets the Linear advice, as in msFmkTransplt), or only
  the calls whose keyword argument has one of some values (``when``: no fused-optimizer advice for
  a call that passes fused=True);
* parameter checks: the source text of one argument of a call (keyword, else position, else
  the default) compared with a recommended or a discouraged value;
* project rows: unconditional configuration advice, and APIs worth using that never are
  (``no_sync`` when DistributedDataParallel is used).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple

import yaml

from gpu2npu.apis.callsites import CallSite
from gpu2npu.errors import RuleFileError
from gpu2npu.source.torch_names import DTYPE_NAMES

ADVICE_FILE = Path(__file__).resolve().parent / "advice.yaml"
# libyaml's loader when PyYAML was built with it, else pure Python (same choice as the rule loader).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Sites that "use" an API for API advice: calls, class bases (a subclass inherits the concern),
# and attribute references, which the collector records only when they are worth a row.
_ADVICE_KINDS = frozenset({"call", "base", "attribute"})
# Sites that count as "the project uses this API" for suggested-use rows.
_USE_KINDS = frozenset({"call", "base"})
_SECTIONS = ("precision", "performance", "parameters", "suggested_use", "configuration")


@dataclass(frozen=True, order=True)
class AdviceRow:
    file: str  # '' for project-level rows (written as NA by the report writer)
    start_line: int  # 0 for project-level rows
    end_line: int
    op: str  # the API (or the method name when the receiver is unknown)
    tip: str


@dataclass(frozen=True)
class ParameterCheck:
    target: str  # full API name, or a method name when by_method
    by_method: bool
    parameter: str
    position: int  # 0-based among the call's positional arguments
    value: str  # source text of the expected or the unexpected value
    must_equal: bool  # True: a row unless the argument is value; False: a row when it is
    default: Optional[str]  # the argument's value when not given; None: not checked then
    only_if: str  # name of an extra condition on the call ('' for none)
    advice: str


@dataclass(frozen=True)
class KeywordCondition:
    """API advice holds for a call only while this keyword-only argument is one of values."""

    keyword: str
    values: FrozenSet[str]  # source texts
    default: str  # the argument's value when not given


@dataclass(frozen=True)
class SuggestedUse:
    method: str
    when_used: Tuple[str, ...]
    advice: str


@dataclass(frozen=True)
class AdviceData:
    precision: Dict[str, str]  # API -> advice
    performance: Dict[str, str]
    api_checks: Dict[str, Tuple[ParameterCheck, ...]]  # by full API name
    method_checks: Dict[str, Tuple[ParameterCheck, ...]]  # by method name
    when: Dict[Tuple[str, str], KeywordCondition]  # (section, API) -> the calls the advice is for
    suggested_use: Tuple[SuggestedUse, ...]
    configuration: Tuple[Tuple[str, str], ...]  # (name, advice), in file order

    def conditions(self, section: str) -> Dict[str, KeywordCondition]:
        return {api: condition for (where, api), condition in self.when.items() if where == section}


# -- public API -------------------------------------------------------------------------------


def precision_rows(calls: Iterable[CallSite]) -> List[AdviceRow]:
    """One row per use of an API with a precision risk on NPU."""
    data = load_advice()
    return _sorted(_api_rows(calls, data.precision, data.conditions("precision")))


def performance_rows(calls: Iterable[CallSite]) -> List[AdviceRow]:
    """API advice and failed parameter checks, one row each per call site."""
    data = load_advice()
    calls = list(calls)
    rows = _api_rows(calls, data.performance, data.conditions("performance"))
    for call in calls:
        rows.extend(_parameter_rows(call, data))
    return _sorted(rows)


def project_rows(all_calls: Iterable[CallSite]) -> List[AdviceRow]:
    """Configuration rows (always), then suggested-use rows for the whole project."""
    data = load_advice()
    rows = [_project_row(name, advice) for name, advice in data.configuration]
    calls = list(all_calls)
    used = {call.api for call in calls if call.kind in _USE_KINDS and call.api}
    called_methods = {_method_name(call) for call in calls if call.kind in ("call", "attribute")}
    for suggestion in data.suggested_use:
        if all(api in used for api in suggestion.when_used) and suggestion.method not in called_methods:
            rows.append(_project_row(suggestion.method, suggestion.advice))
    return rows


def suggested_methods() -> FrozenSet[str]:
    """Method names the suggested-use advice looks for (their calls must be kept)."""
    return frozenset(s.method for s in load_advice().suggested_use)


def detail_names() -> FrozenSet[str]:
    """API and method names whose argument texts the parameter checks read: pass them to
    collect_calls(detail_for=...) so those calls keep their arguments."""
    data = load_advice()
    return frozenset(data.api_checks) | frozenset(data.method_checks) | {api for _, api in data.when}


# -- matching ---------------------------------------------------------------------------------


def _api_rows(
    calls: Iterable[CallSite], advice_by_api: Dict[str, str], when: Dict[str, KeywordCondition]
) -> List[AdviceRow]:
    return [
        _row(call, call.api, advice_by_api[call.api])
        for call in calls
        if call.kind in _ADVICE_KINDS and call.api in advice_by_api and _holds(when.get(call.api), call)
    ]


def _holds(condition: Optional[KeywordCondition], call: CallSite) -> bool:
    """A class base or reference always gets the advice; a call whose argument is unknown does not."""
    if condition is None or call.kind != "call":
        return True
    value = argument_text(call, condition.keyword, None, condition.default)
    return value is not None and any(_same_value(value, wanted) for wanted in condition.values)


def _parameter_rows(call: CallSite, data: AdviceData) -> List[AdviceRow]:
    if call.kind != "call":
        return []
    rows = []
    for check in data.api_checks.get(call.api, ()) + data.method_checks.get(_method_name(call), ()):
        if check.only_if and not CONDITIONS[check.only_if](call):
            continue
        value = argument_text(call, check.parameter, check.position, check.default)
        if value is not None and _check_fails(check, value):
            op = (call.api or call.method) if check.by_method else check.target
            rows.append(_row(call, op, check.advice))
    return rows


def _method_name(call: CallSite) -> str:
    """The called method: given when the receiver's type is unknown, else the API's last name."""
    if call.method:
        return call.method
    return call.api.rsplit(".", 1)[-1] if call.api else ""


def argument_text(
    call: CallSite, parameter: str, position: Optional[int], default: Optional[str]
) -> Optional[str]:
    """Source text of one argument: the keyword, else the positional argument (None: keyword
    only), else the default. None when it cannot be known (unpacked *args/**kwargs, or texts the
    collector did not keep), so that no advice is given on a guess."""
    given = call.keyword(parameter)
    if given is not None:
        return _known(given)
    if position is not None and any(arg.lstrip().startswith("*") for arg in call.args[: position + 1]):
        return None  # the positions after an unpacked sequence are unknown
    if position is not None and position < len(call.args):
        return _known(call.args[position])
    if call.keyword("**") is not None:
        return None  # may be inside the **kwargs
    return default.strip() if default is not None else None


def _known(text: str) -> Optional[str]:
    text = text.strip()
    return text or None  # '' is the collector's placeholder for texts it did not keep


def _check_fails(check: ParameterCheck, value: str) -> bool:
    return _same_value(value, check.value) != check.must_equal


def _same_value(text: str, wanted: str) -> bool:
    """Source texts compared as values where both are literals ('cudagraphs' is "cudagraphs")."""
    if text == wanted:
        return True
    try:
        value, wanted_value = ast.literal_eval(text), ast.literal_eval(wanted)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return type(value) is type(wanted_value) and value == wanted_value  # True is not 1


# -- conditions (only_if) ---------------------------------------------------------------------

_DOTTED_NAME = re.compile(r"[A-Za-z_][\w.]*")
# 'cpu', "cpu:0", torch.device('cpu'): a copy to the host, where non_blocking=True is unsafe.
_HOST_DEVICE = re.compile(r"""(?:[\w.]+\(\s*)?(['"])cpu(?::\d+)?\1\s*\)?""")


def _looks_like_dtype(text: str) -> bool:
    """torch.float16, th.half, float, x.dtype, torch.get_default_dtype(): a cast, not a move."""
    if re.sub(r"\(\s*\)$", "", text).endswith("dtype"):
        return True
    return bool(_DOTTED_NAME.fullmatch(text)) and text.rsplit(".", 1)[-1] in DTYPE_NAMES


def copies_to_device(call: CallSite) -> bool:
    """True for .to(device, ...) calls that move data onto a device. Casts (.to(torch.float16))
    have nothing to overlap, and copies to the host must stay blocking for their result to be
    safe to read, so non_blocking advice does not apply to either."""
    device = call.keyword("device")
    if device is None and call.args:
        first = call.args[0].strip()
        if not first or first.startswith("*") or _looks_like_dtype(first):
            return False
        device = first
    if device is None:
        return False  # .to(dtype=...), .to(memory_format=...), .to(**kwargs)
    return not _HOST_DEVICE.fullmatch(device.strip())


CONDITIONS: Dict[str, Callable[[CallSite], bool]] = {"copy_to_device": copies_to_device}


# -- rows -------------------------------------------------------------------------------------


def _row(call: CallSite, op: str, tip: str) -> AdviceRow:
    return AdviceRow(call.file, call.start_line, call.end_line, op, tip)


def _project_row(op: str, tip: str) -> AdviceRow:
    return AdviceRow("", 0, 0, op, tip)


def _sorted(rows: List[AdviceRow]) -> List[AdviceRow]:
    return sorted(rows, key=lambda row: (row.file, row.start_line, row.op, row.tip, row.end_line))


# -- loading advice.yaml --------------------------------------------------------------------------


@lru_cache(maxsize=1)
def load_advice() -> AdviceData:
    """The built-in advice, read and validated once per process."""
    return parse_advice(ADVICE_FILE)


def parse_advice(path: Path) -> AdviceData:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RuleFileError(path, "", f"cannot read the advice file ({exc})") from None
    if not isinstance(data, dict) or set(data) - set(_SECTIONS):
        raise RuleFileError(
            path, "", f"the top level must be a mapping with the sections {', '.join(_SECTIONS)}"
        )
    checks = [_parameter_check(path, where, entry) for where, entry in _entries(path, data, "parameters")]
    return AdviceData(
        precision=_api_advice(path, data, "precision"),
        performance=_api_advice(path, data, "performance"),
        api_checks=_group(check for check in checks if not check.by_method),
        method_checks=_group(check for check in checks if check.by_method),
        when={
            (section, _text(path, where, entry, "api")): _keyword_condition(
                path, f"{where}.when", entry["when"]
            )
            for section in ("precision", "performance")
            for where, entry in _entries(path, data, section)
            if "when" in entry
        },
        suggested_use=tuple(_suggested_use(path, *item) for item in _entries(path, data, "suggested_use")),
        configuration=tuple(_configuration(path, *item) for item in _entries(path, data, "configuration")),
    )


def _entries(path: Path, data: dict, section: str) -> List[Tuple[str, dict]]:
    entries = data.get(section) or []
    if not isinstance(entries, list):
        raise RuleFileError(path, section, "must be a list of entries")
    result = []
    for position, entry in enumerate(entries):
        where = f"{section}[{position}]"
        if not isinstance(entry, dict):
            raise RuleFileError(path, where, "each entry must be a mapping of fields")
        result.append((where, entry))
    return result


def _fields(
    path: Path, where: str, entry: dict, required: Iterable[str], optional: Iterable[str] = ()
) -> None:
    required = tuple(required)
    allowed = set(required) | set(optional) | {"source"}  # source: where the fact comes from
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise RuleFileError(path, where, f"unknown field(s) {unknown}; allowed: {', '.join(sorted(allowed))}")
    for name in required:
        _text(path, where, entry, name)


def _text(path: Path, where: str, entry: dict, name: str) -> str:
    """A non-empty string field. Values are source texts, so YAML must not turn them into
    booleans or numbers: True and 500 have to be quoted."""
    value = entry.get(name)
    if not isinstance(value, str) or not value.strip():
        raise RuleFileError(path, f"{where}.{name}", "must be a non-empty (quoted) string")
    return value.strip()


def _api_advice(path: Path, data: dict, section: str) -> Dict[str, str]:
    advice: Dict[str, str] = {}
    for where, entry in _entries(path, data, section):
        _fields(path, where, entry, ("api", "advice"), ("when",))
        api = _text(path, where, entry, "api")
        if api in advice:
            raise RuleFileError(path, where, f"{api} has advice already; one entry per API")
        advice[api] = _text(path, where, entry, "advice")
    return advice


def _keyword_condition(path: Path, where: str, entry) -> KeywordCondition:
    if not isinstance(entry, dict):
        raise RuleFileError(path, where, "must be a mapping of keyword, is and default")
    _fields(path, where, entry, ("keyword", "default"), ("is",))
    values = entry.get("is")
    if (
        not isinstance(values, list)
        or not values
        or not all(isinstance(v, str) and v.strip() for v in values)
    ):
        raise RuleFileError(path, f"{where}.is", "must be a list of (quoted) source texts")
    return KeywordCondition(
        keyword=_text(path, where, entry, "keyword"),
        values=frozenset(value.strip() for value in values),
        default=_text(path, where, entry, "default"),
    )


def _parameter_check(path: Path, where: str, entry: dict) -> ParameterCheck:
    optional = ("api", "method", "position", "expected", "unexpected", "default", "only_if")
    _fields(path, where, entry, ("parameter", "advice"), optional)
    if ("api" in entry) == ("method" in entry):
        raise RuleFileError(path, where, "give exactly one of 'api' (full name) and 'method' (method name)")
    if ("expected" in entry) == ("unexpected" in entry):
        raise RuleFileError(path, where, "give exactly one of 'expected' and 'unexpected'")
    position = entry.get("position")
    if type(position) is not int or position < 0:
        raise RuleFileError(path, f"{where}.position", "must be a 0-based index (an integer >= 0)")
    only_if = entry.get("only_if", "")
    if only_if and only_if not in CONDITIONS:
        raise RuleFileError(
            path, f"{where}.only_if", f"unknown condition; known: {', '.join(sorted(CONDITIONS))}"
        )
    by_method = "method" in entry
    value_field = "expected" if "expected" in entry else "unexpected"
    return ParameterCheck(
        target=_text(path, where, entry, "method" if by_method else "api"),
        by_method=by_method,
        parameter=_text(path, where, entry, "parameter"),
        position=position,
        value=_text(path, where, entry, value_field),
        must_equal=value_field == "expected",
        default=_text(path, where, entry, "default") if "default" in entry else None,
        only_if=only_if,
        advice=_text(path, where, entry, "advice"),
    )


def _group(checks: Iterable[ParameterCheck]) -> Dict[str, Tuple[ParameterCheck, ...]]:
    grouped: Dict[str, Tuple[ParameterCheck, ...]] = {}
    for check in checks:
        grouped[check.target] = grouped.get(check.target, ()) + (check,)
    return grouped


def _suggested_use(path: Path, where: str, entry: dict) -> SuggestedUse:
    _fields(path, where, entry, ("method", "advice"), ("when_used",))
    when_used = entry.get("when_used")
    if (
        not isinstance(when_used, list)
        or not when_used
        or not all(isinstance(a, str) and a for a in when_used)
    ):
        raise RuleFileError(path, f"{where}.when_used", "must be a non-empty list of API names")
    return SuggestedUse(
        _text(path, where, entry, "method"), tuple(when_used), _text(path, where, entry, "advice")
    )


def _configuration(path: Path, where: str, entry: dict) -> Tuple[str, str]:
    _fields(path, where, entry, ("name", "advice"))
    return _text(path, where, entry, "name"), _text(path, where, entry, "advice")

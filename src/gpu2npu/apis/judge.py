"""unsupported_api.csv, unknown_api.csv, cuda_op_list.csv and the advice reports: what the
project's code will not (or may not) do on NPU for the target version, and what to do instead.

Everything is decided on the original code. Uses that the migration rewrites (``torch.cuda.*``
with a counterpart, the profiler, ...) are converted, so they are not reported; ``torch.cuda``
names without a counterpart for the version are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from gpu2npu.api_support import SUPPORTED, KnowledgeBase, is_torch_name, normalise_api
from gpu2npu.apis import advice
from gpu2npu.apis.callsites import CallSite
from gpu2npu.apis.cuda_ops import CudaOp, Extension, ops_for_call
from gpu2npu.rules.index import RuleIndex

UNSUPPORTED, UNKNOWN, LIMITED = "unsupported", "unknown", "supported_with_limits"
API, CUDA_OP = (
    "api",
    "cuda-op",
)  # what a row is about: an API with a status, a call of the project's CUDA operator
# Torch base classes whose methods subclasses inherit (checked when a subclass's method is not listed).
INHERITED_FROM = (
    ("torch.nn.", "torch.nn.Module"),
    ("torch.optim.lr_scheduler.", "torch.optim.lr_scheduler.LRScheduler"),
    ("torch.optim.", "torch.optim.Optimizer"),
)
OPTIONAL_IMPORT = (
    "optional here: imported in a try whose except ImportError goes on without it (or only where a test "
    "finds it installed), as it will on the NPU; check that the fallback is what you want"
)
CUDA_OP_TIP = (
    "user-defined CUDA operator: port it to the NPU (Ascend C custom operator or torch/torch_npu operators)"
)


@dataclass(frozen=True, order=True)
class ApiRow:
    file: str
    start_line: int
    end_line: int
    op: str
    tip: str
    status: str
    confidence: str
    source: str
    column: int = 1  # not a report column; for `check`'s findings
    category: str = field(default=API, compare=False)  # API or CUDA_OP
    rule: str = field(default="", compare=False)  # the id of the status rule that decided the row, if one did
    kept: bool = field(default=False, compare=False)  # code a rule keeps as it is (manual work)

    def as_tuple(self) -> tuple:
        return (
            self.file,
            self.start_line,
            self.end_line,
            self.op,
            self.tip,
            self.status,
            self.confidence,
            self.source,
        )


@dataclass
class ApiReports:
    unsupported: List[ApiRow]
    unknown: List[ApiRow]
    cuda_ops: List[Tuple[str, str]]
    precision: List[tuple]
    performance: List[tuple]


class ApiJudge:
    """Decides the row (if any) for one use of an API."""

    def __init__(
        self,
        index: RuleIndex,
        kb: KnowledgeBase,
        ops: Sequence[CudaOp],
        extensions: Sequence[Extension],
        own_packages: FrozenSet[str] = frozenset(),
    ):
        """``own_packages``: the top-level packages of the project (gpu2npu.source.modules.
        own_packages): the built-in library rules do not speak of them."""
        self.index = index
        self.own_packages = own_packages
        self.version = index.version
        self.kb = kb
        self.ops = ops
        self.extensions = extensions
        self.any_receiver_methods = index.any_receiver_methods()

    def row(self, site: CallSite) -> Optional[ApiRow]:
        referenced = self._referenced_api(site)
        if referenced:
            return self._reference_row(site, referenced)
        if site.kind == "import":
            return self._removed_import_row(site) or self._module_row(site)
        op = self._cuda_op(site)
        if op is not None:
            source = f"cuda_op_list:{op.file}"
            return self._make(
                site, _call_name(site), CUDA_OP_TIP, UNSUPPORTED, "listed", source, category=CUDA_OP
            )
        if not site.api:
            return None
        if is_torch_name(site.api):
            return self._torch_row(site)
        return self._ruled_row(site)

    def _ruled_row(self, site: CallSite) -> Optional[ApiRow]:
        """A call of a non-torch name a status rule covers (a user's verdict, or a library
        function an earlier third-party analysis found unsupported, fed in with -api)."""
        rules = _not_chosen(self._status_rules(site.api), site)
        if not rules or site.kind == "import" or self._rewritten(site.api) or self._never_runs(rules, site):
            return None
        answer = self.kb.lookup(site.api, self.version, rules)
        if answer is None or not (answer.status in (UNSUPPORTED, UNKNOWN) or _ruled_limit(answer)):
            return None
        return self._answer_row(site, site.api, answer)

    def _rewritten(self, api: str) -> bool:
        """Whether the migration rewrites the name (or reports where it cannot): --optimize's
        apex.optimizers.FusedAdam -> torch_npu.optim.NpuFusedAdamW."""
        decision = self.index.resolve_name(api)
        return (decision is not None and decision.new is not None) or api in self.index.replaced_apis

    def _referenced_api(self, site: CallSite) -> str:
        """A use that is not a call of a known API but is reported by a status rule that counts
        references (float64): a reference to the name, or a call of a tensor method on a
        receiver of unknown type."""
        if site.kind in ("attribute", "imported"):
            return site.api
        if site.kind == "call" and not site.api and site.method in self.any_receiver_methods:
            return f"torch.Tensor.{site.method}"
        return ""

    def _reference_row(self, site: CallSite, api: str) -> Optional[ApiRow]:
        decision = self.index.resolve_name(api)
        if decision is not None and decision.new is not None:
            return None  # the migration renames it (--optimize's HF32 switches)
        overrides = self._overrides(api)
        if site.kind == "imported" and not any(rule.missing for rule in overrides):
            return None  # only a name the torch lacks fails at its import; other uses are rows of their own
        answer = self.kb.lookup(api, self.version, overrides)
        if answer is None or answer.status == SUPPORTED:
            return None
        return self._answer_row(site, api, answer)

    def _torch_row(self, site: CallSite) -> Optional[ApiRow]:
        api = normalise_api(site.api)
        if _python_attribute(api):
            return None
        if self._rewritten(api):
            return self._keyword_row(site, api)
        decision = self.index.resolve_name(api)
        named = decision is not None and decision.old != api and self._overrides(api)
        if named:  # a status rule for this very name says more than the broad keep of its module
            answer = self.kb.lookup(api, self.version, named)
            if answer is not None and answer.status in (UNSUPPORTED, UNKNOWN):
                return self._answer_row(site, api, answer)
            if answer is not None and answer.status == SUPPORTED:
                return None  # it runs on the host as it is (torch.cuda._memory_viz renders a snapshot)
        if decision is not None and (decision.removed_in or decision.old.startswith("torch.cuda")):
            tip = decision.tip or (
                f"no NPU counterpart for torch {self.version}, so it stays on CUDA: "
                "remove it, or run it only when torch.cuda.is_available()"
            )
            rule_id = decision.rule_id
            return self._make(site, api, tip, UNSUPPORTED, "listed", f"rules:{rule_id}", rule=rule_id)
        rules = _not_chosen(self._overrides(api), site)
        if self._never_runs(rules, site):
            return None
        answer = self.kb.lookup(api, self.version, rules)
        if answer is not None and answer.status == UNKNOWN and _is_method(api):
            answer = self._inherited(api)
        if answer is None or not (answer.status in (UNSUPPORTED, UNKNOWN) or _ruled_limit(answer)):
            return None
        return self._answer_row(site, api, answer)

    def _keyword_row(self, site: CallSite, api: str) -> Optional[ApiRow]:
        """A call the migration renames that passes a keyword a status rule names: the rename
        keeps the keyword, which the new callee may refuse (``ProcessGroupNCCL.Options(
        is_high_priority_stream=True)`` becomes torch_npu's ``ProcessGroupHCCL.Options(...)``, which
        takes no argument)."""
        rules = [rule for rule in _not_chosen(self._overrides(api), site) if rule.with_keywords]
        answer = self.kb.lookup(api, self.version, rules) if rules else None
        if answer is None or not (answer.status in (UNSUPPORTED, UNKNOWN) or _ruled_limit(answer)):
            return None
        return self._answer_row(site, api, answer)

    def _never_runs(self, rules, site: CallSite) -> bool:
        """A use behind a hasattr test of a name this torch lacks (``torch.accelerator....
        if hasattr(torch, "accelerator") else "cuda"``): it does not run here, so it has no row."""
        return site.tested and any(rule.missing and self.version in rule.versions for rule in rules)

    def _inherited(self, api: str):
        """A method of a torch class that the lists do not name: the answer of the torch base
        class that defines it (Module.to, Optimizer.step) when that says unsupported; methods
        are otherwise not reported, as the reference tool did not either (their receivers'
        types are guesses)."""
        cls, method = api.rsplit(".", 1)
        for prefix, base in INHERITED_FROM:
            if cls.startswith(prefix) and cls != base:
                answer = self.kb.lookup(f"{base}.{method}", self.version, self._overrides(f"{base}.{method}"))
                if answer is not None and answer.status == UNSUPPORTED:
                    return answer
        return None

    def _removed_import_row(self, site: CallSite) -> Optional[ApiRow]:
        """An import of a torch name the target torch removed and the migration keeps
        (``import torch._six``, ``from torch._six import PY3``): it fails when the file loads."""
        for api in [f"{site.api}.{name}" for name in site.args] or [site.api]:
            decision = self.index.resolve_name(api)
            if decision is not None and decision.new is None and decision.removed_in:
                source = f"rules:{decision.rule_id}"
                return self._make(
                    site, api, decision.tip, UNSUPPORTED, "listed", source, rule=decision.rule_id
                )
        return None

    def _module_row(self, site: CallSite) -> Optional[ApiRow]:
        """An import of a CUDA-only library (a status rule on the module or a parent of it, or
        on a module a from-import names: ``from apex import parallel``, a name in lower case as
        modules are; a class has its rows where it is used), the unsupported first; not a
        from-import whose every name the migration moves elsewhere (FusedLayerNorm to torch.nn)."""
        if site.args and all(self._moved(f"{site.api}.{name}") for name in site.args):
            return None
        modules = [f"{site.api}.{name}" for name in site.args if name[:1].islower()]
        found = [
            (imported, answer)
            for imported in [site.api] + modules
            for answer in [self._library_answer(imported)]
            if answer is not None
        ]
        found.sort(key=lambda pair: pair[1].status != UNSUPPORTED)
        if not found:
            return None
        imported, answer = found[0]
        if site.optional and answer.status == UNSUPPORTED:  # the program goes on without it
            tip = f"{OPTIONAL_IMPORT}; {answer.tip}"
            return self._make(
                site, imported, tip, LIMITED, answer.confidence, answer.source, rule=answer.rule_id
            )
        return self._answer_row(site, imported, answer)

    def _library_answer(self, api: str):
        """The verdict of the nearest status rule on ``api`` or a parent of it (not torch's) that
        says unsupported or supported with limits; None otherwise."""
        parts = api.split(".")
        for end in range(len(parts), 0, -1):
            module = ".".join(parts[:end])
            rules = self._status_rules(module)
            if rules and not is_torch_name(module):
                answer = self.kb.lookup(module, self.version, rules)
                if answer is not None and answer.status in (UNSUPPORTED, LIMITED):
                    return answer
        return None

    def _moved(self, qualified: str) -> bool:
        decision = self.index.resolve_name(qualified)
        return decision is not None and decision.new is not None

    def _overrides(self, api: str):
        """The status rules on ``api``, or on the name the lists give it where torch names it
        otherwise too (G2N171's torch.optim.Adam.step for torch.optim.adam.Adam.step)."""
        return self._status_rules(api) or self.index.overrides_for(self.kb.table_name(api))

    def _status_rules(self, api: str):
        """The status rules on ``api``, less the built-in ones where it is a module of the project
        itself: Composer's own ``from composer.utils import dist`` inside composer is no use of the
        library that G2N069 warns of, and mamba's dataclass modules are no CUDA kernel (the
        project's real CUDA points have rows of their own)."""
        rules = self.index.overrides_for(api)
        if rules and api.split(".", 1)[0] in self.own_packages:
            return [rule for rule in rules if not rule.builtin]
        return rules

    def _cuda_op(self, site: CallSite) -> Optional[CudaOp]:
        if not self.ops or site.kind != "call":
            return None
        name = _call_name(site)
        return ops_for_call(name, len(site.args), site.keywords, self.ops, self.extensions, site.file)

    def _answer_row(self, site: CallSite, op: str, answer) -> ApiRow:
        return self._make(
            site, op, answer.tip, answer.status, answer.confidence, answer.source, rule=answer.rule_id
        )

    @staticmethod
    def _make(
        site: CallSite, op: str, tip: str, status: str, confidence: str, source: str, **extra
    ) -> ApiRow:
        source = "not listed" if source == "-" else source
        return ApiRow(
            site.file,
            site.start_line,
            site.end_line,
            op,
            tip,
            status,
            confidence,
            source,
            site.column,
            **extra,
        )


def _not_chosen(overrides, site: CallSite):
    """The status rules that hold for this call: not one with an ``unless_keywords`` it passes,
    nor one with ``with_keywords`` it passes none of."""
    passed = {keyword for keyword, _ in site.keywords}
    return [
        rule
        for rule in overrides
        if not rule.unless_keywords & passed and (not rule.with_keywords or rule.with_keywords & passed)
    ]


def _ruled_limit(answer) -> bool:
    """A limit a status rule states on purpose (torch.jit.script) is reported; the lists' many
    'supported with limits' (mostly dtype lists) are not."""
    return answer.status == LIMITED and answer.source.startswith(("rules:", "user:"))


def _extension_name(extension: Extension) -> str:
    """What the report calls an extension: its module, the name its load() result is bound to,
    or, where both are computed at run time, where it is built."""
    return extension.module or extension.variable or f"extension built at line {extension.line}"


def _python_attribute(api: str) -> bool:
    """A name that reaches through what Python gives every module or object, not an API of
    torch: ``torch.__version__.startswith``, ``torch.nn.__dict__.items``, ``torch.__file__``
    (dunder methods such as ``torch.Tensor.__setstate__`` are APIs the lists name)."""
    parts = api.split(".")
    return any(_is_dunder(part) for part in parts[1:-1]) or parts[-1] in PYTHON_ATTRIBUTES


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


PYTHON_ATTRIBUTES = frozenset(
    {"__version__", "__file__", "__name__", "__doc__", "__path__", "__dict__", "__all__", "__spec__"}
)


def _is_method(api: str) -> bool:
    """torch.optim.Adam.step: a method (lower case) of a class (capitalised)."""
    parts = api.split(".")
    return len(parts) >= 3 and parts[-2][:1].isupper() and parts[-1][:1].islower()


def _call_name(site: CallSite) -> str:
    return site.api or (f"{site.receiver}.{site.method}" if site.receiver else site.method)


def api_reports(
    calls: Iterable[CallSite],
    index: RuleIndex,
    ops: Sequence[CudaOp],
    extensions: Sequence[Extension],
    kept: Iterable[Tuple[str, object]] = (),
    own_packages: FrozenSet[str] = frozenset(),
) -> ApiReports:
    """``kept``: (file, kept CUDA test) pairs, the tests the migration leaves as they are;
    ``own_packages``: the project's top-level packages (ApiJudge)."""
    calls = sorted(calls)
    judge = ApiJudge(index, KnowledgeBase.load(), ops, extensions, own_packages)
    kept_rows = {_kept_row(file, guard, index) for file, guard in kept}
    covered = {(row.file, row.start_line, row.op) for row in kept_rows}  # a kept row says more of its call
    rows = {row for row in (judge.row(site) for site in calls) if row is not None}
    rows = sorted({row for row in rows if (row.file, row.start_line, row.op) not in covered} | kept_rows)
    unsupported = [row for row in rows if row.status != UNKNOWN]
    unknown = [row for row in rows if row.status == UNKNOWN]
    precision = [_advice_tuple(r) for r in advice.precision_rows(calls)]
    performance = [_advice_tuple(r) for r in advice.project_rows(calls)] + [
        _advice_tuple(r) for r in advice.performance_rows(calls)
    ]
    cuda_ops = sorted(
        {(op.file, op.name) for op in ops}
        | {(e.file, f"{_extension_name(e)} ({e.kind})") for e in extensions}
    )
    return ApiReports(unsupported, unknown, cuda_ops, precision, performance)


def _kept_row(file: str, kept, index: RuleIndex) -> ApiRow:
    """Code a rule keeps as it is (a CUDA test, a call, a compared string): manual work, with the
    rule's tip; unsupported unless the kept code works on the NPU as it is. A call an --optimize
    rule keeps is no manual work: it runs as migrated, only without that optimization."""
    tip = kept.tip or index.rules_by_id[kept.rule_id]["tip"]
    status = LIMITED if kept.works else UNSUPPORTED
    source = f"rules:{kept.rule_id}"
    manual = index.optimization_of(kept.rule_id) is None
    return ApiRow(
        file,
        kept.line,
        kept.end_line,
        kept.name,
        tip,
        status,
        "listed",
        source,
        rule=kept.rule_id,
        kept=manual,
    )


def _advice_tuple(row) -> tuple:
    if not row.file:  # project-level advice, written as the reference tool does
        return ("NA", "NA", "NA", row.op, row.tip)
    return (row.file, row.start_line, row.end_line, row.op, row.tip)


def file_verdicts(results, reports: ApiReports) -> Dict[str, dict]:
    """Per Python file: fully migrated, needs testing (unknown APIs, APIs with limits) or needs
    manual work (unsupported APIs and kept code, with the first blocking one), or not migrated
    (could not be parsed)."""
    blocking: Dict[str, ApiRow] = {}
    for row in reports.unsupported:
        if row.status == UNSUPPORTED or row.kept:
            blocking.setdefault(row.file, row)
    unknown_files = {row.file for row in reports.unknown + reports.unsupported}
    verdicts = {}
    for result in results:
        if result.skipped:
            verdicts[result.rel] = {
                "status": "not migrated",
                "first_blocking_api": "",
                "reason": result.skipped,
            }
        elif result.rel in blocking:
            row = blocking[result.rel]
            verdicts[result.rel] = {
                "status": "needs manual work",
                "first_blocking_api": f"{row.op} (line {row.start_line})",
            }
        elif result.rel in unknown_files:
            verdicts[result.rel] = {"status": "needs testing", "first_blocking_api": ""}
        else:
            verdicts[result.rel] = {"status": "fully migrated", "first_blocking_api": ""}
    return verdicts

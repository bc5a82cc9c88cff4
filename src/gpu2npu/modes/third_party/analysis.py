"""``analyse -m third_party``: which functions of a library (INPUT is its source) use, directly
or through other library functions, torch APIs that are unsupported or unknown on NPU, custom
CUDA operators, or CUDA APIs that need migrating.

1. The uses are found exactly as ``torch_apis`` finds them (one migration-less pass; -api files
   count), and each is given to the function or method whose body holds it.
2. The library's call graph (gpu2npu.modes.third_party.callgraph; jedi for calls the ast cannot place).
3. Every function inherits the uses of everything it calls: a work-list over the callers, so
   recursion and cycles end as soon as nothing new arrives.

Reports (msFmkTransplt's names and columns): full_unsupported_results.csv (the -api input for
analysing code that uses the library), framework_unsupported_op.csv, migration_needed_op.csv,
unknown_op.csv, cuda_op.csv.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

from gpu2npu.apis.api_files import load_api_files
from gpu2npu.apis.judge import CUDA_OP as JUDGED_CUDA_OP
from gpu2npu.modes import AnalyseRequest, ModeResult, not_analysed
from gpu2npu.modes.third_party.callgraph import build_graph, enclosing_function, function_spans
from gpu2npu.modes.third_party.jedi_calls import place_open_calls
from gpu2npu.project.output import AtomicTree
from gpu2npu.project.plan import PYTHON
from gpu2npu.project.service import analyse_project
from gpu2npu.report.csvfile import write_csv
from gpu2npu.rules.kind import kind_named
from gpu2npu.source.modules import import_root_depth, package_prefix
from gpu2npu.source.parse import parse_ast

UNSUPPORTED, CUDA_OP, UNKNOWN, MIGRATION = "unsupported", "cuda_op", "unknown", "migration"
BLOCKING = (UNSUPPORTED, CUDA_OP)
AFFECTED_PER_ROW = 100  # msFmkTransplt's limit; more affected functions continue on another row
REPORTS = {
    "full_unsupported_results.csv": ("File", "3rd-party API", "Message"),
    "framework_unsupported_op.csv": ("Torch API", "Affected 3rd-party API"),
    "migration_needed_op.csv": ("Torch API", "Affected 3rd-party API"),
    "unknown_op.csv": ("Torch API", "Affected 3rd-party API"),
    "cuda_op.csv": ("OP Name", "Affected 3rd-party API"),
}


@dataclass(frozen=True, order=True)
class Use:
    category: str  # UNSUPPORTED, CUDA_OP, UNKNOWN or MIGRATION
    api: str
    file: str
    line: int


def run(request: AnalyseRequest, tree: AtomicTree) -> ModeResult:
    options = request.options
    migration = analyse_project(options, load_api_files(request.api_files))
    root = migration.plan.root
    sources, trees, packages = _read_library(migration.plan)
    prefix = package_prefix(root)  # -i repo/pkg keeps the names pkg.*
    graph = build_graph(trees, packages, _top_level_modules(request.env_paths), prefix)
    jedi = place_open_calls(
        graph, root, sources, _source_roots(root, trees, packages, prefix) + list(request.env_paths)
    )
    direct, outside = _direct_uses(graph, migration)
    uses = propagate(direct, graph.edges)
    rows = _report_rows(uses, graph)
    for name, table in rows.items():
        write_csv(tree.path(name), REPORTS[name], table)
    edges = sum(len(callees) for callees in graph.edges.values())
    log = [
        f"call graph: {len(graph.functions)} function(s) in {len(trees)} file(s), {edges} call edge(s)",
        _jedi_line(jedi, len(graph.open_calls)),
        f"uses outside any function (module-level code, not attributed): {outside}",
    ]
    return ModeResult(
        reports={name: len(table) for name, table in rows.items()},
        log=log,
        skipped=not_analysed(migration.results),
        summary={
            "functions": len(graph.functions),
            "call_edges": edges,
            "jedi": {
                "available": jedi.available,
                "open_calls": len(graph.open_calls),
                "placed": jedi.placed,
                "failed": jedi.failed,
            },
            "affected_functions": sum(
                1 for found in uses.values() if any(u.category in BLOCKING for u in found)
            ),
        },
        hints=[
            "feed full_unsupported_results.csv to the analysis of code that uses this library: "
            "gpu2npu analyse -i PROJECT -o OUTPUT -api " + str(tree.final / "full_unsupported_results.csv")
        ],
    )


def _top_level_modules(paths: Iterable[Path]) -> Set[str]:
    """Modules and packages importable from the -env paths."""
    found = set()
    for path in paths:
        for child in path.iterdir():
            if child.suffix == ".py" or (child / "__init__.py").is_file():
                found.add(child.stem if child.suffix == ".py" else child.name)
    return found


def _read_library(plan):
    """rel -> text and rel -> ast of the parsable Python files, and the package directories."""
    sources, trees = {}, {}
    for entry in plan.of_kind(PYTHON):
        try:
            data = (plan.root / entry.rel).read_bytes()
        except OSError:
            continue
        tree = parse_ast(data)
        if tree is not None:
            trees[entry.rel] = tree
            sources[entry.rel] = data.decode("utf-8", "replace")
    packages = {rel.rsplit("/", 1)[0] if "/" in rel else "" for rel in trees if rel.endswith("__init__.py")}
    return sources, trees, packages


def _source_roots(root: Path, trees, packages: Set[str], prefix: str) -> List[Path]:
    """Directories a top-level package or module of the library is imported from."""
    roots = set()
    for rel in trees:
        depth = import_root_depth(rel, packages)
        if prefix and depth == 0:
            roots.add(root.resolve().parents[prefix.count(".")])  # above the package the input is in
        else:
            roots.add(root.joinpath(*rel.split("/")[:depth]))
    return sorted(roots)


def _direct_uses(graph, migration) -> Tuple[Dict[str, Set[Use]], int]:
    """Each report row and each pending rewrite, given to the function whose body holds it."""
    spans = function_spans(graph)
    direct: Dict[str, Set[Use]] = defaultdict(set)
    outside = 0
    for use in _uses(migration):
        function = enclosing_function(spans.get(use.file, []), use.line)
        if function is None:
            outside += 1
        else:
            direct[function].add(use)
    return direct, outside


def _uses(migration) -> Iterable[Use]:
    for row in migration.apis.unsupported:
        category = CUDA_OP if row.category == JUDGED_CUDA_OP else UNSUPPORTED
        if row.status == "unsupported" or category == CUDA_OP:
            yield Use(category, row.op, row.file, row.start_line)
    for row in migration.apis.unknown:
        if not row.op.startswith(("torch_npu", "torch.npu")):
            yield Use(UNKNOWN, row.op, row.file, row.start_line)
    for result in migration.results:
        for change in result.changes:
            subject = _migrated_subject(migration.index.rules_by_id.get(change.rule))
            if subject is not None:
                yield Use(MIGRATION, subject, result.rel, change.start_line)


def _migrated_subject(rule) -> Optional[str]:
    """What a rewrite converts, as a name (the rule kind says); None: no use of an API (an
    inserted ``import torch_npu``)."""
    if rule is None:
        return "(rule)"
    return kind_named(rule.kind).subject(rule)


def propagate(direct: Dict[str, Set[Use]], edges: Dict[str, Set[str]]) -> Dict[str, Set[Use]]:
    """Every function's own uses plus those of all it calls, directly or not. A caller is
    revisited only when it gained something, so cycles and recursion terminate."""
    callers: Dict[str, Set[str]] = defaultdict(set)
    for caller, callees in edges.items():
        for callee in callees:
            callers[callee].add(caller)
    uses: Dict[str, Set[Use]] = {name: set(found) for name, found in direct.items()}
    pending = sorted(uses)
    while pending:
        callee = pending.pop()
        for caller in callers.get(callee, ()):
            have = uses.setdefault(caller, set())
            new = uses[callee] - have
            if new:
                have |= new
                pending.append(caller)
    return uses


def _report_rows(uses: Dict[str, Set[Use]], graph) -> Dict[str, List[tuple]]:
    aliases = graph.aliases()
    blocked = {name for name, found in uses.items() if any(u.category in BLOCKING for u in found)}
    full = []
    for name in sorted(blocked, key=lambda n: (graph.functions[n].file, n)):
        blocking = sorted(
            {u for u in uses[name] if u.category in BLOCKING}, key=lambda u: (u.file, u.line, u.api)
        )
        names = [shown_name(name)] + [shown_name(alias) for alias in _aliases_of(name, graph, aliases)]
        message = "\n".join(f"file_path:{u.file}, start_line:{u.line}, api_name:{u.api}" for u in blocking)
        full.append((graph.functions[name].file, "\n".join(dict.fromkeys(names)), message))
    unblocked = {name: found for name, found in uses.items() if name not in blocked}
    return {
        "full_unsupported_results.csv": full,
        "framework_unsupported_op.csv": _affected(uses, UNSUPPORTED),
        "migration_needed_op.csv": _affected(uses, MIGRATION),
        "unknown_op.csv": _affected(unblocked, UNKNOWN),
        "cuda_op.csv": _affected(uses, CUDA_OP),
    }


def _aliases_of(name: str, graph, aliases: Dict[str, List[str]]) -> List[str]:
    """Re-exported spellings of a function: its own, or its class's (``pkg.Model.forward``)."""
    found = list(aliases.get(name, ()))
    cls = graph.functions[name].cls
    if cls:
        method = name[len(cls) :]
        found += [alias + method for alias in aliases.get(cls, ())]
    return sorted(found)


def shown_name(name: str) -> str:
    """Callers call a class, not its __init__: ``pkg.Model.__init__`` is shown as ``pkg.Model``."""
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def _affected(uses: Dict[str, Set[Use]], category: str) -> List[tuple]:
    by_api: Dict[str, Set[str]] = defaultdict(set)
    for name, found in uses.items():
        for use in found:
            if use.category == category:
                by_api[use.api].add(shown_name(name))
    rows = []
    for api in sorted(by_api):
        names = sorted(by_api[api])
        for start in range(0, len(names), AFFECTED_PER_ROW):
            rows.append((api, "\n".join(names[start : start + AFFECTED_PER_ROW])))
    return rows


def _jedi_line(jedi, open_calls: int) -> str:
    if not jedi.available:
        return (
            f"jedi is not installed: {open_calls} call(s) on objects of unknown type were not followed, "
            "so some callers may be missing; 'pip install jedi' gives the full call graph"
        )
    return f"jedi: {jedi.placed} of {jedi.asked} call(s) on objects of unknown type placed in the library" + (
        f", {jedi.failed} it could not infer" if jedi.failed else ""
    )

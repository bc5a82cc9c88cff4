"""``gpu2npu migrate``: the whole run, from options to the output tree and its reports."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set

from gpu2npu.analysis import advice
from gpu2npu.analysis.context import ANALYSED_ROOTS, FLOAT64_METHODS, AnalysisContext
from gpu2npu.analysis.cuda_ops import CudaOp, Extension, find_extensions, inline_ops, read_cpp_ops
from gpu2npu.errors import UserError
from gpu2npu.options import MigrateOptions
from gpu2npu.pipeline import worker
from gpu2npu.pipeline.output import AtomicTree, copy_other_entries, make_directories
from gpu2npu.pipeline.plan import COPY, PYTHON, REPORT_DIR, Plan, plan_input
from gpu2npu.pipeline.parallel import run_jobs
from gpu2npu.report.apis import ApiReports, api_reports
from gpu2npu.report.migration import write_reports
from gpu2npu.source.parse import parse_ast
from gpu2npu.rewrite.facts import classes_defining
from gpu2npu.rewrite.transformer import ProjectFacts
from gpu2npu.rules.kind import kind_named
from gpu2npu.rules.index import RuleIndex, compile_index
from gpu2npu.rules.loader import load_builtin_rules, load_rule_files
from gpu2npu.rules.model import RuleSet

OUTPUT_SUFFIX = "_msft"
CPP_SUFFIXES = (".cpp", ".cc", ".cxx", ".cu", ".cuh")


@dataclass
class MigrationRun:
    options: MigrateOptions
    index: RuleIndex
    plan: Plan
    project_name: str
    results: List[worker.FileResult] = field(default_factory=list)
    copied: int = 0
    links: int = 0
    apis: Optional[ApiReports] = None  # the API reports (not made for --diff)

    def describe_rule(self, rule_id: str) -> str:
        rule = self.index.rules_by_id.get(rule_id)
        return kind_named(rule.kind).describe(rule) if rule is not None else ""

    @property
    def had_internal_errors(self) -> bool:
        return any(r.skipped.startswith("internal error") for r in self.results)


def build_index(options: MigrateOptions, extra: Optional[RuleSet] = None) -> RuleIndex:
    rule_set = load_builtin_rules()
    rule_set.extend(load_rule_files(options.rule_files))
    if extra is not None:
        rule_set.extend(extra)
    unknown = set(options.disabled_rules) - rule_set.ids()
    if unknown:
        raise UserError(f"--disable-rule names unknown rule id(s) {', '.join(sorted(unknown))}", "see 'gpu2npu rules list'")
    return compile_index(rule_set, options.version, options.disabled_rules)


def project_name(input_path: Path, suffix: str = OUTPUT_SUFFIX) -> str:
    base = input_path.stem if input_path.is_file() else input_path.resolve().name
    return base + suffix


def check_paths(options: MigrateOptions, suffix: str = OUTPUT_SUFFIX) -> Path:
    """Validate input and output; return the output project directory."""
    source = options.input
    if not source.exists():
        raise UserError(f"input '{source}' does not exist", "pass an existing directory or .py file with -i")
    if source.is_file() and source.suffix != ".py":
        raise UserError(f"input '{source}' is neither a directory nor a .py file", "pass a directory or a .py file")
    if not _readable(source):
        raise UserError(f"input '{source}' cannot be read", "check its permissions")
    if options.output.exists() and not options.output.is_dir():
        raise UserError(f"output '{options.output}' is not a directory", "pass a directory (it is created if missing)")
    root = (source.parent if source.is_file() else source).resolve()
    output = options.output.resolve()
    if source.is_dir() and _inside(output, root):
        raise UserError(f"output '{options.output}' is inside the input '{source}'", "choose an output outside the input")
    destination = output / project_name(source, suffix)
    if _inside(root, destination):
        raise UserError(f"input '{source}' is inside the output '{destination}'", "choose another output directory")
    if (destination.exists() or destination.is_symlink()) and not options.diff and not options.force:
        raise UserError(f"output '{destination}' already exists", "pass --force to replace it")
    return destination


@dataclass
class ProjectScan:
    """What the whole tree says before any file is migrated (one read of each candidate file)."""

    facts: ProjectFacts
    ops: List[CudaOp]
    extensions: List[Extension]


def scan_project(plan: Plan, index: RuleIndex) -> ProjectScan:
    """Classes defining (or inheriting) a method a rule renames -- calls of their own method
    stay -- and the custom CUDA operators the project builds. One read of each Python file;
    only files that define such a method or mention a C++ extension are parsed here."""
    markers = {method: f"def {method}(".encode() for method in index.methods}
    defining: Dict[str, Set[str]] = {method: set() for method in index.methods}
    extensions: List[Extension] = []
    inline: List[CudaOp] = []
    for rel, data in _python_sources(plan):
        for method, marker in markers.items():
            if marker in data and (tree := parse_ast(data)) is not None:
                defining[method] |= classes_defining(tree, method)
        if b"cpp_extension" in data:
            text = data.decode("utf-8", "replace")
            extensions += find_extensions(text, rel)
            inline += inline_ops(text, rel)
    ops, unreadable = read_cpp_ops(plan.root, [e.rel for e in plan.of_kind(COPY) if e.rel.endswith(CPP_SUFFIXES)])
    plan.notes.extend((rel, f"C++ source {reason}; not analysed") for rel, reason in unreadable)
    method_classes = {m: _with_subclasses(plan, m, found) for m, found in defining.items() if found}
    return ProjectScan(ProjectFacts(method_classes), sorted(ops + inline), extensions)


def _python_sources(plan: Plan):
    for entry in plan.of_kind(PYTHON):
        try:
            yield entry.rel, (plan.root / entry.rel).read_bytes()
        except OSError:
            continue


def _with_subclasses(plan: Plan, method: str, found: Set[str]) -> Set[str]:
    """Add the project's subclasses of classes defining ``method``; a subclass may sit in
    another file than its base (only reached when the project defines the method at all)."""
    found = set(found)
    grew = True
    while grew:
        names = [name.encode() for name in found]
        before = len(found)
        for _, data in _python_sources(plan):
            if any(name in data for name in names) and (tree := parse_ast(data)) is not None:
                found |= classes_defining(tree, method, found)
        grew = len(found) > before
    return found


def analysis_context(index: RuleIndex, scan: ProjectScan) -> AnalysisContext:
    """Which uses the workers keep: torch and torch_npu APIs, modules with a status rule
    (CUDA-only libraries), the project's C++ extensions, and the methods the advice reads."""
    roots = set(ANALYSED_ROOTS) | {api.split(".")[0] for api in index.status_overrides}
    for extension in scan.extensions:
        roots |= {name.split(".")[0] for name in (extension.module, extension.variable) if name}
    roots |= {op.cpp_module for op in scan.ops if op.cpp_module}
    details = advice.detail_names()
    methods = set(FLOAT64_METHODS) | {name for name in details if "." not in name} | advice.suggested_methods()
    return AnalysisContext(index.version, frozenset(roots), frozenset(methods), details)


def analyse_only(options: MigrateOptions, extra: Optional[RuleSet] = None, rewrite: bool = True) -> MigrationRun:
    """Everything a migration would find and change, without writing anything (for `check`
    and `analyse`); ``extra``: more rules, such as statuses from -api files; ``rewrite``:
    False when only the API reports are wanted, not the changes."""
    if not options.input.exists():
        raise UserError(f"'{options.input}' does not exist", "pass existing files or directories")
    index = build_index(options, extra)
    plan = plan_input(options.input)
    run = MigrationRun(options, index, plan, project_name(options.input))
    scan = scan_project(plan, index)
    run.results = _process_python(run, scan.facts, None, lambda: None, analysis_context(index, scan), rewrite)
    run.apis = api_reports((c for r in run.results for c in r.calls), index, scan.ops, scan.extensions)
    return run


def run_migration(options: MigrateOptions) -> MigrationRun:
    destination = check_paths(options)
    index = build_index(options)
    plan = plan_input(options.input)
    run = MigrationRun(options, index, plan, destination.name)
    scan = scan_project(plan, index)
    context = None if options.diff else analysis_context(index, scan)
    if options.diff:
        run.results = _process_python(run, scan.facts, None, lambda: None, context)
        return run
    tree = AtomicTree(destination, replace=options.force)
    try:
        make_directories(run.plan, tree)
        run.results = _process_python(run, scan.facts, tree, lambda: _copy_other_entries(run, tree), context)
        run.apis = api_reports((c for r in run.results for c in r.calls), index, scan.ops, scan.extensions)
        write_reports(tree.path(REPORT_DIR), run)
        tree.commit()
    except BaseException:
        tree.discard()
        raise
    return run


def _copy_other_entries(run: MigrationRun, tree: AtomicTree) -> None:
    """Links and non-Python files (while the workers migrate the Python files)."""
    run.copied, run.links = copy_other_entries(run.plan, tree)


def _process_python(run: MigrationRun, facts: ProjectFacts, tree, meanwhile, context, rewrite=True) -> List[worker.FileResult]:
    """Migrate the Python files; ``meanwhile`` runs in this process while workers are busy."""
    jobs = [
        worker.Job(e.rel, str(run.plan.root / e.rel), str(tree.path(e.rel)) if tree is not None else None)
        for e in run.plan.python_largest_first()
    ]
    results = run_jobs(
        worker.process, jobs, run.options.workers, run.options.progress,
        worker.initialise, (run.index, facts, context, rewrite), meanwhile,
    )
    return sorted(results, key=lambda r: r.rel)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def _readable(path: Path) -> bool:
    return os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0))


def print_diffs(run: MigrationRun, stream=sys.stdout) -> None:
    for result in run.results:
        if result.diff:
            stream.write(result.diff)

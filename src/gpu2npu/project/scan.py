"""What the whole tree says before any file is processed: the project's classes that define a
method a rule renames (calls of their own method stay), and the custom CUDA operators it
builds. One read of each Python file; only the files that can tell something are parsed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterator, List, Set, Tuple

from gpu2npu.apis import advice
from gpu2npu.apis.context import ANALYSED_ROOTS, AnalysisContext
from gpu2npu.apis.cuda_ops import CPP_SUFFIXES, CudaOp, Extension, find_extensions, inline_ops, read_cpp_ops
from gpu2npu.filekinds.notebook import Notebook
from gpu2npu.project.cache import CORRUPT
from gpu2npu.project.plan import COPY, PYTHON, Plan
from gpu2npu.rewrite.facts import classes_defining
from gpu2npu.rewrite.transformer import ProjectFacts
from gpu2npu.rules.index import RuleIndex
from gpu2npu.source.modules import MAIN_GUARD, program_start
from gpu2npu.source.parse import parse_ast


@dataclass
class ProjectScan:
    facts: ProjectFacts
    ops: List[CudaOp]
    extensions: List[Extension]
    corrupt: int = 0  # cache entries of the scan that could not be read


@dataclass(frozen=True)
class FileScan:
    """What one Python file tells the scan: a function of its bytes, its path, the methods the
    rules rename and whether entry scripts are looked for (so it is cached by them)."""

    imported: FrozenSet[str]  # the last names of the modules it imports
    imported_files: FrozenSet[str]  # project files its imports may load (when entries are looked for)
    start: str  # how it starts a program (gpu2npu.source.modules.program_start), "" not at all
    defining: Tuple[Tuple[str, FrozenSet[str]], ...]  # (renamed method, classes here defining it)
    extensions: Tuple[Extension, ...]
    inline: Tuple[CudaOp, ...]


def scan_project(
    plan: Plan, index: RuleIndex, chosen_entries: FrozenSet[str] = frozenset(), cache=None
) -> ProjectScan:
    """``chosen_entries``: the entry scripts the user named (--entry); without them, and only
    when the rules insert into entry scripts, they are found here; ``cache``: a ResultCache
    (gpu2npu.project.cache) for the per-file records, or None."""
    methods = tuple(sorted(index.methods))
    defining: Dict[str, Set[str]] = {method: set() for method in methods}
    extensions: List[Extension] = []
    inline: List[CudaOp] = []
    imported: Set[str] = set()
    imported_as_modules: Set[str] = set()
    starting: Dict[str, bool] = {}  # files that start a program when run: guarded by __main__?
    find_entries = index.uses_entry_scripts and not chosen_entries
    outcomes: List[str] = []
    for rel, data in _python_sources(plan):
        found = _file_scan(rel, data, methods, find_entries, cache, outcomes)
        imported |= found.imported
        imported_as_modules |= found.imported_files
        if found.start:
            starting[rel] = found.start == MAIN_GUARD
        for method, classes in found.defining:
            defining[method] |= classes
        extensions += found.extensions
        inline += found.inline
    cpp_files = [e.rel for e in plan.of_kind(COPY) if not e.excluded and e.rel.endswith(tuple(CPP_SUFFIXES))]
    ops, unreadable = read_cpp_ops(plan.root, cpp_files)
    plan.notes.extend((rel, f"C++ source {reason}; not analysed") for rel, reason in unreadable)
    method_classes = {m: _with_subclasses(plan, m, found) for m, found in defining.items() if found}
    ops = sorted(ops + inline)
    facts = ProjectFacts(method_classes, *_cuda_modules(ops, extensions), frozenset(imported))
    facts.entries = chosen_entries or _entry_scripts(starting, facts, imported_as_modules) | (
        _notebooks(plan) if find_entries else frozenset()
    )
    return ProjectScan(facts, ops, extensions, outcomes.count(CORRUPT))


def _file_scan(rel: str, data: bytes, methods, find_entries: bool, cache, outcomes: List[str]) -> FileScan:
    """The file's record, from the cache when it holds one for these bytes."""
    if cache is None:
        return _scanned(rel, data, methods, find_entries)
    key = cache.key(rel, "scan", data, (methods, find_entries))
    outcome, found = cache.load(key)
    outcomes.append(outcome)
    if found is None:
        found = _scanned(rel, data, methods, find_entries)
        cache.store(key, found)
    return found


def _scanned(rel: str, data: bytes, methods, find_entries: bool) -> FileScan:
    """One read of the file's bytes; parsed only when it may define a renamed method or start a
    program."""
    may_start = find_entries and _may_start_a_program(data)
    wanted = [method for method in methods if f"def {method}(".encode() in data]
    tree = parse_ast(data) if wanted or may_start else None  # one parse for both
    start = (program_start(tree) or "") if may_start else ""
    defining = tuple((m, frozenset(classes_defining(tree, m))) for m in wanted) if tree is not None else ()
    extensions, inline = (), ()
    if b"cpp_extension" in data:
        text = data.decode("utf-8", "replace")
        extensions, inline = tuple(find_extensions(text, rel)), tuple(inline_ops(text, rel))
    return FileScan(
        frozenset(_imported_module_names(data)),
        frozenset(_imported_files(rel, data)) if find_entries else frozenset(),
        start,
        defining,
        extensions,
        inline,
    )


def _notebooks(plan: Plan) -> FrozenSet[str]:
    """Notebooks start a program of their own: the modes that insert into entry scripts insert
    into their first code cells too."""
    return frozenset(e.rel for e in plan.entries if e.file_kind == Notebook.name)


def _entry_scripts(starting: Dict[str, bool], facts: ProjectFacts, imported_as_modules: Set[str]):
    """The scripts that start a program and that no file imports. A ``__main__`` guard says so
    itself: only an import of the module (``import train``, ``from train import x``) overrules
    it; a module-level ``main()`` call or top-level script must not even share its name with a
    name another file imports (``from utils import train`` may mean a module)."""
    return frozenset(
        rel
        for rel, guarded in starting.items()
        if not (rel in imported_as_modules if guarded else facts.module_imported(rel))
    )


def _may_start_a_program(data: bytes) -> bool:
    return (
        b"__main__" in data or b"main()" in data or b"parse_args(" in data or _LOOP.search(data) is not None
    )


def _imported_files(rel: str, data: bytes) -> Set[str]:
    """The project files (relative paths) that the imports of the file at ``rel`` may load:
    ``import a.b`` and ``from a.b import c`` from the project root or the file's folder, and
    ``a/b/c.py`` too (c may be a module)."""
    folder = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
    modules = []
    for match in _IMPORTS.finditer(data):
        if match.group(1) is not None:
            module = match.group(1).decode("ascii", "replace").lstrip(".")
            names = [name.decode("ascii", "replace") for name in _from_import_names(data, match.end())]
            modules += [module] + [f"{module}.{name}".lstrip(".") for name in names]
        else:
            parts = [part.split() for part in match.group(2).split(b",")]
            modules += [part[0].decode("ascii", "replace") for part in parts if part]
    paths = {module.replace(".", "/") + ".py" for module in modules if module}
    return paths | {folder + path for path in paths}


_LOOP = re.compile(rb"^(?:for|while|with)\b", re.MULTILINE)  # a statement at the top level that may be a loop
# `import a.b as c`, `import a, b`, `from .a.b import c`: the module names, read off the bytes.
_IMPORTS = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([\w. \t,]+))", re.MULTILINE)


def _imported_module_names(data: bytes) -> Set[str]:
    """The last name of every module a file imports, and of the names it imports from one
    (``from pkg import train`` may import the module train), from a scan of its bytes."""
    names = set()
    for match in _IMPORTS.finditer(data):
        if match.group(1) is not None:
            names.add(match.group(1).rsplit(b".", 1)[-1])
            names.update(_from_import_names(data, match.end()))
        else:
            for part in match.group(2).split(b","):
                names.add(part.split()[0].rsplit(b".", 1)[-1] if part.split() else b"")
    return {name.decode("ascii", "replace") for name in names if name}


def _from_import_names(data: bytes, start: int) -> Set[bytes]:
    """The names after ``from x import`` up to the end of the line (or the closing parenthesis)."""
    end = data.find(b")", start) if data[start:].lstrip()[:1] == b"(" else data.find(b"\n", start)
    text = data[start : end if end != -1 else len(data)].replace(b"(", b" ")
    return {part.split()[0] for part in text.split(b",") if part.split()}


def _cuda_modules(ops: List[CudaOp], extensions: List[Extension]):
    """The modules the project's C++/CUDA extensions build, and by file the names load() results
    are bound to."""
    modules = {e.module for e in extensions if e.module} | {op.cpp_module for op in ops if op.cpp_module}
    variables: Dict[str, Set[str]] = {}
    for extension in extensions:
        if extension.variable:
            variables.setdefault(extension.file, set()).add(extension.variable)
    return frozenset(modules), variables


def analysis_context(index: RuleIndex, scan: ProjectScan) -> AnalysisContext:
    """Which uses the workers keep: torch and torch_npu APIs, modules with a status rule
    (CUDA-only libraries), the project's C++ extensions, and the methods the advice and the
    status rules on tensor methods read."""
    roots = set(ANALYSED_ROOTS) | {api.split(".")[0] for api in index.status_overrides}
    for extension in scan.extensions:
        roots |= {name.split(".")[0] for name in (extension.module, extension.variable) if name}
    roots |= {op.cpp_module for op in scan.ops if op.cpp_module}
    details = advice.detail_names()
    methods = {name for name in details if "." not in name} | advice.suggested_methods()
    return AnalysisContext(
        index.version,
        frozenset(roots),
        frozenset(methods | index.any_receiver_methods()),
        details,
        frozenset(index.reference_apis()),
    )


def _python_sources(plan: Plan) -> Iterator[Tuple[str, bytes]]:
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

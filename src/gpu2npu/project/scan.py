"""What the whole tree says before any file is processed: the project's classes that define a
method a rule renames (calls of their own method stay), and the custom CUDA operators it
builds. One read of each Python file; only the files that can tell something are parsed."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Set, Tuple

from gpu2npu.apis import advice
from gpu2npu.apis.context import ANALYSED_ROOTS, AnalysisContext
from gpu2npu.apis.cuda_ops import CPP_SUFFIXES, CudaOp, Extension, find_extensions, inline_ops, read_cpp_ops
from gpu2npu.filekinds.notebook import Notebook
from gpu2npu.project.cache import CORRUPT
from gpu2npu.project.plan import COPY, PYTHON, Plan
from gpu2npu.project.star_imports import star_bindings, star_imports
from gpu2npu.rewrite.device_selection import MODULE_LEVEL, device_selections, narrows_visible_devices
from gpu2npu.rewrite.facts import classes_defining, constructor_subclasses
from gpu2npu.rewrite.kept_strings import may_name_a_peer, npu_getters
from gpu2npu.rewrite.transformer import ProjectFacts
from gpu2npu.rules.index import ANY_RECEIVER, REFUSED_ASSIGNMENT, REFUSED_IMPORT, REFUSED_MODULE, RuleIndex
from gpu2npu.source.modules import (
    MAIN_GUARD,
    PROGRAM_CALLS,
    builds_a_package,
    initialises_a_package,
    own_packages,
    package_prefix,
    program_start,
    requires_a_library,
)
from gpu2npu.source.parse import parse_ast
from gpu2npu.source.stdlib import STDLIB, TORCHLESS


@dataclass
class ProjectScan:
    facts: ProjectFacts
    ops: List[CudaOp]
    extensions: List[Extension]
    corrupt: int = 0  # cache entries of the scan that could not be read
    own_packages: FrozenSet[str] = frozenset()  # top-level packages of the input (modules.own_packages)


@dataclass(frozen=True)
class FileScan:
    """What one Python file tells the scan: a function of its bytes, its path, the methods the
    rules rename and whether entry scripts are looked for (so it is cached by them)."""

    imported: FrozenSet[str]  # the last names of the modules it imports
    imports: Tuple[Tuple[str, ...], ...]  # project paths its imports may load (when entries are looked for)
    start: str  # how it starts a program (gpu2npu.source.modules.program_start), "" not at all
    defining: Tuple[Tuple[str, FrozenSet[str]], ...]  # (renamed method, classes here defining it)
    extensions: Tuple[Extension, ...]
    inline: Tuple[CudaOp, ...]
    refusing: FrozenSet[str]  # the index's refused calls it makes ("zero_grad(set_to_none)")
    cuda_only: bool = False  # it cannot be imported without a CUDA-only library (whisper's triton_ops)
    # -s: where it selects its device itself, by function ("" on import): (function, line)
    selections: Tuple[Tuple[str, int], ...] = ()
    # library helpers it imports at module level, which other files may import from it: (name, helper)
    reexports: Tuple[Tuple[str, str], ...] = ()
    imports_torch: bool = False  # a line of it imports torch (or a module of it)
    loads_state: bool = False  # it calls .load_state_dict( (a checkpoint a removed wrapper saved?)
    # functions whose result it reads a removed wrapper's attribute of (model = create_model(); model.module)
    reads_wrapper_of: FrozenSet[str] = frozenset()
    # its functions that name the NPU themselves (gpu2npu.rewrite.kept_strings.npu_getters)
    npu_getters: Tuple[str, ...] = ()


def scan_project(
    plan: Plan, index: RuleIndex, chosen_entries: FrozenSet[str] = frozenset(), cache=None
) -> ProjectScan:
    """``chosen_entries``: the entry scripts the user named (--entry); without them, and only
    when the rules insert into entry scripts, they are found here; ``cache``: a ResultCache
    (gpu2npu.project.cache) for the per-file records, or None."""
    methods = tuple(sorted(index.methods))
    refused = tuple(sorted(index.refused_calls))
    cuda_only = tuple(sorted(index.cuda_only_modules()))
    block = index.device_block
    device_name = block.name if block is not None and block.select_statements else None
    frameworks = tuple(sorted(block.selected_by)) if device_name is not None else ()
    helpers = tuple(sorted(index.followed_reexports()))
    attributes = tuple(sorted({wrapper.attribute for wrapper in index.kept_wrappers.values()}))
    peers = index.peer_strings.pairs if index.peer_strings is not None else ()
    reexports: Dict[str, str] = {}
    defining: Dict[str, Set[str]] = {method: set() for method in methods}
    extensions: List[Extension] = []
    inline: List[CudaOp] = []
    imported: Set[str] = set()
    starting: Dict[str, bool] = {}  # files that start a program when run: guarded by __main__?
    imports: Dict[str, FileScan] = {}  # by file, what its imports may load (when entries are looked for)
    find_entries = index.uses_entry_scripts and not chosen_entries
    read_imports = find_entries or device_name is not None
    outcomes: List[str] = []
    refusing: Set[str] = set()
    loads_state = False
    wrapper_read_from: Set[str] = set()
    cuda_only_files: Set[str] = set()
    stars: Dict[str, Tuple[str, ...]] = {}  # by file, the modules it star-imports
    python_files: Set[str] = set()
    getters: Dict[str, Tuple[str, ...]] = {}
    for rel, data in _python_sources(plan):
        python_files.add(rel)
        starred = star_imports(data)
        if starred:
            stars[rel] = starred
        wanted = (methods, refused, cuda_only, device_name, frameworks, helpers, attributes, peers)
        found = _file_scan(rel, data, wanted, (find_entries, read_imports), cache, outcomes)
        imported |= found.imported
        refusing |= found.refusing
        loads_state = loads_state or found.loads_state
        wrapper_read_from |= found.reads_wrapper_of
        if found.npu_getters:
            getters[rel] = found.npu_getters
        if found.cuda_only:
            cuda_only_files.add(rel)
        if read_imports:
            imports[rel] = found
        if found.start:
            starting[rel] = found.start == MAIN_GUARD
        for method, classes in found.defining:
            defining[method] |= classes
        for name, helper in found.reexports:
            reexports.update((f"{module}.{name}", helper) for module in _module_spellings(rel))
        extensions += found.extensions
        inline += found.inline
    cpp_files = [e.rel for e in plan.of_kind(COPY) if not e.excluded and e.rel.endswith(tuple(CPP_SUFFIXES))]
    ops, unreadable = read_cpp_ops(plan.root, cpp_files)
    plan.notes.extend((rel, f"C++ source {reason}; not analysed") for rel, reason in unreadable)
    method_classes = {m: _with_subclasses(plan, m, found) for m, found in defining.items() if found}
    ops = sorted(ops + inline)
    if read_imports:  # imports resolved: a module is imported where an import names its path
        imported = _imported_by_path(imports, python_files)
    facts = ProjectFacts(method_classes, *_cuda_modules(ops, extensions), frozenset(imported))
    facts.refused_calls = frozenset(refusing)
    facts.loads_state_dicts = loads_state
    facts.wrapper_read_from = frozenset(wrapper_read_from)
    facts.cuda_only_files = frozenset(cuda_only_files)
    facts.npu_getters = getters
    facts.reexports = reexports
    facts.star_bindings = star_bindings(plan.root, stars, frozenset(python_files)) if stars else {}
    facts.entries = chosen_entries or _entry_scripts(starting, facts, imports) | (
        _notebooks(plan, imports) if find_entries else frozenset()
    )
    if device_name is not None:
        facts.package_modules = _package_modules(plan)
        facts.selected_elsewhere = _selected_elsewhere(plan, facts.entries, imports)
        facts.torch_through_imports = _torch_through_imports(facts.entries, imports)
    own = own_packages(python_files, package_prefix(plan.root))
    return ProjectScan(facts, ops, extensions, outcomes.count(CORRUPT), own)


def _reads_wrapper_of(data: bytes, attributes) -> FrozenSet[str]:
    """The functions whose result the file reads a wrapper's attribute of, outside a test for it:
    ``create_model`` of ``model = create_model(opt)`` and ``model.module.save()``; and, with a
    leading dot, the object attributes it reads it through: ``.model`` of
    ``self.trainer.model.module``, or of ``model = self.trainer.model`` and ``model.module``."""
    found: Set[str] = set()
    for attribute in attributes:
        if b"." + attribute.encode() not in data:
            continue
        # a name (model.module) or, with its dot, an object's attribute (.model of x.model.module)
        reads = re.compile(rb"((?<![\w.])|\.)([A-Za-z_]\w*)\." + attribute.encode() + rb"\b")
        read = {
            match.group(1) + match.group(2)
            for line in data.splitlines()
            if not _TESTS_FOR_A_WRAPPER.search(line)
            for match in reads.finditer(line)
        }
        found.update(
            function.decode() for name, function in _ASSIGNED_FROM_A_CALL.findall(data) if name in read
        )
        found.update(name.decode() for name in read if name.startswith(b"."))
        found.update(
            "." + held.decode()
            for name, held in _ASSIGNED_FROM_AN_ATTRIBUTE.findall(data)
            if name in read and held != attribute.encode()
        )
    return frozenset(found)


def _file_scan(rel: str, data: bytes, wanted, looking, cache, outcomes: List[str]) -> FileScan:
    """The file's record, from the cache when it holds one for these bytes; ``wanted``: the
    renamed methods, the refused calls, the CUDA-only modules of the index, the name -s binds
    (None: other modes), the library helpers followed through re-exports, the attributes of
    kept wrappers and the NPU's peer words; ``looking``: whether entry scripts are looked for and
    imports read."""
    if cache is None:
        return _scanned(rel, data, *wanted, *looking)
    key = cache.key(rel, "scan", data, (wanted, looking))
    outcome, found = cache.load(key)
    outcomes.append(outcome)
    if found is None:
        found = _scanned(rel, data, *wanted, *looking)
        cache.store(key, found)
    return found


def _scanned(
    rel: str,
    data: bytes,
    methods,
    refused,
    cuda_only,
    device_name,
    frameworks,
    helpers,
    attributes,
    peers,
    find_entries: bool,
    read_imports: bool,
) -> FileScan:
    """One read of the file's bytes; parsed only when it may define a renamed method, start a
    program, import a CUDA-only library or a library helper, or (-s) select its device."""
    package_main = rel.rsplit("/", 1)[-1] == "__main__.py"  # what python -m package runs
    may_start = (
        find_entries
        and not initialises_a_package(rel)
        and (package_main or _may_start_a_program(data))
        and not builds_a_package(rel, data)
    )
    wanted = [method for method in methods if f"def {method}(".encode() in data]
    libraries = [module for module in cuda_only if _may_import(data, module)]
    may_select = device_name is not None and (
        _SELECTION.search(data) is not None
        or any(call.rsplit(".", 1)[-1].encode() in data for call in frameworks)
    )
    imported_helpers = [
        helper
        for helper in helpers
        if helper.rsplit(".", 1)[-1].encode() in data and _may_import(data, helper)
    ]
    may_name_the_npu = bool(peers) and b"def " in data and may_name_a_peer(data, peers)
    tree = (
        parse_ast(data)
        if wanted or may_start or libraries or may_select or imported_helpers or may_name_the_npu
        else None
    )  # one parse for all
    start = (program_start(tree, package_main) or "") if may_start else ""
    defining = tuple((m, frozenset(classes_defining(tree, m))) for m in wanted) if tree is not None else ()
    extensions, inline = (), ()
    if b"cpp_extension" in data:
        text = data.decode("utf-8", "replace")
        extensions, inline = tuple(find_extensions(text, rel)), tuple(inline_ops(text, rel))
    return FileScan(
        frozenset(_imported_module_names(data)),
        project_imports(rel, data) if read_imports else (),
        start,
        defining,
        extensions,
        inline,
        frozenset(call for call in refused if _makes_refused_call(data, call)),
        tree is not None and bool(libraries) and requires_a_library(tree, libraries),
        tuple(device_selections(tree, device_name, frozenset(frameworks)).items())
        if may_select and tree is not None
        else (),
        _imported_helpers(tree, imported_helpers) if tree is not None else (),
        _TORCH_IMPORT.search(data) is not None,
        _LOADS_STATE.search(data) is not None,
        _reads_wrapper_of(data, attributes),
        npu_getters(tree, peers) if may_name_the_npu and tree is not None else (),
    )


def _imported_helpers(tree: ast.Module, helpers: List[str]) -> Tuple[Tuple[str, str], ...]:
    """The names ``from library import helper [as name]`` binds at module level (at the top or
    in a top-level ``try``/``if``), with the helper each is; not a name the module binds to
    something else too (``class DataLoader(DataLoader)``; ``X = X`` re-exports it). A subclass
    that keeps its helper's constructor is the helper too (constructor_subclasses)."""
    subclasses = constructor_subclasses(tree, {helper: helper for helper in helpers})
    return _imported_helper_names(tree, helpers) + tuple(subclasses.items())


def _imported_helper_names(tree: ast.Module, helpers: List[str]) -> Tuple[Tuple[str, str], ...]:
    rebound = _rebound_at_module_level(tree)
    statements, found = list(tree.body), []
    for statement in statements:
        if isinstance(statement, (ast.Try, ast.If)):
            statements += [*statement.body, *statement.orelse, *getattr(statement, "finalbody", [])]
            statements += [s for handler in getattr(statement, "handlers", []) for s in handler.body]
        elif isinstance(statement, ast.ImportFrom) and not statement.level and statement.module:
            found += [
                (alias.asname or alias.name, f"{statement.module}.{alias.name}")
                for alias in statement.names
                if f"{statement.module}.{alias.name}" in helpers
                and (alias.asname or alias.name) not in rebound
            ]
    return tuple(found)


def _rebound_at_module_level(tree: ast.Module) -> Set[str]:
    """Names the module's own statements define or assign, other than to themselves."""
    names: Set[str] = set()
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            value = statement.value
            names.update(
                t.id
                for t in targets
                if isinstance(t, ast.Name) and not (isinstance(value, ast.Name) and value.id == t.id)
            )
    return names


def _module_spellings(rel: str) -> List[str]:
    """The dotted names an absolute import may give the module at ``rel``: from the project root
    and from each folder below it (``src/pkg/utils.py``: ``src.pkg.utils``, ``pkg.utils``,
    ``utils``; a package is its folder)."""
    parts = rel[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return [".".join(parts[start:]) for start in range(len(parts))]


def _selected_elsewhere(plan: Plan, entries, imports: Dict[str, FileScan]) -> Dict[str, tuple]:
    """By entry script, (module, line, function, narrows) where a module it imports (directly)
    selects the device on import, or in a function the script calls (BLIP's
    ``utils.init_distributed_mode``, consistency_models' ``dist_util.setup_dist``); ``narrows``:
    the module sets the visible devices. Entries with none are left out."""
    found = {}
    for entry in sorted(entries):
        if entry not in imports:
            continue
        calls = None  # the entry's text, read once where a module it imports selects
        for group in imports[entry].imports:
            for path in group:
                selections = imports[path].selections if path in imports and path != entry else ()
                for function, line in selections:
                    if calls is None:
                        calls = _read_or_empty(plan.root / entry)
                    if function == MODULE_LEVEL or re.search(rb"\b%s\s*\(" % function.encode(), calls):
                        if entry not in found:
                            found[entry] = (path, line, function, _narrows(plan.root / path))
    return found


def _narrows(path: Path) -> bool:
    """Whether the module at ``path`` sets the visible devices (not only when an option asks)."""
    data = _read_or_empty(path)
    tree = parse_ast(data) if b"VISIBLE_DEVICES" in data else None
    return tree is not None and narrows_visible_devices(tree)


def _torch_through_imports(entries, imports: Dict[str, FileScan]) -> FrozenSet[str]:
    """The entry scripts that import no torch themselves but a project module that does, directly
    or through other project modules (llm-foundry's train.py: ``llmfoundry.command_utils``)."""
    reaching = _TorchReach(imports)
    return frozenset(
        entry for entry in entries if entry in imports and reaching.imports_torch_through_the_project(entry)
    )


def _read_or_empty(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # gone since it was scanned: the per-file pass reports it
        return b""


def _may_import(data: bytes, module: str) -> bool:
    """Whether an import line of ``data`` may name ``module`` (a byte scan before the parse)."""
    root = re.escape(module.split(".")[0].encode())
    return re.search(rb"\b(?:import|from)[ \t]+%s\b" % root, data) is not None


def _makes_refused_call(data: bytes, call: str) -> bool:
    """Whether ``data`` calls ``.method(`` passing ``keyword=`` other than a literal False (a byte
    scan: ``opt.zero_grad(set_to_none=True)``, ``zero_grad(set_to_none=not args.keep)``), or, for
    ``import module``, may import a library that makes such calls itself (accelerate), or, for
    ``.attribute = None`` (or False, or ``*``: anything), assigns that to such an attribute
    (``p.grad = None``, ``master.grad = flat``, ``p.requires_grad = False``), or, for
    ``method(False)``, calls it with that value (``m.requires_grad_(False)``)."""
    if call.startswith(REFUSED_IMPORT):
        return _may_import(data, call[len(REFUSED_IMPORT) :])
    assignment = REFUSED_ASSIGNMENT.match(call)
    if assignment:  # .grad = *, .requires_grad = False
        attribute, value = (re.escape(part.encode()) for part in assignment.groups())
        if value == rb"\*":  # any value, also through .data (p.grad.data = new swaps its storage)
            return re.search(rb"\.%s(?:\.data)?\s*=(?!=)" % attribute, data) is not None
        return re.search(rb"\.%s\s*=\s*%s\b" % (attribute, value), data) is not None
    if call.startswith(REFUSED_MODULE):  # model.zero_grad()
        return _calls_on_a_module(data, call[len(REFUSED_MODULE) : -2])
    method, keyword = call[:-1].split("(")
    if keyword in ("False", "None"):  # a call given that value: requires_grad_(False)
        pattern = rb"\.%s\s*\(\s*(?:\w+\s*=\s*)?%s\s*\)" % (re.escape(method.encode()), keyword.encode())
        return re.search(pattern, data) is not None
    pattern = rb"\b%s\s*\([^()]*(?:\([^()]*\)[^()]*)*\b%s\s*=\s*(?!False\b)" % (
        method.encode(),
        keyword.encode(),
    )
    return re.search(pattern, data) is not None


def _calls_on_a_module(data: bytes, method: str) -> bool:
    """Whether ``data`` calls ``.method(`` on a receiver whose last name names no optimizer
    (``model.zero_grad()``, ``netD.zero_grad()``; not ``optimizer_g.zero_grad()``) without
    ``set_to_none=False``: a module's ``zero_grad()`` sets the gradients to None from torch 2.0."""
    pattern = rb"(\w+)\s*\.\s*%s\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)" % re.escape(method.encode())
    return any(
        b"opt" not in found.group(1).lower()
        and not re.search(rb"\bset_to_none\s*=\s*False\b", found.group(2))
        for found in re.finditer(pattern, data)
    )


def _notebooks(plan: Plan, imports: Dict[str, FileScan]) -> FrozenSet[str]:
    """Notebooks start a program of their own: the modes that insert into entry scripts insert
    into their first code cells too, unless the cells import only the standard library, themselves
    and through the project's modules (nanoGPT's transformer_sizing.ipynb: arithmetic)."""
    reaching = _TorchReach(imports)
    return frozenset(
        e.rel
        for e in plan.entries
        if e.file_kind == Notebook.name
        and reaching.groups_may_use_torch(project_imports(e.rel, _notebook_code(plan.root / e.rel)))
    )


def _notebook_code(path: Path) -> bytes:
    """The code cells of a notebook, one after the other; ``import torch`` where it cannot be read
    (the answer errs towards an entry)."""
    try:
        cells = json.loads(path.read_bytes())["cells"]
        code = ["".join(cell["source"]) for cell in cells if cell.get("cell_type") == "code"]
    except (OSError, ValueError, KeyError, TypeError):
        return b"import torch\n"
    return "\n".join(code).encode("utf-8", "replace")


def _package_modules(plan: Plan) -> FrozenSet[str]:
    """The Python files of a folder below the root that holds ``__init__.py``."""
    rels = [entry.rel for entry in plan.of_kind(PYTHON)]
    packages = {rel[: -len("__init__.py")] for rel in rels if rel.endswith("/__init__.py")}
    return frozenset(rel for rel in rels if rel[: rel.rfind("/") + 1] in packages)


def _imported_by_path(imports: Dict[str, FileScan], python_files: Set[str]) -> Set[str]:
    """What ``ProjectFacts.imported_modules`` holds where the files' imports are resolved: the
    paths of the project modules an import of another file names (``from .train import f`` in
    ``pkg/sub/__init__.py`` is ``pkg/sub/train.py``, not a root ``train.py``), and the last names
    of the imports no project path answers (a longer package path: SlowFast's
    ``vision.fair.slowfast.tools.train_net``)."""
    found: Set[str] = set()
    for rel, scanned in imports.items():
        for group in scanned.imports:
            paths = [path for path in group if path in python_files and path != rel]
            if paths:
                found.update(paths)
            elif group:
                found.add(_stem(max(group, key=len)))
    return found


def _stem(path: str) -> str:
    """``a/b.py``, ``a/b/__init__.py``, ``a/b/`` -> ``b``."""
    for suffix in ("/__init__.py", ".py", "/"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    return path.rsplit("/", 1)[-1]


def _entry_scripts(
    starting: Dict[str, bool],
    facts: ProjectFacts,
    imports: Dict[str, FileScan],
):
    """The scripts that start a program which may use torch. A ``__main__`` guard says so
    itself, even in a module other files import (yolov5's ``train.py`` is run and imported; the
    entry imports are harmless on import, while a script run without them never reaches the
    NPU); a module-level ``main()`` call or top-level script must not share its name with a name
    another file imports (``from utils import train`` may mean a module: a weaker sign). A
    script that imports only the standard library, itself and through the project's modules,
    cannot use torch: it is left alone (a download script needs no torch_npu)."""
    reaching = _TorchReach(imports)
    return frozenset(
        rel
        for rel, guarded in starting.items()
        if (guarded or not facts.module_imported(rel)) and reaching.may_use_torch(rel)
    )


class _TorchReach:
    """Which files may import torch, themselves or through the project files they import. An
    import that no project path answers may (it may be torch, or a library that imports it):
    the answer errs towards yes."""

    def __init__(self, imports: Dict[str, FileScan]):
        self.imports = imports
        self.folders = {rel[: end + 1] for rel in imports for end in range(len(rel)) if rel[end] == "/"}

    def may_use_torch(self, rel: str) -> bool:
        return any(not found for found in self._walk(rel))

    def groups_may_use_torch(self, groups: Tuple[Tuple[str, ...], ...]) -> bool:
        """As may_use_torch, for the import groups of code that is no project file (a notebook)."""
        for group in groups:
            found = [path for path in group if path in self.imports or path in self.folders]
            if not found or any(path in self.imports and self.may_use_torch(path) for path in found):
                return True
        return False

    def imports_torch_through_the_project(self, rel: str) -> bool:
        """Whether a project module that ``rel`` reaches (not ``rel`` itself) imports torch."""
        return not self.imports[rel].imports_torch and any(
            self.imports[path].imports_torch
            for found in self._walk(rel)
            for path in found
            if path in self.imports
        )

    def _walk(self, rel: str) -> Iterator[List[str]]:
        """For each import of ``rel`` and of the project files it reaches, the project paths that
        answer it (an empty list: none does)."""
        seen, todo = set(), [rel]
        while todo:
            file = todo.pop()
            if file in seen:
                continue
            seen.add(file)
            for group in self.imports[file].imports:
                found = [path for path in group if path in self.imports or path in self.folders]
                yield found
                todo += [path for path in found if path in self.imports]


def _may_start_a_program(data: bytes) -> bool:
    return (
        b"__main__" in data
        or b"main()" in data
        or b"parse_args(" in data
        or _LOOP.search(data) is not None
        or any(_INNER_LOOP.search(block) for block in _TOP_LEVEL_IF.findall(data))
        or _PROGRAM_CALL.search(data) is not None
    )


_NO_TORCH = STDLIB | TORCHLESS  # imports that load no project path and no torch


def project_imports(rel: str, data: bytes) -> Tuple[Tuple[str, ...], ...]:
    """For each import of the file at ``rel`` that is not of the standard library (or of a
    library that never uses torch: gpu2npu.source.stdlib.TORCHLESS), the project
    paths it may load: modules (``a/b.py``), packages (``a/b/__init__.py``) and folders
    (``a/b/``, a namespace package), from the project root, the file's folder or a folder between
    for an absolute import, from the folder its dots name for a relative one (``from ..a import
    c``: c may be a module). An empty group: code the file may run that no import names
    (``import_module``, ``exec``), or a relative import above the root."""
    return tuple(group for _, group in located_imports(rel, data))


def located_imports(rel: str, data: bytes) -> Iterator[Tuple[int, Tuple[str, ...]]]:
    """(line, group) for each group of project_imports, with the line of the import."""
    folder = rel.split("/")[:-1]
    dynamic = _DYNAMIC.search(data)
    if dynamic:
        yield data.count(b"\n", 0, dynamic.start()) + 1, ()
    line, counted = 1, 0  # the lines counted up to offset `counted`: one pass over the file
    for match in _IMPORTS.finditer(data):
        if match.group(1) is not None:
            written = match.group(1).decode("ascii", "replace")
            module = written.lstrip(".")
            names = [name.decode("ascii", "replace") for name in _from_import_names(data, match.end())]
            modules = [module] * bool(module) + [f"{module}.{name}".lstrip(".") for name in names]
            level = len(written) - len(module)
        else:
            parts = [part.split() for part in match.group(2).split(b",")]
            modules, level = [part[0].decode("ascii", "replace") for part in parts if part], 0
        line += data.count(b"\n", counted, match.start())
        counted = match.start()
        for dotted in modules:
            if not level and dotted.split(".")[0] in _NO_TORCH:
                continue
            if level - 1 > len(folder):
                yield line, ()
                continue
            bases = [folder[: len(folder) - level + 1]] if level else _absolute_bases(folder)
            yield line, tuple(_module_paths(bases, dotted.split("."), relative=bool(level)))


def _absolute_bases(folder: List[str]) -> List[List[str]]:
    """Where an absolute import of a file in ``folder`` may start: the project root, the file's
    folder (run as a script), and the folders between, one of which may be its import root (a
    src layout: open_clip's src/open_clip_train/main.py imports open_clip_train.distributed)."""
    return [[], folder] + [folder[:depth] for depth in range(1, len(folder))]


def _module_paths(bases: List[List[str]], parts: List[str], relative: bool) -> Iterator[str]:
    """The paths the module ``parts`` (and the packages above it) may be, under each base folder;
    a relative import loads the package it starts from too (``from . import f``: its
    ``__init__.py``)."""
    for base in bases:
        for end in range(0 if relative and base else 1, len(parts) + 1):
            path = "/".join(base + parts[:end])
            yield from (f"{path}.py", f"{path}/__init__.py", f"{path}/")


_PROGRAM_CALL = re.compile(rb"\.(?:%s)\(" % "|".join(sorted(PROGRAM_CALLS)).encode())
_LOOP = re.compile(rb"^(?:for|while|with)\b", re.MULTILINE)  # a statement at the top level that may be a loop
# the indented lines (blank and comment lines among them) of a top-level if/elif/else, and a loop in them
_TOP_LEVEL_IF = re.compile(
    rb"^(?:if|elif|else)\b[^\n]*\n((?:[ \t][^\n]*\n|[ \t]*\n|#[^\n]*\n)*)", re.MULTILINE
)
_INNER_LOOP = re.compile(rb"^[ \t]+(?:for|while)\b", re.MULTILINE)
# `import a.b as c`, `import a, b`, `from .a.b import c`: the module names, read off the bytes.
_IMPORTS = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([\w. \t,]+))", re.MULTILINE)
_SELECTION = re.compile(rb"set_device|VISIBLE_DEVICES")
_LOADS_STATE = re.compile(rb"\.load_state_dict\s*\(")
# name = f(...) or name = module.f(...): the function whose result the name holds
_ASSIGNED_FROM_A_CALL = re.compile(
    rb"(?m)^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)\("
)
# name = a.b.c: the attribute (c) whose object the name holds
_ASSIGNED_FROM_AN_ATTRIBUTE = re.compile(
    rb"(?m)^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*[A-Za-z_][\w.]*\.([A-Za-z_]\w*)[ \t]*(?:#[^\n]*)?$"
)
# a line that asks whether an object is wrapped before reading its attribute
_TESTS_FOR_A_WRAPPER = re.compile(rb"\b(?:hasattr|getattr|isinstance)\(")
_TORCH_IMPORT = re.compile(rb"^[ \t]*(?:import|from)[ \t]+torch\b(?!_)", re.MULTILINE)
_DYNAMIC = re.compile(rb"\b(?:import_module|__import__|exec|run_path|run_module)\(")


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
        frozenset(index.reference_apis() | {ANY_RECEIVER + method for method in advice.suggested_methods()}),
        scan.facts.reexports,
        scan.facts.star_bindings,
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

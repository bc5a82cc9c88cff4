"""One run over a project, as every command needs it: compile the rules, plan the tree, scan
it (``start_project``: every input and rule-file error is raised here, before anything is
written), process its Python files in the pool, and judge the API uses found.

``migrate_files`` writes the migrated files into an output tree the caller owns;
``analyse_project`` writes nothing (``check``, ``analyse``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, FrozenSet, Iterator, List, Optional, Tuple

from gpu2npu.apis.judge import ApiReports, api_reports
from gpu2npu.errors import UserError, warn
from gpu2npu.filekinds import file_kind_named
from gpu2npu.options import ProjectOptions
from gpu2npu.project import cache as result_cache
from gpu2npu.project import worker
from gpu2npu.project.output import AtomicTree, copy_other_entries, make_directories
from gpu2npu.project.parallel import run_jobs
from gpu2npu.project.paths import output_name
from gpu2npu.project.plan import PYTHON, Plan, plan_input
from gpu2npu.project.scan import ProjectScan, analysis_context, located_imports, scan_project
from gpu2npu.rewrite.changes import Kept
from gpu2npu.rewrite.distributed import ModelSearch, find_model, has_training_loop, model_tip, only_defines
from gpu2npu.rules.index import RuleIndex, compile_index
from gpu2npu.rules.kind import kind_named
from gpu2npu.rules.loader import OPTIMIZATIONS, load_rules
from gpu2npu.rules.model import RuleSet
from gpu2npu.source.parse import parse_ast
from gpu2npu.styles import style_named
from gpu2npu.targets import target_named

MIGRATION_SUFFIX = "_msft"
# a path relative to the folder above: a script run from its own folder names its data so
UP_A_FOLDER = re.compile(r"^\.\.[/\\]")
# `name = package.module:function` of a console-script entry point (setup.py, setup.cfg, pyproject.toml)
ENTRY_POINT = re.compile(r"=\s*[\"']?([A-Za-z_][\w.]*)\s*:\s*[A-Za-z_]")
PACKAGING_FILES = ("setup.py", "setup.cfg", "pyproject.toml")
TARGET_MODEL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
DEFAULT_MODEL = "model"  # distributed without -t (msFmkTransplt's default)


@dataclass
class ProjectRun:
    options: ProjectOptions
    index: RuleIndex
    plan: Plan
    output_name: str  # <input name>_msft
    scan: ProjectScan
    results: List[worker.FileResult] = field(default_factory=list)  # per Python file, sorted
    other_results: List[worker.FileResult] = field(default_factory=list)  # other file kinds, sorted
    copied: int = 0
    links: int = 0
    apis: Optional[ApiReports] = None  # the API reports (not made for --diff)
    launcher: str = ""  # the launch script the mode wrote at the output root, if any
    cache: Optional[result_cache.ResultCache] = None  # None: --no-cache, or a folder that cannot be written
    cache_counts: result_cache.CacheCounts = field(default_factory=result_cache.CacheCounts)
    # distributed: the report rows of the model taken without -t, and of the trained models not wrapped
    model_rows: List[Kept] = field(default_factory=list)
    distributes_itself: str = ""  # distributed: the set-up call by which the main script does ("" none)
    # the launcher: (folder, path) where the main script's paths are relative to its own folder
    # (minimind's trainer/ with '../dataset/...'); () it starts from the output root
    start_folder: Tuple[str, str] = ()

    @property
    def model_notice(self) -> str:
        """The line saying which variable was taken for the model ("" -t given, or model moved)."""
        targets = self.scan.facts.target_model.split(",")
        found = next((row for row in self.model_rows if row.name in targets), None)
        if found is None:
            return ""
        (main,) = self.scan.facts.entries
        return (
            f"model: {found.name} (-t not given, {DEFAULT_MODEL} never moved to the device; {found.name} is "
            f"moved at {main} line {found.line}, its .parameters() passed to a call): name another with -t"
        )

    def describe_rule(self, rule_id: str) -> str:
        rule = self.index.rules_by_id.get(rule_id)
        return kind_named(rule.kind).describe(rule) if rule is not None else ""

    @property
    def had_internal_errors(self) -> bool:
        return any(r.skipped.startswith("internal error") for r in self.all_results)

    @property
    def code_results(self) -> List[worker.FileResult]:
        """The files of code (Python files, notebooks): each gets a verdict from its API uses."""
        return [r for r in self.all_results if file_kind_named(r.kind).holds_code]

    @property
    def all_results(self) -> List[worker.FileResult]:
        """Every processed file, of every kind, by path."""
        return sorted(self.results + self.other_results, key=lambda r: r.rel)


def build_index(options: ProjectOptions, extra: Optional[RuleSet] = None) -> RuleIndex:
    """The built-in rules of the mode, the -r files and ``extra`` (statuses from -api files),
    compiled for the target version and the mode without the disabled ones."""
    style = style_named(options.style)
    target = target_named(options.target)
    target.check_mode(style.name)
    folders = tuple(target.rules_for(style))
    if options.optimize:
        if target.name != "npu":
            raise UserError(f"--optimize is for --target npu, not {target.name}", "leave out one of them")
        folders += (OPTIMIZATIONS,)
    rule_set = load_rules(options.rule_files, folders)
    if extra is not None:
        rule_set.extend(extra)
    unknown = set(options.disabled_rules) - rule_set.ids()
    if unknown:
        raise UserError(
            f"--disable-rule names unknown rule id(s) {', '.join(sorted(unknown))}",
            "see 'gpu2npu rules list'",
        )
    disabled = tuple(options.disabled_rules) + _optimizations_not_chosen(rule_set, options.optimize)
    return compile_index(rule_set, options.version, disabled, style.switches)


def _optimizations_not_chosen(rule_set, chosen: Tuple[str, ...]) -> Tuple[str, ...]:
    """The ids of the optimization rules --optimize leaves out: ``safe`` takes the ``exact`` and
    ``tolerance`` ones, ``all`` every one, else the rules named by id."""
    optimizations = {rule.id: rule.optimization.equivalence for rule in rule_set.rules if rule.optimization}
    if chosen in ((), ("all",)):
        return ()
    if chosen == ("safe",):
        return tuple(sorted(i for i, equivalence in optimizations.items() if equivalence == "behaviour"))
    unknown = set(chosen) - set(optimizations)
    if unknown:
        raise UserError(
            f"--optimize names unknown optimization(s) {', '.join(sorted(unknown))}",
            "see 'gpu2npu rules list' (the rules of rules/optimize), or pass --optimize alone or =all",
        )
    return tuple(sorted(set(optimizations) - set(chosen)))


def analyse_project(
    options: ProjectOptions, extra: Optional[RuleSet] = None, rewrite: bool = True, other_kinds: bool = False
) -> ProjectRun:
    """Everything a migration would find and change, without writing anything; ``extra``: more
    rules, such as statuses from -api files; ``rewrite``: False when only the API reports are
    wanted, not the changes; ``other_kinds``: the files of the other kinds too (check)."""
    if not options.input.exists():
        raise UserError(f"'{options.input}' does not exist", "pass existing files or directories")
    run = start_project(options, output_name(options.input, MIGRATION_SUFFIX), extra)
    _process_files(run, None, analyse=True, rewrite=rewrite, other_kinds=other_kinds)
    run.apis = _judge(run)
    return run


def start_project(options: ProjectOptions, name: str, extra: Optional[RuleSet] = None) -> ProjectRun:
    """Rules compiled, the tree planned and scanned; ``name``: of the migrated tree."""
    index = build_index(options, extra)
    plan = plan_input(options.input, options.selection)
    style = style_named(options.style)
    entries = _chosen_entries(options, plan)
    model, model_rows, elsewhere, itself = options.target_model or DEFAULT_MODEL, [], (), ""
    if style.one_entry:
        model, model_rows, elsewhere, itself = _check_main(options, plan, entries, index)
    cache = _open_cache(options)
    scan = scan_project(plan, index, entries, cache)
    scan.facts.target_model, scan.facts.shard_eval = model, options.shard_eval
    scan.facts.distributed_by = elsewhere
    if index.entry_imports and not scan.facts.entries:
        raise UserError(
            f"no entry script found in '{options.input}' (a file that may use torch, with "
            "if __name__ == '__main__': or with a module-level main() call that no other file imports)",
            "name the script that starts the training with --entry FILE",
        )
    if index.device_block is not None and not scan.facts.entries and options.input.is_dir():
        warn(
            f"no entry script found in '{options.input}', so no file takes its device from DEVICE_ID "
            "(every process would use card 0)",
            "name the script that starts the training with --entry FILE",
        )
    run = ProjectRun(options, index, plan, name, scan, cache=cache, model_rows=model_rows)
    run.distributes_itself = itself
    if style.launcher and options.input.is_dir():
        run.start_folder = _start_folder(plan, next(iter(scan.facts.entries)))
    run.cache_counts.corrupt = scan.corrupt
    return run


def _check_main(
    options: ProjectOptions, plan: Plan, entries: FrozenSet[str], index: RuleIndex
) -> Tuple[str, List[Kept], tuple, str]:
    """Distributed: one main script, with a training loop, and model names that are names; the
    models to wrap (separated by commas), the report rows on them (the model inferred: -t not
    given, model never moved; the other models trained but not wrapped), (line of the import,
    set-up) where a module the script imports distributes it already, and the set-up by which
    the script distributes itself ("" none)."""
    if len(entries) != 1:
        raise UserError("the distributed mode needs the main script", "name it with -m MAIN (or one --entry)")
    given = options.target_model
    names = _model_names(given)
    (main,) = entries
    data = (plan.root / main).read_bytes() if options.input.is_dir() else options.input.read_bytes()
    tree = parse_ast(data)
    if tree is None:
        raise UserError(
            f"the main script '{main}' cannot be parsed as Python 3", "fix it, or name another with -m"
        )
    search = _model_search(index, data, names)
    # a module that only defines its training loop or its own process group (lightweight-gan's
    # cli.py passes model.train to a retry helper)
    trains = has_training_loop(tree) or (search is not None and bool(search.already))
    starter, by = (
        _starter_of(plan, main) if options.input.is_dir() and only_defines(tree) and trains else ("", "")
    )
    if starter:
        raise UserError(
            f"the main script '{main}' is a module that {starter}: it only defines its "
            "training (no if __name__ == '__main__': and no call of its functions at its top level), "
            "so started by the launcher it would train nothing",
            "name the script that starts the training with -m, or call its function in an "
            "if __name__ == '__main__': block of its own"
            if not by or _fit_to_be_main(index, plan, by)
            else _by_hand_tip(main, by),
        )
    if search is not None and search.already:  # left as it is: nothing to wrap, no loop to shard
        return ",".join(names), [], (), search.already
    elsewhere = _set_up_by_an_import(index, plan, main, data) if options.input.is_dir() else ()
    if elsewhere:
        return ",".join(names), [], elsewhere, elsewhere[1]
    if not has_training_loop(tree):
        looping = _imported_loop(plan, main, data) if options.input.is_dir() else ""
        raise UserError(
            f"the main script '{main}' has no training loop "
            "(a loop over epochs, or one calling .backward() or .step())"
            + (
                f"; the loop it starts is in '{looping}', and this mode distributes only a loop "
                "of the main script"
                if looping
                else ""
            ),
            _by_hand_tip(looping, main) if looping else "name the script that trains with -m",
        )
    target, rows = _chosen_model(index, search, given, names, main)
    return target, rows + _unwrapped_rows(index, search, target.split(",")), (), ""


def _start_folder(plan: Plan, main: str) -> Tuple[str, str]:
    """(folder, path): the main script's folder and the first of its string constants that climbs
    out of it (``'../dataset/data.jsonl'``): such a script is run from its own folder (minimind's
    ``cd trainer``), so its launcher starts it there; () for a script at the root, or none."""
    folder = str(Path(main).parent)
    if folder == ".":
        return ()
    tree = parse_ast((plan.root / main).read_bytes())
    paths = [
        (node.lineno, node.col_offset, node.value)
        for node in (ast.walk(tree) if tree is not None else ())
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and UP_A_FOLDER.match(node.value)
    ]
    return (folder, min(paths)[2]) if paths else ()


def _set_up_by_an_import(index: RuleIndex, plan: Plan, main: str, data: bytes) -> tuple:
    """(line of the import, "set-up call, in module.py"): the first project module the main
    script imports (directly) that calls a set-up of the distributed rule (its own
    init_process_group, as LoRA's gpu.py and dinov2's distributed package do), or that a package
    it imports re-exports from (timm's ``from timm import utils``, whose ``__init__`` imports
    ``.distributed``); () none."""
    for line, path in _imported_modules(plan, main, data):
        search = _model_search(index, (plan.root / path).read_bytes(), [DEFAULT_MODEL])
        if search is not None and search.already:
            return line, f"{search.already}, in {path}"
    return ()


def _starter_of(plan: Plan, main: str) -> Tuple[str, str]:
    """What starts ``main`` other than as a script (("", "") nothing), and the project file that
    does ("" a packaging file): the first project file that imports it (SlowFast's
    tools/run_net.py calls the train() tools/train_net.py only defines; a module path that ends as
    main's does counts: vision.fair.slowfast.tools.train_net), or a console-script entry point of
    the packaging files (lightweight-gan's lightweight_gan.cli:main)."""
    for entry in plan.of_kind(PYTHON):
        if entry.rel != main:
            imports = located_imports(entry.rel, (plan.root / entry.rel).read_bytes())
            if any(path == main or path.endswith("/" + main) for _, group in imports for path in group):
                return f"'{entry.rel}' imports", entry.rel
    module = main[: -len(".py")].replace("/", ".")
    for name in PACKAGING_FILES:
        path = plan.root / name
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        if any(module == found or module.endswith("." + found) for found in ENTRY_POINT.findall(text)):
            return f"'{name}' starts as a console script", ""
    return "", ""


def _fit_to_be_main(index: RuleIndex, plan: Plan, path: str) -> bool:
    """Whether -m ``path`` would be taken: it has a training loop, or it (or a module it imports)
    sets up its own process group; the tip to name it may then be given."""
    data = (plan.root / path).read_bytes()
    tree = parse_ast(data)
    if tree is not None and has_training_loop(tree):
        return True
    search = _model_search(index, data, [DEFAULT_MODEL])
    return bool(search is not None and search.already) or bool(_set_up_by_an_import(index, plan, path, data))


def _imported_loop(plan: Plan, main: str, data: bytes) -> str:
    """The first project module the main script imports that holds a training loop (minGPT's
    chargpt.py runs mingpt/trainer.py's Trainer.run); "" none."""
    for _, path in _imported_modules(plan, main, data):
        tree = parse_ast((plan.root / path).read_bytes())
        if tree is not None and has_training_loop(tree):
            return path
    return ""


def _by_hand_tip(looping: str, starter: str) -> str:
    """The way left when the loop is in a module that another, loopless script starts: the one
    script this mode rewrites would have to be both (an error naming the other would send the
    user back and forth between the two)."""
    return (
        f"wrap the model in DistributedDataParallel and give the loader a DistributedSampler by hand in "
        f"'{looping}', then start '{starter}' with torchrun; or call the training from an "
        f"if __name__ == '__main__': block of '{looping}' and name it with -m"
    )


def _imported_modules(plan: Plan, main: str, data: bytes) -> Iterator[Tuple[int, str]]:
    """(line of the import, module): each project module the main script imports, and after a
    package's ``__init__.py`` the package's own modules that it imports (its re-exports: one
    level), each once."""
    seen = set()
    for line, path in _python_files(plan, located_imports(main, data)):
        if path in seen:
            continue
        seen.add(path)
        yield line, path
        if path.endswith("/__init__.py"):
            package = path[: -len("__init__.py")]
            inner = located_imports(path, (plan.root / path).read_bytes())
            for _, module in _python_files(plan, inner):
                if module.startswith(package) and module not in seen:
                    seen.add(module)
                    yield line, module


def _python_files(plan: Plan, imports: Iterator[Tuple[int, Tuple[str, ...]]]) -> Iterator[Tuple[int, str]]:
    """(line, path) for the paths of ``imports`` (located_imports) that are Python files of the
    project, or that end as one in a folder does (SlowFast's vision.fair.slowfast.tools.train_net
    is its tools/train_net.py)."""
    for line, group in imports:
        for path in group:
            if not path.endswith(".py"):
                continue
            if (plan.root / path).is_file():
                yield line, path
                continue
            found = next(
                (e.rel for e in plan.of_kind(PYTHON) if "/" in e.rel and path.endswith("/" + e.rel)), ""
            )
            if found:
                yield line, found


def _model_names(given: Optional[str]) -> List[str]:
    """The models -t names (several separated by commas), or the default."""
    if given is None:
        return [DEFAULT_MODEL]
    names = [name.strip() for name in given.split(",")]
    for name in names:
        if not TARGET_MODEL.match(name):
            raise UserError(
                f"-t '{name}' is not a variable or attribute path",
                "give one such as model or self.model (several: separated by commas)",
            )
    if len(set(names)) != len(names):
        raise UserError(f"-t '{given}' names a model twice", "name each model once")
    return names


def _model_search(index: RuleIndex, data: bytes, targets: List[str]) -> Optional[ModelSearch]:
    """What the main script says of the models (None: no wrap to make, or a script the multi-card
    pass will not read either)."""
    plan = index.distributed
    if plan is None or not plan.wrapper:
        return None
    try:
        return find_model(data.decode("utf-8"), plan, targets)
    except UnicodeDecodeError:
        return None


def _chosen_model(
    index: RuleIndex, search: Optional[ModelSearch], given: Optional[str], names: List[str], main: str
) -> Tuple[str, List[Kept]]:
    """-t (its ``names``), or without it model; where that is never moved to the device and -t was
    not given, the one variable moved to the device whose .parameters() are passed to a call (an
    optimizer)."""
    target = ",".join(names)
    if search is None or not search.unmoved:
        return target, []
    found = [(name, line) for name, line in search.candidates if TARGET_MODEL.match(name)]
    names = ", ".join(name for name, _ in found)
    built, move_it = _built_elsewhere(search)
    if given is not None:
        raise UserError(
            f"the main script '{main}' never moves -t '{', '.join(search.unmoved)}' to the device"
            + (f" (the variables that could be the model: {names})" if found else "")
            + built,
            move_it
            or "name the model with -t (a variable moved to the device, such as model = model.to(device))",
        )
    if len(found) == 1:
        ((name, line),) = found
        plan = index.distributed
        text = model_tip(plan, "inferred", name)
        return name, [Kept(line, name, line, name, plan.wrapper_rule, True, tip=text)]
    listed = ",".join(name for name, _ in found)
    what = (
        f"several variables could be the model ({names}: moved to the device, their .parameters() passed "
        "to a call)"
        if found
        else "no variable looks like the model (moved to the device, its .parameters() passed to a call "
        "such as an optimizer)"
    )
    if built and not found:
        raise UserError(
            f"the main script '{main}' never moves {DEFAULT_MODEL} (the default -t) to the device" + built,
            move_it,
        )
    raise UserError(
        f"the main script '{main}' never moves {DEFAULT_MODEL} (the default -t) to the device, and {what}",
        "name the model with -t, or several separated by commas to wrap each (-t " + listed + ")"
        if found
        else "name the model with -t",
    )


def _built_elsewhere(search: ModelSearch) -> Tuple[str, str]:
    """Where the first model not moved is built by a function outside torch (a factory that may
    move it in another module): what the error adds, and what to do ("", "": none is)."""
    name = next((name for name in search.unmoved if name in search.built), None)
    if name is None:
        return "", ""
    line, function = search.built[name]
    return (
        f": {name} is built by {function}(...) on line {line} and not moved after it",
        f"if {function} puts it on the device, move it in the main script too ({name} = {name}.to(device) "
        f"after line {line}) so that the wrap can follow; a function that reads the model's own attributes "
        f"then takes {name}.module",
    )


def _unwrapped_rows(index: RuleIndex, search: Optional[ModelSearch], targets: List[str]) -> List[Kept]:
    """A row for each other variable moved to the device whose .parameters() are passed to a call:
    a model trained too, whose copies would drift apart unless it is wrapped as well."""
    if search is None:
        return []
    plan = index.distributed
    return [
        Kept(line, name, line, name, plan.wrapper_rule, tip=model_tip(plan, "unwrapped", name))
        for name, line in search.candidates
        if name not in targets and TARGET_MODEL.match(name)
    ]


def _chosen_entries(options: ProjectOptions, plan: Plan) -> FrozenSet[str]:
    """The --entry scripts as paths relative to the input (a single input file is its own entry)."""
    chosen = set()
    python_files = {entry.rel for entry in plan.of_kind(PYTHON)}
    for path in options.entries:
        rel = _relative_to_input(path, plan.root)
        if rel not in python_files or not options.input.is_dir() and rel != options.input.name:
            raise UserError(
                f"{options.entry_flag} '{path}' is not a Python file of the input '{options.input}'",
                "name a .py file inside the input",
            )
        chosen.add(rel)
    if not options.input.is_dir():
        return frozenset({options.input.name})
    return frozenset(chosen)


def _relative_to_input(path: Path, root: Path) -> str:
    """``path`` as given (from the working directory) or, failing that, from the input root: the
    first of them that exists inside the input (lerobot's ``-m src/lerobot/scripts/train.py``, run
    from inside the input, names no file from there), else the first inside it."""
    inside = []
    for candidate in (path, root / path):
        try:
            inside.append((candidate.resolve().relative_to(root.resolve()).as_posix(), candidate.is_file()))
        except (ValueError, OSError):
            continue
    existing = [rel for rel, exists in inside if exists]
    return (existing or [rel for rel, _ in inside] or [""])[0]


def migrate_files(run: ProjectRun, tree: Optional[AtomicTree]) -> None:
    """Migrate into ``tree`` (the migrated Python files, copies of all else, no reports);
    ``tree`` None: a --diff run, which writes nothing and judges no API."""
    if tree is None:
        _process_files(run, None, analyse=False, diffs=True)
        return
    make_directories(run.plan, tree)

    def copy_the_rest() -> None:  # links and files no kind migrates, while the workers migrate
        run.copied, run.links = copy_other_entries(run.plan, tree)

    _process_files(run, tree, analyse=True, meanwhile=copy_the_rest)
    run.apis = _judge(run)


def _process_files(
    run: ProjectRun,
    tree: Optional[AtomicTree],
    analyse: bool,
    rewrite: bool = True,
    meanwhile: Callable[[], None] = lambda: None,
    other_kinds: bool = True,
    diffs: bool = False,
) -> None:
    """Process the Python files, and with ``other_kinds`` the files of the other kinds, in the
    pool; ``meanwhile`` runs in this process while the workers are busy; ``diffs``: keep the
    unified diff of each change (--diff)."""
    entries = run.plan.python_largest_first() + (run.plan.other_kinds() if other_kinds else [])
    jobs = [
        worker.Job(
            e.rel,
            str(run.plan.root / e.rel),
            str(tree.path(e.rel)) if tree is not None else None,
            e.file_kind or PYTHON,
            diffs,
        )
        for e in entries
    ]
    context = analysis_context(run.index, run.scan) if analyse else None
    options = run.options
    cache = _cache_of_the_files(run, context, rewrite)
    setup = (run.index, run.scan.facts, context, rewrite, cache)
    reused, jobs = _reused(jobs, cache, run.scan.facts)
    results = reused + run_jobs(
        worker.process,
        jobs,
        options.workers,
        options.progress,
        worker.initialise,
        setup,
        meanwhile,
        crashed=worker.crashed,
    )
    results.sort(key=lambda r: r.rel)
    if cache is not None:
        _close_cache(cache, results, run.cache_counts)
    run.results = [r for r in results if r.kind == PYTHON]
    run.other_results = [r for r in results if r.kind != PYTHON]
    if run.model_rows:  # after the cache: a run with -t naming them gets no rows
        for result in run.results:
            if result.rel in run.scan.facts.entries and not result.skipped:
                result.kept = sorted(result.kept + run.model_rows)


def _reused(jobs: List[worker.Job], cache, facts) -> Tuple[List[worker.FileResult], List[worker.Job]]:
    """The results the cache holds (read here, in this process: a warm run starts no worker)
    and the jobs left for the workers."""
    if cache is None:
        return [], jobs
    reused = [result for result in (worker.from_cache(job, cache, facts) for job in jobs) if result]
    done = {result.rel for result in reused}
    return reused, [job for job in jobs if job.rel not in done]


def _open_cache(options: ProjectOptions) -> Optional[result_cache.ResultCache]:
    """The result cache (None: --no-cache, or a folder that cannot be written: said once)."""
    if options.cache_dir is None:
        return None
    cache, problem = result_cache.open_cache(options.cache_dir, result_cache.tool_fingerprint())
    if cache is None:
        warn(f"{problem}; running without the cache", "choose another folder with --cache-dir, or --no-cache")
    return cache


def _cache_of_the_files(run: ProjectRun, context, rewrite: bool) -> Optional[result_cache.ResultCache]:
    """The cache with this run's share of the keys: the mode, the target, the compiled rules
    (version, built-in and user rules, -api statuses), the analysis settings, what is kept, and
    the project facts every file reads (each file's own are in its key)."""
    if run.cache is None:
        return None
    rules = [
        (rule.kind, rule.id, rule.fields, rule.versions) for _, rule in sorted(run.index.rules_by_id.items())
    ]
    options = run.options
    key = result_cache.fingerprint(
        run.cache.run_key,
        options.style,
        options.target,
        run.index.version,
        rules,
        context,
        rewrite,
        run.scan.facts.shared(),
    )
    return replace(run.cache, run_key=key)


def _close_cache(cache: result_cache.ResultCache, results: List[worker.FileResult], counts) -> None:
    """Count what the cache gave, say when entries were corrupt, and keep the folder bounded."""
    counts.add([r.cache for r in results])  # the scan's corrupt entries are counted already
    if counts.corrupt:
        warn(
            f"{counts.corrupt} entr{'y' if counts.corrupt == 1 else 'ies'} of the cache '{cache.directory}' "
            "could not be read and were ignored (those files were processed again)",
            "nothing to do; --no-cache skips the cache",
        )
    if counts.misses or counts.corrupt:
        result_cache.trim(cache.directory)


def _judge(run: ProjectRun) -> ApiReports:
    calls = (c for r in run.all_results for c in r.calls)
    kept = ((r.rel, guard) for r in run.all_results for guard in r.kept)
    scan = run.scan
    reports = api_reports(calls, run.index, scan.ops, scan.extensions, kept, scan.own_packages)
    for result in run.all_results:
        result.calls = []  # judged: the largest part of the results, freed before the reports' pages
    return reports

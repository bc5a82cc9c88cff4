"""Processing one Python file, in a worker process or in the main one.

Workers share nothing but what ``initialise`` gives them once: the compiled rule index and
the project facts. Each call reads one file, migrates it, writes the result (unless this is a
--diff run) and returns a small FileResult.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

from gpu2npu.apis.callsites import CallSite
from gpu2npu.apis.context import analyse_source
from gpu2npu.filekinds import PYTHON, KindContext, PlannedDependency, Reported, file_kind_named
from gpu2npu.filekinds.base import mentions_left
from gpu2npu.filekinds.python import declared_dependencies, python_reports
from gpu2npu.project.output import copy_file, write_file
from gpu2npu.project.parallel import WORKER_DIED
from gpu2npu.rewrite.changes import Change, Kept
from gpu2npu.rewrite.engine import migrate_source
from gpu2npu.rewrite.kept import file_kept
from gpu2npu.source.names import within
from gpu2npu.source.parse import (
    COPIED,
    NOT_COPIED,
    allow_deep_syntax,
    count_lines,
    parse_ast,
    unreadable_reason,
)

_STATE = {}


@dataclass
class FileResult:
    rel: str
    lines: int = 0
    changed: bool = False
    changes: List[Change] = field(default_factory=list)
    skipped: str = ""
    diff: str = ""
    calls: List[CallSite] = field(default_factory=list)  # uses of analysed APIs, in the original file
    kept: List[Kept] = field(default_factory=list)  # what the rules keep as it is, to report
    kind: str = PYTHON  # the file kind (gpu2npu.filekinds)
    reported: List[Reported] = field(default_factory=list)  # other kinds: what was found and left
    dependencies: List[PlannedDependency] = field(default_factory=list)  # requirement files
    cache: str = ""  # what the result cache gave (gpu2npu.project.cache: hit, miss, corrupt); "": no cache


@dataclass(frozen=True)
class Job:
    rel: str
    source: str
    destination: Optional[str]  # None in a --diff run (and check, analyse): nothing is written
    kind: str = PYTHON
    diff: bool = False  # a --diff run: keep the unified diff of the change


def initialise(index, project, analysis=None, rewrite: bool = True, cache=None) -> None:
    allow_deep_syntax()
    _STATE["index"] = index
    _STATE["project"] = project
    _STATE["analysis"] = analysis
    _STATE["rewrite"] = rewrite  # False: only find the API uses (analyse -m torch_apis)
    _STATE["cache"] = cache  # gpu2npu.project.cache.ResultCache, or None


def process(job: Job) -> FileResult:
    try:
        return _process(job)
    except Exception as exc:  # one bad file must never stop the run
        if job.destination:
            copy_file(Path(job.source), Path(job.destination))
        return FileResult(
            job.rel, skipped=f"internal error ({type(exc).__name__}: {exc}); copied unchanged", kind=job.kind
        )


def from_cache(job: Job, cache, project) -> Optional[FileResult]:
    """The job's result from the cache, its output written (in the main process, before any
    worker starts), or None: the job must be processed (a miss, a corrupt entry, an unreadable
    file: the worker finds and reports each again)."""
    try:
        data = Path(job.source).read_bytes()
    except OSError:
        return None
    found, stored = cache.load(cache.key(job.rel, job.kind, data, project.for_file(job.rel)))
    if stored is None:
        return None
    new_bytes, result = stored
    result.cache = found
    return _written(job, data, new_bytes, result)


def crashed(job: Job) -> FileResult:
    """The result of a file whose worker process died on it (in the main process)."""
    if job.destination:
        copy_file(Path(job.source), Path(job.destination))
    return FileResult(job.rel, skipped=WORKER_DIED + COPIED, kind=job.kind)


def _process(job: Job) -> FileResult:
    source = Path(job.source)
    try:
        data = source.read_bytes()
    except OSError as exc:
        return FileResult(job.rel, skipped=f"cannot be read ({exc.strerror}){NOT_COPIED}", kind=job.kind)
    cache = _STATE["cache"]
    if cache is None:
        return _written(job, data, *_outcome(job, data))
    key = cache.key(job.rel, job.kind, data, _STATE["project"].for_file(job.rel))
    found, stored = cache.load(key)
    if stored is None:
        stored = _outcome(job, data)
        if not stored[1].skipped.startswith("internal error"):
            cache.store(key, stored)
    new_bytes, result = stored
    result.cache = found
    return _written(job, data, new_bytes, result)


def _outcome(job: Job, data: bytes) -> Tuple[Optional[bytes], FileResult]:
    """The file's new bytes (None: unchanged) and its result: what is cached."""
    if job.kind != PYTHON:
        return _process_other(job, data)
    index, analysis = _STATE["index"], _STATE["analysis"]
    if not _STATE["rewrite"]:
        return None, _analyse_only(job.rel, data, analysis)
    project = _STATE["project"]
    wants_tree = (
        index.needs_rewrite(data)
        or project.names_a_reexport(data)
        or (analysis is not None and analysis.mentions(data))
    )
    tree = parse_ast(data) if wants_tree else None  # one stdlib parse, shared below
    outcome = migrate_source(data, index, project, job.rel, tree=tree)
    result = FileResult(job.rel, lines=count_lines(data), changes=outcome.changes, skipped=outcome.skipped)
    result.dependencies, result.reported = declared_dependencies(data, job.rel, index, tree)
    result.reported += python_reports(data, index, tree, outcome.kept)
    if analysis is not None:
        result.calls = _without_resolved(analyse_source(data, job.rel, tree, analysis), outcome.changes)
        result.kept = outcome.kept
    return outcome.new_bytes, result


def _without_resolved(sites, changes):
    """The uses of the original file less the references a change took out of its lines
    (``dtype=torch.float64`` made float32; an import removed, whose row names its package)."""
    resolved = {
        (line, api) for c in changes for api in c.resolves for line in range(c.start_line, c.end_line + 1)
    }
    if not resolved:
        return sites
    return [site for site in sites if not _resolved(site, resolved)]


def _resolved(site, resolved) -> bool:
    if site.kind == "attribute":
        return (site.start_line, site.api) in resolved
    if site.kind == "import":
        return any(line == site.start_line and within(api, site.api) for line, api in resolved)
    return False


def _process_other(job: Job, data: bytes) -> Tuple[Optional[bytes], FileResult]:
    """A file of another kind (shell, configs, notebooks, requirements...): its kind migrates it."""
    context = KindContext(_STATE["index"], _migrate_python, _analyse_python)
    kind = file_kind_named(job.kind)
    outcome = kind.migrate(data, job.rel, context)
    if kind.edits and not outcome.skipped:
        outcome.reported += mentions_left(data, outcome)
    result = FileResult(
        job.rel,
        lines=outcome.lines or count_lines(data),
        changes=outcome.changes,
        skipped=outcome.skipped,
        kind=job.kind,
        reported=outcome.reported,
        dependencies=outcome.dependencies,
        calls=outcome.calls,
        kept=outcome.kept,
    )
    return outcome.new_bytes, result


def _migrate_python(data: bytes, rel: str):
    """The Python migration of a piece of source (a notebook's code): new bytes, changes, skipped,
    and, where the run wants the API reports, the code the rules keep (the rewrite pass's own too:
    -s's cards kept by number)."""
    outcome = migrate_source(data, _STATE["index"], _STATE["project"], rel)
    kept = outcome.kept if _STATE["analysis"] is not None else []
    return outcome.new_bytes, outcome.changes, outcome.skipped, kept


def _analyse_python(data: bytes, rel: str):
    """The API uses and kept code of a piece of source (a notebook's code), for the API reports."""
    analysis = _STATE["analysis"]
    if analysis is None:
        return [], []
    tree = parse_ast(data)
    kept = file_kept(data, tree, _STATE["index"], *_STATE["project"].kept_facts(rel))
    return analyse_source(data, rel, tree, analysis), kept


def _written(job: Job, data: bytes, new_bytes: Optional[bytes], result: FileResult) -> FileResult:
    """The new bytes written (or the diff kept, in a --diff run)."""
    result.changed = new_bytes is not None
    if job.destination is None:
        if job.diff and new_bytes is not None:
            result.diff = unified_diff(job.rel, data, new_bytes)
        return result
    write_file(Path(job.source), Path(job.destination), new_bytes)
    return result


def _analyse_only(rel: str, data: bytes, analysis) -> FileResult:
    """The uses of analysed APIs, without the rewrite pass (the reports do not depend on it)."""
    tree = parse_ast(data)
    skipped = "" if tree is not None else unreadable_reason(data)
    result = FileResult(rel, lines=count_lines(data), skipped=skipped)
    result.calls = analyse_source(data, rel, tree, analysis)
    result.kept = file_kept(data, tree, _STATE["index"], *_STATE["project"].kept_facts(rel))
    return result


def unified_diff(rel: str, old: bytes, new: bytes) -> str:
    old_lines = old.decode("utf-8", "replace").splitlines(keepends=True)
    new_lines = new.decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(old_lines, new_lines, f"a/{rel}", f"b/{rel}"))

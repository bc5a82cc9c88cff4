"""Migrating the bytes of one Python file: decide, parse once, transform once, check."""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field
from typing import List, Optional

import libcst as cst

from gpu2npu.rewrite.changes import INSERT, Change, Kept
from gpu2npu.rewrite.imports import already_imported, insert_at_top, insert_by_text
from gpu2npu.rewrite.kept import file_kept
from gpu2npu.rewrite.transformer import MigrationTransformer, ProjectFacts
from gpu2npu.source.modules import is_script
from gpu2npu.source.parse import COPIED, PARSE_ERRORS, parse_ast, parse_failure, unreadable_reason


@dataclass
class SourceResult:
    new_bytes: Optional[bytes] = None  # None: the file stays byte-identical
    changes: List[Change] = field(default_factory=list)
    skipped: str = ""  # why the file could not be migrated (it is then copied unchanged)
    kept: List[Kept] = field(default_factory=list)  # what the rules keep as it is, to report


def migrate_source(
    data: bytes,
    index,
    project: Optional[ProjectFacts] = None,
    path: str = "<file>",
    text_path: bool = True,
    tree: Optional[ast.Module] = None,
) -> SourceResult:
    """Migrate one file's bytes. Files no rule can touch are only checked for validity; files
    whose only change is an import insertion are edited as text (the stdlib ast finds the
    spot, several times cheaper than libcst); all others take the libcst pass. An entry script
    of the project then gets the entry imports (InsertEntryImportRule) at its top."""
    project = project or ProjectFacts()
    result = _migrate(data, index, project, path, text_path, tree)
    if index.entry_imports and path in project.entries and not result.skipped:
        return _with_entry_imports(data, result, index, tree)
    return result


def _migrate(data: bytes, index, project: ProjectFacts, path: str, text_path: bool, tree) -> SourceResult:
    if not index.needs_rewrite(data):
        # A tree the caller parsed already proves the file valid; else check it (it is still reported).
        reason = "" if tree is not None else unreadable_reason(data)
        return SourceResult(skipped=reason + COPIED if reason else "")
    reason = "" if tree is not None else unreadable_reason(data)
    if reason:  # checked before libcst sees the file: some files would crash its parser
        return SourceResult(skipped=reason + COPIED)
    if text_path and not index.needs_tree(data):
        result = _insert_imports_as_text(data, index, tree)
        if result is not None:
            return _without_needless_imports(result, data, index, tree)
    try:
        return _rewrite(data, index, project, path, tree)
    except PARSE_ERRORS as exc:
        return SourceResult(skipped=parse_failure(data, exc) + COPIED)


def _rewrite(
    data: bytes, index, project: ProjectFacts, path: str, tree: Optional[ast.Module]
) -> SourceResult:
    """The libcst pass; a RecursionError of a tree walk is one of PARSE_ERRORS (too deep)."""
    module = cst.parse_module(data)
    tree = tree if tree is not None else parse_ast(data)
    kept = file_kept(data, tree, index, project.cuda_modules_for(path))
    source = data.decode(module.encoding)
    transformer = MigrationTransformer(index, module, project, source=source, tree=tree, kept=kept, path=path)
    new_module = module.visit(transformer)
    kept = sorted(kept + transformer.kept_here)
    if not transformer.changes or _only_needless_imports(transformer.changes, data, index, tree):
        return SourceResult(kept=kept)
    new_bytes = new_module.bytes  # the one code generation of the pass
    if new_bytes == data:
        return SourceResult(kept=kept)
    problem = _compile_problem(new_bytes, data, path)
    if problem:
        return SourceResult(
            skipped=f"internal error: the rewritten file would not compile ({problem}); kept unchanged"
        )
    return SourceResult(new_bytes=new_bytes, changes=sorted(transformer.changes), kept=kept)


def _with_entry_imports(data: bytes, result: SourceResult, index, tree) -> SourceResult:
    """The entry imports the file lacks, put at the top of the migrated text."""
    current = result.new_bytes if result.new_bytes is not None else data
    if result.new_bytes is not None or tree is None:
        tree = parse_ast(current)
    if tree is None:
        return result
    source = current.decode("utf-8", "replace")
    missing = [e for e in index.entry_imports if not already_imported(source, e.module, tree)]
    if not missing:
        return result
    inserted = insert_at_top(current, tree, [e.statement for e in missing])
    if inserted is None:
        reason = "the entry imports cannot be placed as text (lone CR line ends?); copied unchanged"
        return SourceResult(skipped=reason)
    new_bytes, line = inserted
    added = [
        Change(line + n, line + n, INSERT, f"insert {e.statement} (entry script)", e.rule_id)
        for n, e in enumerate(missing)
    ]
    return SourceResult(new_bytes, sorted(result.changes + added), kept=result.kept)


def _without_needless_imports(result: SourceResult, data: bytes, index, tree) -> SourceResult:
    return SourceResult() if _only_needless_imports(result.changes, data, index, tree) else result


def _only_needless_imports(changes: List[Change], data: bytes, index, tree) -> bool:
    """Every change is an insertion of an import wanted only where needed, and the file neither
    changes otherwise nor runs as a program (InsertImportRule ``only_where_needed``)."""
    optional = {i.rule_id for i in index.insert_imports if i.only_where_needed}
    if not changes or any(c.operation != INSERT or c.rule not in optional for c in changes):
        return False
    return not is_script(tree if tree is not None else parse_ast(data))


def _insert_imports_as_text(data: bytes, index, tree: Optional[ast.Module]) -> Optional[SourceResult]:
    """The text path, or None when libcst must decide (unusual encoding, syntax or layout)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        if "import x\n".encode(encoding) != b"import x\n":
            return None  # not ASCII-compatible (UTF-16 and the like)
    except (SyntaxError, LookupError):
        return None
    tree = tree if tree is not None else parse_ast(data)
    if tree is None:
        return None
    inserted = insert_by_text(data, index.insert_imports, tree)
    if inserted is None:
        return None
    new_bytes, placed = inserted
    if not placed:
        return SourceResult()
    changes = [Change(line, line, INSERT, f"insert import {i.module}", i.rule_id) for i, line in placed]
    return SourceResult(new_bytes=new_bytes, changes=sorted(changes))


def _compile_problem(new_code: bytes, old_code: bytes, path: str) -> str:
    """Why the rewrite does not compile, if the original did; '' when all is well."""
    try:
        compile(new_code, path, "exec", dont_inherit=True)
        return ""
    except SyntaxError as exc:
        try:
            compile(old_code, path, "exec", dont_inherit=True)
        except SyntaxError:
            return ""  # this Python cannot compile the original either: nothing to compare
        return f"line {exc.lineno}: {exc.msg}"

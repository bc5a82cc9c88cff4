"""Migrating the bytes of one Python file: decide, parse once, transform once, check."""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, FrozenSet, List, Optional, Tuple

import libcst as cst

from gpu2npu.rewrite.changes import (
    INSERT,
    Change,
    Kept,
    changed_line,
    in_original_lines,
    kept_in_original_lines,
    original_lines,
)
from gpu2npu.rewrite.device_selection import MODULE_LEVEL, narrows_visible_devices, selects_its_device
from gpu2npu.rewrite.distributed import distribute, wrappers_in_place
from gpu2npu.rewrite.facts import file_constructor_subclasses, with_names
from gpu2npu.rewrite.imports import already_imported, insert_at_top, insert_by_text, leading_statements
from gpu2npu.rewrite.kept import file_kept
from gpu2npu.rewrite.scaled_batch import scaled_batches
from gpu2npu.rewrite.skeleton import source_skeleton
from gpu2npu.rewrite.transformer import MigrationTransformer, ProjectFacts
from gpu2npu.rules.index import DeviceBlock
from gpu2npu.source.imports import file_imports
from gpu2npu.source.modules import builds_a_package, is_script, main_guard
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
    if result.skipped:
        return result
    entry = path in project.entries
    if index.entry_imports and entry:
        result = _with_entry_imports(data, result, index, tree)
    already = False
    if index.distributed is not None and entry and not result.skipped:
        result, already = _distributed(data, result, index, project, path, tree)
    if index.device_block is not None and not result.skipped:
        # a script distributed already selects its device and joins its group itself (YOLOX forks
        # its workers after the parent chose none): it binds the name only where its code uses it
        block = index.device_block.for_module(data.decode("utf-8", "replace"))
        result = _with_device_block(
            data, result, block, entry and not already, project, path, block.entry_statements
        )
    return result


def _migrate(data: bytes, index, project: ProjectFacts, path: str, text_path: bool, tree) -> SourceResult:
    reexport = project.names_a_reexport(data)
    if not index.needs_rewrite(data) and not reexport:
        # A tree the caller parsed already proves the file valid; else check it (it is still reported).
        reason = "" if tree is not None else unreadable_reason(data)
        return SourceResult(skipped=reason + COPIED if reason else "")
    reason = "" if tree is not None else unreadable_reason(data)
    if reason:  # checked before libcst sees the file: some files would crash its parser
        return SourceResult(skipped=reason + COPIED)
    if text_path and not index.needs_tree(data) and not reexport:
        result = _insert_imports_as_text(data, index, tree)
        if result is not None:
            return _without_needless_imports(result, data, index, tree, path)
    try:
        return _rewrite(data, index, project, path, tree)
    except PARSE_ERRORS as exc:
        return SourceResult(skipped=parse_failure(data, exc) + COPIED)


def _statement_triggers(data: bytes, index, project: ProjectFacts, subclasses: Dict[str, str]):
    """The words a statement must spell for the pass to visit it: the index's, the names of project
    re-exports, and of this module's classes that keep a helper's constructor (``subclasses``)."""
    return with_names(project.statement_triggers(data, index.statement_triggers), subclasses)


def _constructor_subclasses(data: bytes, index, project: ProjectFacts, tree) -> Dict[str, str]:
    if not index.reexported_edits:
        return {}
    text = data.decode("utf-8", "replace")
    return file_constructor_subclasses(text, tree, index.reexported_edits, project.reexports)


def _rewrite(
    data: bytes, index, project: ProjectFacts, path: str, tree: Optional[ast.Module], whole: bool = False
) -> SourceResult:
    """The libcst pass, over the file's skeleton (gpu2npu.rewrite.skeleton) unless ``whole``; a
    RecursionError of a tree walk is one of PARSE_ERRORS (too deep)."""
    tree = tree if tree is not None else parse_ast(data)
    subclasses = _constructor_subclasses(data, index, project, tree)
    triggers = None if whole else _statement_triggers(data, index, project, subclasses)
    skeleton = None if whole else source_skeleton(data, tree, triggers)
    if skeleton is None:
        module = cst.parse_module(data)
    else:
        try:
            module = cst.parse_module(skeleton.data)
        except PARSE_ERRORS:  # never expected: the whole file decides
            return _rewrite(data, index, project, path, tree, whole=True)
    kept = file_kept(data, tree, index, *project.kept_facts(path))
    source = data.decode(module.encoding)
    transformer = MigrationTransformer(
        index, module, project, source, tree, kept, path, skeleton=skeleton, subclasses=subclasses
    )
    new_module = module.visit(transformer)
    kept = sorted(kept + transformer.kept_here)
    if not transformer.changes or _only_needless_imports(transformer.changes, data, index, tree, path):
        return SourceResult(kept=kept)
    new_bytes = new_module.bytes  # the one code generation of the pass
    if skeleton is not None:
        new_bytes = skeleton.restore(new_bytes)
        if new_bytes is None:  # a stub was not found as written: parse the whole file
            return _rewrite(data, index, project, path, tree, whole=True)
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
    added = in_original_lines(added, original_lines(data, new_bytes))
    return SourceResult(new_bytes, sorted(result.changes + added), kept=result.kept)


def _distributed(data: bytes, result: SourceResult, index, project: ProjectFacts, path: str, tree):
    """The main script made multi-card (gpu2npu.rewrite.distributed), and whether it was so already."""
    plan = index.distributed
    current = result.new_bytes if result.new_bytes is not None else data
    try:
        source = current.decode("utf-8")
    except UnicodeDecodeError:
        return SourceResult(skipped="the main script is not UTF-8: copied unchanged"), False
    elsewhere = project.distributed_by
    if elsewhere:  # its line is the original's
        elsewhere = (changed_line(data, current, elsewhere[0]), elsewhere[1])
    tree = tree if tree is not None else parse_ast(data)
    in_place = wrappers_in_place(tree, plan, project.target_model.split(",")) if tree is not None else {}
    in_place = {changed_line(data, current, line): model for line, model in in_place.items()}
    done = distribute(source, plan, project.target_model, project.shard_eval, elsewhere, in_place)
    line_of = original_lines(data, current)
    # where the wrap took a DataParallel's place, the full migration's rows on that wrapper go
    replaced = {line_of(line) for line in done.replaced}
    wrapper_rules = {wrapper.rule_id for wrapper in index.kept_wrappers.values()}
    kept = [k for k in result.kept if not (k.line in replaced and k.rule_id in wrapper_rules)]
    ours = [c for c in result.changes if not (c.start_line in replaced and c.rule in wrapper_rules)]
    kept = sorted(kept + kept_in_original_lines(done.kept, line_of) + _scaled_batches(tree, plan, done))
    if done.new_code == source:
        return SourceResult(result.new_bytes, ours, kept=kept), done.already
    new_bytes = done.new_code.encode("utf-8")
    problem = _compile_problem(new_bytes, data, path)
    if problem:
        reason = f"internal error: the multi-card rewrite would not compile ({problem}); kept unchanged"
        return SourceResult(skipped=reason), False
    changes = ours + in_original_lines(done.changes, line_of)
    return SourceResult(new_bytes, sorted(changes), kept=kept), done.already


def _scaled_batches(tree, plan, done) -> List[Kept]:
    """Rows on the original's lines that multiply a batch size by the number of cards
    (gpu2npu.rewrite.scaled_batch), where the script is made multi-card here."""
    tip = plan.tips.get("card_batch")
    if done.already or not tip or tree is None:
        return []
    lines = scaled_batches(tree, file_imports(tree))
    return [
        Kept(line, "batch_size", line, "batch_size", plan.loader_rule, works=True, tip=tip) for line in lines
    ]


def _with_device_block(
    data: bytes,
    result: SourceResult,
    block: DeviceBlock,
    entry: bool,
    project: ProjectFacts,
    path: str,
    entry_statements=(),
) -> SourceResult:
    """The statements binding the device index from the environment, after the leading imports
    of a module whose migrated code uses the name, and of an entry script that imports torch (or
    torch_npu, inserted where the code uses the NPU), itself or through project modules (they
    select the device: ``_Selection``), then ``entry_statements`` in an entry script; never where
    the module binds the name already."""
    current = result.new_bytes if result.new_bytes is not None else data
    if not entry and block.name.encode() not in current:
        return result
    tree = parse_ast(current)
    if tree is None or _binds_name(tree, block.name):
        return result
    text = current.decode("utf-8", "replace")
    entry = entry and (
        already_imported(text, "torch", tree)
        or already_imported(text, "torch_npu", tree)  # ChatGLM's demos: only transformers and .cuda()
        or path in project.torch_through_imports
    )
    if not (entry or _uses_name(tree, block.name)):
        return result
    selection = _Selection.of(current, tree, block, project, path) if entry else _Selection()
    leading = leading_statements(tree, imports=True)
    inserted_code = list(block.statements) + selection.at_top + list(entry_statements if entry else ())
    used = _names_used(tuple(inserted_code + selection.in_guard))
    missing = [
        f"import {module}"
        for module in block.imports
        if module in used and not _imported_plainly(leading, module)
    ]
    statements = missing + inserted_code
    inserted = insert_at_top(current, tree, statements, after_imports=True)
    if inserted is None:
        reason = (
            f"the {block.name} statements cannot be placed as text (lone CR line ends?); copied unchanged"
        )
        return SourceResult(skipped=reason)
    new_bytes, line = inserted
    guarded = []
    if selection.in_guard:
        at = selection.guard_line + len(statements)
        new_bytes = _insert_lines(new_bytes, at, selection.guard_indent, selection.in_guard)
        why = (
            "other files import it"
            if project.module_imported(path)
            else "a module of a package: its users import it"
        )
        message = f"select {block.name} when the module runs as a script ({why})"
        guarded = [Change(at, at + len(selection.in_guard) - 1, INSERT, message, block.rule_id)]
    line_of = original_lines(data, new_bytes)
    message = _device_block_message(block, selection, line_of, line, len(statements))
    added = [Change(line, line + len(statements) - 1, INSERT, message, block.rule_id)] + guarded
    added = in_original_lines(added, line_of)
    return SourceResult(new_bytes, sorted(result.changes + added), kept=result.kept)


@dataclass
class _Selection:
    """Where an entry script selects the device (-s's ``set_device(DEVICE_ID)``): at its top; in
    its ``__main__`` block where the module may be imported (importing it claims no card)
    and nothing above that block uses the device. Where the script selects its device itself
    (``itself``: that line) or calls a function of a module that does (``elsewhere``), only the
    rule's ``select_when_set`` (-s: where DEVICE_ID is set), and nothing where the visible devices
    are set in Python."""

    at_top: List[str] = field(default_factory=list)
    in_guard: List[str] = field(default_factory=list)
    guard_line: int = 0  # the line of the __main__ block's first statement, before the insertion
    guard_indent: bytes = b""
    itself: int = 0
    elsewhere: Optional[tuple] = None

    @classmethod
    def of(cls, data: bytes, tree: ast.Module, block: DeviceBlock, project: ProjectFacts, path: str):
        select = list(block.select_statements)
        if not select:
            return cls()
        itself = selects_its_device(tree, block.name, block.selected_by)
        elsewhere = None if itself else project.selected_elsewhere.get(path)
        if itself or elsewhere:  # only a selection the environment asks for, and never before
            narrows = narrows_visible_devices(tree) if itself else elsewhere[3]  # the visible devices set
            select = [] if narrows else list(block.select_when_set)
        guard = _guard_spot(data, tree, block.name) if project.importable(path) else None
        if guard is None or block.entry_statements:
            return cls(at_top=select, itself=itself, elsewhere=elsewhere)
        return cls(
            in_guard=select, guard_line=guard[0], guard_indent=guard[1], itself=itself, elsewhere=elsewhere
        )


def _device_block_message(
    block: DeviceBlock, selection: _Selection, line_of, line: int, inserted: int
) -> str:
    message = f"insert the statements that take {block.name} from the environment"
    how = (
        "selecting it only where it is set" if selection.at_top or selection.in_guard else "not selecting it"
    )
    if selection.itself:
        at = selection.itself + (inserted if selection.itself >= line else 0)  # read before the insertion
        return f"{message} ({how}: the script selects its device itself, line {line_of(at)})"
    if selection.elsewhere:
        return f"{message} ({how}: {_selection_elsewhere(*selection.elsewhere)})"
    return message


def _guard_spot(data: bytes, tree: ast.Module, name: str) -> Optional[Tuple[int, bytes]]:
    """(line, indentation) of the first statement of the module's ``__main__`` block, where it
    starts its own line and no statement above the block uses the device; None otherwise."""
    guard = main_guard(tree)
    if guard is None or any(_uses_a_device(node, name) for node in tree.body[: tree.body.index(guard)]):
        return None
    first = guard.body[0]
    prefix = data.split(b"\n")[first.lineno - 1][: first.col_offset]
    if first.lineno == guard.lineno or prefix.strip(b" \t"):
        return None  # `if __name__ == "__main__": main()` on one line
    return first.lineno, prefix


def _uses_a_device(node: ast.stmt, name: str) -> bool:
    """Whether a module-level statement (not a definition or an import) may touch the device."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
        return False
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id == name:
            return True
        if isinstance(child, ast.Attribute) and child.attr in ("npu", "cuda"):
            return True
        if isinstance(child, ast.Constant) and isinstance(child.value, str) and child.value.startswith("npu"):
            return True
    return False


def _insert_lines(data: bytes, line: int, indent: bytes, statements: List[str]) -> bytes:
    """``statements`` as lines before line ``line`` (1-based), each with ``indent``."""
    lines = data.split(b"\n")
    carriage = b"\r" if lines[0].endswith(b"\r") else b""
    block = [indent + text.encode("ascii") + carriage for text in statements]
    return b"\n".join(lines[: line - 1] + block + lines[line - 1 :])


def _selection_elsewhere(module: str, line: int, function: str, narrows: bool) -> str:
    if function == MODULE_LEVEL:
        return f"the script imports {module}, which selects its device on import, line {line}"
    return f"the script calls {function} of {module}, which selects its device, line {line}"


@lru_cache(maxsize=None)
def _names_used(statements: Tuple[str, ...]) -> FrozenSet[str]:
    """The names the statements read: the same few combinations of the rule's statements for
    every module, parsed once each."""
    tree = ast.parse("\n".join(statements))
    return frozenset(node.id for node in ast.walk(tree) if isinstance(node, ast.Name))


def _uses_name(tree: ast.Module, name: str) -> bool:
    return any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(tree))


def _binds_name(tree: ast.Module, name: str) -> bool:
    """Whether a module-level statement assigns ``name`` (or imports it)."""
    for statement in tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
            targets = [statement.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name) == name for alias in statement.names):
                return True
    return False


def _imported_plainly(statements, module: str) -> bool:
    """``import module`` (binding the name ``module`` itself) among the statements."""
    return any(
        isinstance(s, ast.Import) and any(a.name == module and a.asname is None for a in s.names)
        for s in statements
    )


def _without_needless_imports(result: SourceResult, data: bytes, index, tree, path: str) -> SourceResult:
    return SourceResult() if _only_needless_imports(result.changes, data, index, tree, path) else result


def _only_needless_imports(changes: List[Change], data: bytes, index, tree, path: str) -> bool:
    """Every change is an insertion of an import wanted only where needed, and the file neither
    changes otherwise nor runs as a program (InsertImportRule ``only_where_needed``); a
    packaging script is no program."""
    optional = {i.rule_id for i in index.insert_imports if i.only_where_needed}
    if not changes or any(c.operation != INSERT or c.rule not in optional for c in changes):
        return False
    return builds_a_package(path, data) or not is_script(tree if tree is not None else parse_ast(data))


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

"""The single libcst pass that applies every rule to one file.

Each node is looked up in the table of the compiled index (gpu2npu.rules.index) that matches
its type: dotted references and imports in ``names``, called methods in ``methods``, other
attributes in ``attributes``, calls in ``calls`` (whose entries carry their own edit), string
literals in ``strings``, import lines in ``remove_imports`` and ``insert_imports``. The pass
never knows which rule kind wrote an entry. Matching reads the original node (and the bindings
seen so far); edits go to the updated node, so several rules can act on one call.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

import libcst as cst

from gpu2npu.rewrite import bindings
from gpu2npu.rewrite import references as refs
from gpu2npu.rewrite.changes import DELETE, INSERT, MODIFY, STRING, Change, Kept
from gpu2npu.rewrite.device_selection import rank_alternatives
from gpu2npu.rewrite.facts import FileFacts, file_constructor_subclasses, with_names
from gpu2npu.rewrite.imports import (
    already_imported,
    first_module_level_import,
    import_line,
    import_missing,
    import_places,
    imports_module,
)
from gpu2npu.rewrite.skipping import statement_skipper
from gpu2npu.rewrite.string_names import named_formatted_string, named_simple_string, names_literal
from gpu2npu.rewrite.strings import rewrite_formatted_string, rewrite_simple_string
from gpu2npu.rewrite.unused_imports import Droppable, alias_key, names_read, package, without_imports
from gpu2npu.rules.index import ANY_RECEIVER
from gpu2npu.source.imports import bound_by_from_import, bound_by_import
from gpu2npu.source.lines import NewlineCounter, chain_line_breaks, line_breaks
from gpu2npu.source.modules import relative_spellings
from gpu2npu.source.names import chain_parts, dotted_expression, dotted_name
from gpu2npu.source.scopes import LOCAL, ImportBinding, ScopeStack
from gpu2npu.source.torch_names import names_several_cards

NPU_NAMES = re.compile(r"npu|hccl")  # in a rewritten string: it needs torch_npu loaded
STRING_NODES = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
PATTERN_TIP = (
    "kept: a case pattern must be a literal (a name there captures every value); where this arm must take "
    "the accelerator too, add a guarded case: case _ if value == DEVICE_TYPE (DEVICE_TYPE bound by gpu2npu)"
)
COLLECTIONS = (cst.List, cst.Tuple, cst.Set)
PREFIX_METHODS = frozenset({"startswith", "endswith"})
STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


class ProjectFacts:
    """What the whole input tree tells a single file: classes defining a renamed method, and
    the modules of the C++/CUDA extensions the project builds (by file, the names ``load()``
    results are bound to there)."""

    def __init__(
        self,
        method_classes: Optional[Dict[str, Set[str]]] = None,
        cuda_modules: FrozenSet[str] = frozenset(),
        cuda_variables: Optional[Dict[str, Set[str]]] = None,
        imported_modules: FrozenSet[str] = frozenset(),
        entries: FrozenSet[str] = frozenset(),
        target_model: str = "model",
        shard_eval: bool = False,
    ):
        self.method_classes: Dict[str, Set[str]] = method_classes or {}
        self.cuda_modules = cuda_modules
        self.cuda_variables: Dict[str, Set[str]] = cuda_variables or {}
        # the paths of the project modules other files import, and the last names of imports no
        # project path answers (where the scan resolved imports); else last names of every import
        self.imported_modules = imported_modules
        self.entries = entries  # the entry scripts (relative paths), where the index has entry imports
        self.target_model = target_model  # distributed: the variable holding the model (-t)
        self.shard_eval = shard_eval  # distributed: shard evaluation loaders too
        self.refused_calls: FrozenSet[str] = frozenset()  # of the index's, those some file makes
        self.loads_state_dicts = False  # some file calls .load_state_dict(
        # functions whose result some file reads a removed wrapper's attribute of (x = f(); x.module)
        self.wrapper_read_from: FrozenSet[str] = frozenset()
        self.cuda_only_files: FrozenSet[str] = frozenset()  # modules needing a CUDA-only library to import
        # distributed: (line of the import, set-up call and module) where a module the main script
        # imports sets up the process group or DDP (the script is distributed already); () none
        self.distributed_by: Tuple = ()
        # -s: by entry script, (module, line, function, narrows) where a module it imports selects
        # the device in a function the script calls (or on import: function ""); narrows: by
        # setting the visible devices
        self.selected_elsewhere: Dict[str, Tuple[str, int, str, bool]] = {}
        # -s: the entry scripts that import no torch but a project module that does
        self.torch_through_imports: FrozenSet[str] = frozenset()
        # the modules in a package folder (one holding __init__.py, below the root): importable by
        # anyone who installs or imports the package, whoever in the project imports them
        self.package_modules: FrozenSet[str] = frozenset()
        # a project module's name for a library helper it re-exports ("utils.torch_utils.
        # smart_amp_autocast") -> the helper's ("ultralytics.utils.torch_utils.autocast")
        self.reexports: Dict[str, str] = {}
        self._reexported_words: Optional["re.Pattern[bytes]"] = None
        self._with_reexports: Dict[str, "re.Pattern[str]"] = {}  # statement_triggers, by index pattern
        # by file, by module it star-imports as written (".IFNet"), the names that import binds and
        # what each stands for (("torch", "torch"),): gpu2npu.project.star_imports
        self.star_bindings: Dict[str, Dict[str, Tuple[Tuple[str, str], ...]]] = {}
        # by file, its functions that name the NPU themselves (kept_strings.npu_getters): a 'cuda'
        # compared with their result elsewhere is the project's own CUDA test
        self.npu_getters: Dict[str, Tuple[str, ...]] = {}

    def module_imported(self, rel: str) -> bool:
        """Whether some file may import the module at ``rel``: by its path where the scan resolved
        the imports, else (and for imports no project path answers) by its last name."""
        stem = rel.rsplit("/", 1)[-1][: -len(".py")] if rel.endswith(".py") else rel
        return rel in self.imported_modules or stem in self.imported_modules

    def importable(self, rel: str) -> bool:
        """Whether the module at ``rel`` may be imported: some project file may, or it belongs to
        a package (vit_pytorch's modules, each with a ``__main__`` demo, are its users' imports)."""
        return self.module_imported(rel) or rel in self.package_modules

    def cuda_modules_for(self, rel: str) -> FrozenSet[str]:
        """The modules and names that run only on CUDA in the file at ``rel``: the extensions'
        modules, its ``load()`` results, and the project's modules that need a CUDA-only library
        as the file may spell them (``.triton_ops``)."""
        spelled = {
            name for other in self.cuda_only_files if other != rel for name in relative_spellings(rel, other)
        }
        return self.cuda_modules | frozenset(self.cuda_variables.get(rel, ())) | spelled

    def getters_for(self, rel: str) -> FrozenSet[str]:
        """The functions of other project files that name the NPU themselves, as the file at
        ``rel`` may spell them: ``module.function`` (``.device.get_device``)."""
        return frozenset(
            f"{module}.{function}"
            for other, functions in self.npu_getters.items()
            if other != rel
            for module in relative_spellings(rel, other)
            for function in functions
        )

    def kept_facts(self, rel: str) -> tuple:
        """What ``file_kept`` reads of these facts for the file at ``rel``."""
        return self.cuda_modules_for(rel), self.wrapper_read_from, self.getters_for(rel)

    def shared(self) -> tuple:
        """What the processing of every file reads of these facts (for the result cache's keys)."""
        return (
            self.method_classes,
            self.target_model,
            self.shard_eval,
            sorted(self.refused_calls),
            self.loads_state_dicts,
            sorted(self.wrapper_read_from),
            self.distributed_by,
            sorted(self.reexports.items()),
        )

    def names_a_reexport(self, data: bytes) -> bool:
        """Whether the file's bytes spell a name a project module re-exports (its calls may take
        a rule though no trigger word of the index is there)."""
        if not self.reexports:
            return False
        if self._reexported_words is None:
            words = sorted({name.rsplit(".", 1)[-1] for name in self.reexports})
            self._reexported_words = re.compile(
                rb"\b(?:%s)\b" % b"|".join(re.escape(w.encode()) for w in words)
            )
        return self._reexported_words.search(data) is not None

    def statement_triggers(self, data: bytes, triggers):
        """The index's trigger words (a str pattern, or None), with the names project modules
        re-export where the file spells one: ``from pkg import Scaler as S; S()`` calls
        torch.amp.GradScaler, though no line of the file names it."""
        if triggers is None or not self.names_a_reexport(data):
            return triggers
        if triggers.pattern not in self._with_reexports:
            words = sorted({name.rsplit(".", 1)[-1] for name in self.reexports})
            pattern = r"%s|\b(?:%s)\b" % (triggers.pattern, "|".join(map(re.escape, words)))
            self._with_reexports[triggers.pattern] = re.compile(pattern)
        return self._with_reexports[triggers.pattern]

    def for_file(self, rel: str) -> tuple:
        """What the processing of the file at ``rel`` reads of them besides ``shared()``."""
        entry = rel in self.entries
        return (
            self.cuda_modules_for(rel),
            self.module_imported(rel),
            rel in self.package_modules,
            entry,
            self.selected_elsewhere.get(rel),
            rel in self.torch_through_imports,
            sorted(self.star_bindings.get(rel, {}).items()),
            sorted(self.getters_for(rel)),
        )


# mp.spawn(fn, ...), torch.multiprocessing.start_processes(fn, ...), Process(target=fn, ...)
_PROCESS_TARGET = re.compile(
    r"\b(?:spawn|start_processes)\s*\(\s*(?:fn\s*=\s*)?([A-Za-z_]\w*)|\bProcess\s*\([^()]*?\btarget\s*=\s*([A-Za-z_]\w*)"
)


# def name(first, ...): a function and its first parameter
_DEFINITION = re.compile(r"(?m)^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\([ \t\n]*(\w+)")


class MigrationTransformer(NewlineCounter, cst.CSTTransformer):
    """Apply the index's rules to one module. Lines of changes come from a newline counter kept
    during the pass (libcst visits nodes in source order), instead of PositionProvider, which
    costs a whole extra code generation per file."""

    def __init__(
        self,
        index,
        module: cst.Module,
        project: Optional[ProjectFacts] = None,
        source: Optional[str] = None,
        tree=None,
        kept: Iterable[Kept] = (),
        path: str = "<file>",
        skeleton=None,
        subclasses: Optional[Dict[str, str]] = None,
    ):
        """``skeleton``: the skeleton ``module`` was parsed from (gpu2npu.rewrite.skeleton), whose
        stubs hold the statements no rule can touch; without one, the pass skips them itself.
        ``subclasses``: the module's classes that keep a helper's constructor, when the caller
        has found them already (facts.file_constructor_subclasses)."""
        super().__init__()
        self.index = index
        self.module = module
        self.project = project or ProjectFacts()
        self.source = source if source is not None else module.code
        block = index.device_block
        self.device_block = block.for_module(self.source) if block is not None else None  # -s's DEVICE_ID
        self._tree = tree  # the file's stdlib ast, when the caller has parsed it already
        self._alternatives: Optional[Set[int]] = None  # see _rank_alternatives
        self._path = path
        self._kept = {(k.line, k.key) for k in kept}  # what the rules keep as it is
        self._kept_calls: Set[int] = set()  # calls left as they are, arguments included
        self._literals_seen: Dict[Tuple[int, str], int] = {}  # string literals met, per line and text
        self.scopes = ScopeStack()
        self.changes: List[Change] = []
        self._facts: Optional[FileFacts] = None
        self._chain_edits: Dict[int, cst.BaseExpression] = {}
        self._callees: Set[int] = set()
        self._prose_depth = 0
        # keys that name the variable they map (torchtune's DictConfig({"cpu": cpu, "cuda": cuda})):
        # a record of options, no device
        self._option_keys: Set[int] = set()
        self._pattern_literals: Set[int] = set()  # literals of match-case patterns: no name may go there
        self._compared_literals: Dict[int, Set[str]] = {}  # compared literal -> the calls it is compared with
        self._compared_names: Set[int] = set()  # the dotted names compared (NameRenameRule compared_name)
        self._searched_literals: Set[int] = set()  # literals searched for: the left of ``in``
        self._key_literals: Set[int] = set()  # keys of dict displays: looked up, so compared
        self._prefix_literals: Set[int] = set()  # arguments of str.startswith/endswith: compared
        self._unindexed_args: List[Optional[List[str]]] = []  # per argument: map_location's bound names
        self._unindexed_keywords = frozenset().union(*(e.unindexed_in for e in index.string_names.values()))
        self.kept_here: List[Kept] = []  # what this pass keeps (besides the pre-pass's ``kept``)
        self._definition_depth = 0  # inside def/class
        self._functions: List[Tuple[str, Optional[str]]] = []  # enclosing defs: (name, first parameter)
        self._process_targets: Optional[FrozenSet[str]] = None  # functions the file starts processes with
        self._class_methods: List[Set[str]] = []
        self._lines: List[cst.SimpleStatementLine] = []
        self._lines_after: Dict[int, List[cst.SimpleStatementLine]] = {}
        self._import_positions: Dict[int, int] = {}  # line -> its statement the inserts follow
        self._pending_inserts = [
            insertion for insertion in index.insert_imports if import_missing(self.source, insertion, tree)
        ]
        # The lines of the imports each import goes after, as the ast says (gpu2npu.rewrite.imports,
        # which the text path follows too): one at module level, else one in each function.
        self._insert_lines: Dict[str, Set[int]] = {
            i.module: {s.lineno for s in import_places(tree, i.after_module)}
            for i in (self._pending_inserts if tree is not None else ())
        }
        # The line of each insertion's module-level anchor: a change the module makes before it
        # (a notebook cell calling .npu() above the cell importing torch) takes the import earlier.
        self._anchor_lines: Dict[str, int] = {
            i.module: statement.lineno
            for i in (self._pending_inserts if tree is not None else ())
            for statement in [first_module_level_import(tree, i.after_module)]
            if statement is not None
        }
        self._early_inserts: Dict[int, Tuple[int, list]] = {}  # statement -> (its line, insertions)
        self._top_line = 0  # first line of the module-level statement being visited
        self._class_names: List[str] = []
        self._inserted_modules: Set[str] = set()
        self._star_bound = False  # a star import of a project module bound names here
        self._renamed_members = (
            False  # renamed to a method or attribute torch_npu registers (.npu(), .is_npu)
        )
        self._absolute_roots: Set[str] = set()  # root modules of absolute names we wrote
        self._newlines = 0  # newlines seen so far: the current line is this + 1
        self._call_lines: List[int] = []  # first line of each call being visited
        self.original_call: Optional[cst.Call] = None  # the call a call rule edits, as the source has it
        self._statement_line = 0  # first line of the import statement being handled
        self._bound: Dict[str, str] = {}  # names of BindNamesRule this module uses -> as spelled here
        self._binding_lines = bindings.binding_lines(index.bindings, self.source)  # written by gpu2npu
        self._skeleton = skeleton
        # this module's classes that keep a helper's constructor -> the helper (facts.py)
        self._subclasses = (
            subclasses
            if subclasses is not None
            else file_constructor_subclasses(
                self.source, tree, index.reexported_edits, self.project.reexports
            )
        )
        self._skipper = statement_skipper(self.source, tree, self._triggers()) if not skeleton else None
        self._skipped: Optional[cst.CSTNode] = None  # the statement left unvisited
        self._droppable: List[Droppable] = []  # imports to take out if the rewrite leaves them unused
        # from-imports of names that move to a bound name (DEVICE_MODULE.empty_cache): their calls
        # move, the import goes once nothing reads the name, and is reported where something does
        self._bound_moves: List[Droppable] = []
        self._source_lines: Optional[List[str]] = None  # split when a rewrite first needs a line
        self._statement_depth = 0  # statements being visited around the current node
        self._top_statement: Optional[cst.CSTNode] = None  # the module-level one among them
        self._first_user: Optional[cst.CSTNode] = None  # the first module-level statement using a bound name
        self._first_user_updated = None  # ... as the pass left it

    # -- statement lines no rule can touch are not walked (gpu2npu.rewrite.skipping) -----------

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._skipper is not None and isinstance(node, STATEMENTS):
            start = self._newlines + 1 + len(node.leading_lines)
            end = self._skipper.last_line(node, start)
            if end is not None:
                self._newlines = end  # its leading lines, its lines and the newline ending it
                self._skipped = node
                return False
        if isinstance(node, STATEMENTS):
            if self._statement_depth == 0:
                self._top_statement = node
                self._top_line = self._newlines + 1 + len(getattr(node, "leading_lines", ()))
            self._statement_depth += 1
        return super().on_visit(node)

    def on_leave(self, original_node, updated_node):
        if original_node is self._skipped:
            self._skipped = None
            return updated_node
        result = super().on_leave(original_node, updated_node)
        if isinstance(original_node, STATEMENTS):
            self._statement_depth -= 1
            if self._statement_depth == 0:
                self._top_statement = None
                if original_node is self._first_user:
                    self._first_user_updated = result
                result = self._with_early_inserts(original_node, result)
        return result

    def _with_early_inserts(self, original_node, result):
        """``result`` preceded by the imports a change in it needs before their anchor."""
        line, early = self._early_inserts.pop(id(original_node), (0, []))
        early = [i for i in early if i in self._pending_inserts]
        if not early:
            return result
        for insertion in early:
            self._pending_inserts.remove(insertion)
            self._inserted_modules.add(insertion.module)
            why = f"the module uses the NPU before it imports {insertion.after_module}"
            message = f"insert import {insertion.module} ({why})"
            self.changes.append(Change(line, line, INSERT, message, insertion.rule_id))
        if isinstance(result, cst.RemovalSentinel):
            nodes = []
        elif isinstance(result, cst.FlattenSentinel):
            nodes = list(result.nodes)
        else:
            nodes = [result]
        return cst.FlattenSentinel([*(import_line(i.module) for i in early), *nodes])

    # -- services for the kind modules -------------------------------------------------------

    @property
    def facts(self) -> FileFacts:
        if self._facts is None:
            self._facts = FileFacts(self.source, self._tree, self.project.module_imported(self._path))
        return self._facts

    @property
    def is_entry_script(self) -> bool:
        """Whether this file is an entry script of the project (the distributed mode's main one)."""
        return self._path in self.project.entries

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def record(
        self,
        operation: str,
        message: str,
        rule_id: str,
        start: Optional[int] = None,
        end: Optional[int] = None,
        resolves: tuple = (),
    ) -> None:
        """Record a change; by default at the call being rewritten (for the call kinds)."""
        if start is None:
            start, end = self.line(), self._newlines + 1
        end = end if end is not None else start
        self.changes.append(Change(start, end, operation, message, rule_id, resolves=resolves))

    def _triggers(self):
        """The index's trigger words, with the names of project modules' re-exports and of this
        module's constructor subclasses (their calls take the helper's edits)."""
        triggers = self.index.statement_triggers
        if self.project.reexports:
            triggers = self.project.statement_triggers(self.source.encode("utf-8", "surrogatepass"), triggers)
        return with_names(triggers, self._subclasses)

    def _note_npu_use(self, line: int) -> None:
        """A rewrite wrote an NPU name (``.npu()``, ``'npu'``): where the module runs it before the
        import an insertion follows, the insertion goes before the statement holding it. torch
        before 2.5 does not load torch_npu by itself, so ``.npu()`` in a notebook cell above the
        one importing torch would fail (an environment variable renamed above ``import torch``
        needs nothing, and must stay above it)."""
        top = self._top_statement
        if self._definition_depth or top is None or id(top) in self._early_inserts:
            return
        early = [i for i in self._pending_inserts if line < self._anchor_lines.get(i.module, 0)]
        if early:
            self._early_inserts[id(top)] = (self._top_line, early)

    def keep(self, name: str, rule_id: str, works: bool = True, tip: str = "") -> None:
        """Report the call being visited as kept as it is (by default: it works), with the rule's tip
        or ``tip``."""
        line = self.line()
        self.kept_here.append(Kept(line, name, self._newlines + 1, name, rule_id, works=works, tip=tip))

    def indentation(self) -> str:
        """The leading whitespace of the first line of the call being rewritten."""
        text = self.line_text()
        return text[: len(text) - len(text.lstrip(" \t"))]

    def line_text(self) -> str:
        """The source of the first line of the call being rewritten (``val_loader = DataLoader(``)."""
        if self._source_lines is None:
            self._source_lines = self.source.splitlines()
        return self._source_lines[self.line() - 1] if self.line() >= 1 else ""

    def line(self) -> int:
        """First line of the call being rewritten."""
        return self._call_lines[-1]

    def bound_name(self, name: str) -> str:
        """How this module spells a name of BindNamesRule; using it binds it after the imports."""
        if self._first_user is None and self._top_statement is not None:
            self._first_user = self._top_statement  # the bindings must come before it
        spelled = self._bound.get(name)
        if spelled is None:
            binding = self.index.bindings[name]
            bound_here = binding.statement in self.source  # a module gpu2npu made portable already
            spelled = self._bound[name] = name if bound_here else bindings.free_name(name, self.source)
        return spelled

    def defined_by_project(self, func: cst.Attribute, method: str) -> bool:
        return self._defined_by_project(func, method)

    def absolute_name_used(self, root: str) -> None:
        """A rewrite wrote a name starting with the module ``root``: import it where missing."""
        self._absolute_roots.add(root)

    def _skip_lines_of(self, node: cst.CSTNode) -> None:
        """Count the newlines inside a node whose children this pass does not visit."""
        breaks = chain_line_breaks(node)
        self._newlines += breaks if breaks is not None else line_breaks(self.code(node))

    def qualified_name(self, node: cst.BaseExpression) -> Optional[str]:
        """The original qualified name of a dotted reference, through the bindings seen so far."""
        parts = chain_parts(node)
        if not parts:
            return None
        binding = self.scopes.resolve_import(parts[0])
        if binding is None:
            return None
        return ".".join([binding.original] + parts[1:])

    # -- scopes and bindings -----------------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.bind(node.name.value)
        self.scopes.push("function")
        self._bind_parameters(node.params)
        self._definition_depth += 1
        positional = [*node.params.posonly_params, *node.params.params]
        self._functions.append((node.name.value, positional[0].name.value if positional else None))

    def leave_FunctionDef(self, original_node, updated_node):
        self.scopes.pop()
        self._definition_depth -= 1
        self._functions.pop()
        return updated_node

    def process_index(self) -> Optional[str]:
        """The parameter holding the process index where the innermost function is started as a
        process of this file (``mp.spawn(fn=distributed_main, ...)``: ``distributed_main(i, ...)``
        gets ``i``, the worker's card), else None."""
        if not self._functions or self._functions[-1][1] is None:
            return None
        name, first = self._functions[-1]
        return first if name in self._started_functions() else None

    def _started_functions(self) -> FrozenSet[str]:
        """The functions this file starts as processes (mp.spawn(fn), Process(target=fn))."""
        if self._process_targets is None:
            self._process_targets = frozenset(
                m.group(1) or m.group(2) for m in _PROCESS_TARGET.finditer(self.source)
            )
        return self._process_targets

    def spawned_indices(self) -> FrozenSet[str]:
        """The first parameters of the functions this file starts as processes (mmf's
        ``distributed_main(device_id, ...)``): each worker's index, its card."""
        targets = self._started_functions()
        return frozenset(
            match.group(2)
            for match in _DEFINITION.finditer(self.source)
            if match.group(1) in targets and match.group(2) != "self"
        )

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.scopes.push("function")
        self._bind_parameters(node.params)

    def leave_Lambda(self, original_node, updated_node):
        self.scopes.pop()
        return updated_node

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.bind(node.name.value)
        self.scopes.push("class")
        self._definition_depth += 1
        self._class_methods.append(self._methods_of(node))
        self._class_names.append(node.name.value)

    def _methods_of(self, node: cst.ClassDef) -> Set[str]:
        if self._skeleton is not None:  # its methods may be stubs: the skeleton knows them
            known = self._skeleton.class_methods.get(self._newlines + 1 + len(node.leading_lines))
            if known is not None:
                return known
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        return {statement.name.value for statement in body if isinstance(statement, cst.FunctionDef)}

    def leave_ClassDef(self, original_node, updated_node):
        self.scopes.pop()
        self._definition_depth -= 1
        self._class_methods.pop()
        self._class_names.pop()
        return updated_node

    def _enter_comprehension(self, node) -> None:
        self.scopes.push("comprehension")
        clause = node.for_in
        while clause is not None:
            self._bind_target(clause.target)
            clause = clause.inner_for_in

    def _leave_comprehension(self, original_node, updated_node):
        self.scopes.pop()
        return updated_node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _enter_comprehension
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _leave_comprehension

    def _bind_parameters(self, params: cst.Parameters) -> None:
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            self.scopes.bind(param.name.value)
        for extra in (params.star_arg, params.star_kwarg):
            if isinstance(extra, cst.Param):
                self.scopes.bind(extra.name.value)

    def _bind_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.scopes.bind(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value)

    def leave_Assign(self, original_node, updated_node):
        for target in original_node.targets:
            self._bind_target(target.target)
        return updated_node

    def leave_AnnAssign(self, original_node, updated_node):
        self._bind_target(original_node.target)
        return updated_node

    def leave_AugAssign(self, original_node, updated_node):
        self._bind_target(original_node.target)
        return updated_node

    def leave_NamedExpr(self, original_node, updated_node):
        self._bind_target(original_node.target)
        return updated_node

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind_target(node.name.name)
        self.scopes.enter_fallback()

    def leave_ExceptHandler(self, original_node, updated_node):
        self.scopes.leave_fallback()
        return updated_node

    def visit_If_orelse(self, node: cst.If) -> None:
        self.scopes.enter_fallback()

    def leave_If_orelse(self, node: cst.If) -> None:
        self.scopes.leave_fallback()

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.scopes.declare_global(item.name.value)

    # -- statement lines: prose, import insertion, split imports -------------------------------

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._lines.append(node)
        if _is_prose(node):
            self._prose_depth += 1
        if self._pending_inserts:
            self._place_inserts(node)

    def leave_SimpleStatementLine(self, original_node, updated_node):
        self._lines.pop()
        if _is_prose(original_node):
            self._prose_depth -= 1
        if not updated_node.body:
            updated_node = _without_body(updated_node)
        extra = self._lines_after.pop(id(original_node), [])
        at = self._import_positions.pop(id(original_node), None)
        if not extra:
            return updated_node
        if isinstance(updated_node, cst.RemovalSentinel):
            return cst.FlattenSentinel(extra)
        if (
            at is not None
            and at < len(updated_node.body) - 1
            and len(updated_node.body) == len(original_node.body)
        ):
            return _joined_after(updated_node, at, extra)  # import torch; x = torch.ones(1).npu()
        return cst.FlattenSentinel([updated_node, *extra])

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        if self._definition_depth == 0 and self._pending_inserts:
            self._place_inserts(node)

    def leave_SimpleStatementSuite(self, original_node, updated_node):
        extra = self._lines_after.pop(id(original_node), [])
        if not extra:
            return updated_node
        statements = [line.body[0] for line in extra]
        body = [
            *updated_node.body[:-1],
            updated_node.body[-1].with_changes(
                semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" "))
            ),
            *statements,
        ]
        return updated_node.with_changes(body=body)

    def leave_IndentedBlock(self, original_node, updated_node):
        if not updated_node.body:  # every statement of the block was a removed import
            return updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated_node

    def _place_inserts(self, line) -> None:
        """After the import the ast chose; without an ast, the first one at module level."""
        first = self._newlines + 1 + len(getattr(line, "leading_lines", ()))
        for insertion in list(self._pending_inserts):
            chosen = self._insert_lines.get(insertion.module)
            here = first in chosen if chosen is not None else self._definition_depth == 0
            if not here or not any(imports_module(s, insertion.after_module) for s in line.body):
                continue
            if self._definition_depth == 0:  # the module's own import: one is enough
                self._pending_inserts.remove(insertion)
                self._inserted_modules.add(insertion.module)
            self._lines_after.setdefault(id(line), []).append(import_line(insertion.module))
            at = next(n for n, s in enumerate(line.body) if imports_module(s, insertion.after_module))
            self._import_positions.setdefault(id(line), at)
            self.record(INSERT, f"insert import {insertion.module}", insertion.rule_id, first, first)

    def leave_Module(self, original_node, updated_node):
        updated_node = self._without_unused_imports(updated_node)
        missing = sorted(
            root
            for root in self._absolute_roots
            if root not in self._inserted_modules and not _imported_at_module_level(self.scopes, root)
        )
        anchorless = [i for i in self._imports_without_their_anchor() if i.module not in missing]
        body = list(updated_node.body)
        position = _after_docstring_and_future(body)
        for offset, root in enumerate(missing):
            body.insert(position + offset, import_line(root))
            rule_id = next((i.rule_id for i in self.index.insert_imports if i.module == root), "")
            self.changes.append(
                Change(1, 1, INSERT, f"insert import {root} (a rewritten name needs it)", rule_id)
            )
        for insertion in anchorless:
            body.insert(position + len(missing), import_line(insertion.module))
            why = f"the module uses the NPU and imports no {insertion.after_module}"
            message = f"insert import {insertion.module} ({why})"
            self.changes.append(Change(1, 1, INSERT, message, insertion.rule_id))
        missing += [insertion.module for insertion in anchorless]
        if self._bound:
            body = self._with_bindings(body, position + len(missing), len(missing))
        if not missing and not self._bound:
            return updated_node
        return updated_node.with_changes(body=body)

    def _imports_without_their_anchor(self) -> List:
        """The insertions whose anchor the module never imports, in a module calling a renamed
        method or attribute: ``.cuda()`` on a model transformers built, torch imported nowhere
        here; or any change where torch came through a star import. torch_npu must be imported
        before ``.npu()`` runs (torch before 2.5 does not load it by itself, and nothing else may
        import it)."""
        if not self._pending_inserts or not (self._renamed_members or (self._star_bound and self.changes)):
            return []
        return [
            insertion
            for insertion in self._pending_inserts
            if not already_imported(self.source, insertion.after_module, self._tree)
        ]

    def _with_bindings(self, body, start: int, added: int):
        """The statements binding the names the rewrites used, after the leading imports."""
        needed = bindings.needed_bindings(self.index.bindings, list(self._bound))
        spelled = {binding.name: self.bound_name(binding.name) for binding in needed}
        new = [b for b in needed if b.statement not in self.source]  # not bound here already
        if not new:
            return body
        statements = bindings.binding_statements(new, spelled)
        limit = self._first_user_position(body, start)
        body, position, into = bindings.insert_bindings(body, statements, start, limit)
        line = bindings.lines_before(self.module, self.module.body[: position - added]) + into + 1
        names = ", ".join(spelled[b.name] for b in new)
        self.changes.append(Change(line, line, INSERT, f"bind {names} after the imports", new[0].rule_id))
        return body

    def _first_user_position(self, body, start: int) -> Optional[int]:
        """Where the first module-level statement using a bound name is in ``body``: the
        bindings go before it (a notebook's first cell using the device, before a later cell's
        ``import torch``); None where it is not found."""
        user = self._first_user_updated
        if isinstance(user, cst.FlattenSentinel):
            user = user.nodes[0] if user.nodes else None
        if not isinstance(user, cst.CSTNode):
            return None
        return next(
            (n for n in range(start, len(body)) if type(body[n]) is type(user) and body[n].deep_equals(user)),
            None,
        )

    # -- imports -------------------------------------------------------------------------------

    def _note_droppable(self, bound: str, qualified: str, key, statement) -> None:
        """An import of a function whose rule takes the import out once the rewrite leaves it
        unused; ``import package`` counts for the functions under it."""
        rules = self.index.droppable_imports
        rule_id = rules.get(qualified) or next(
            (r for f, r in rules.items() if f.startswith(qualified + ".")), None
        )
        if rule_id is not None:
            self._droppable.append(Droppable(bound, key, statement, self._statement_line, rule_id, qualified))

    def _without_unused_imports(self, module: cst.Module) -> cst.Module:
        applied = {change.rule for change in self.changes}
        candidates = [d for d in self._droppable + self._bound_moves if d.rule_id in applied]
        if not candidates and not self._bound_moves:
            return module
        used = names_read(module)
        self._report_bound_moves_read(used)
        dropped = [d for d in candidates if d.bound not in used]
        if not dropped:
            return module
        keys = {d.key for d in dropped}
        for d in dropped:
            # no import of the package is left on its line: the reports' rows there go too
            whole = not any(package(key) == package(d.key) for key in d.statement - keys)
            message = f"import {d.qualified} has been removed (the rewritten calls no longer use it)"
            self.changes.append(
                Change(d.line, d.line, DELETE, message, d.rule_id, resolves=(d.qualified,) if whole else ())
            )
        return without_imports(module, keys) if keys else module

    def _report_bound_moves_read(self, used: Set[str]) -> None:
        """A name imported from torch.cuda that moves to a bound name, still read after its calls
        moved (passed as a value): the import stays, so that read is still CUDA's."""
        for d in self._bound_moves:
            if d.bound in used:
                new = self.index.resolve_name(d.qualified).new
                tip = (
                    f"imported by name, so what is not a call of it stays {d.qualified}: write {new} "
                    f"there ({new.split('.')[0]} is bound by gpu2npu where a rewrite uses it), then drop "
                    "the import"
                )
                self.kept_here.append(Kept(d.line, d.qualified, d.line, d.qualified, d.rule_id, tip=tip))

    def _note_bound_move(self, bound: str, qualified: str, key, statement) -> None:
        if qualified in self.index.calls:
            return  # a call rule rewrites its calls (and leaves the import as it is)
        decision = self.index.resolve_name(qualified)
        if (
            decision is not None
            and decision.new is not None
            and decision.new.split(".")[0] in self.index.bindings
        ):
            self._bound_moves.append(
                Droppable(bound, key, statement, self._statement_line, decision.rule_id, qualified)
            )

    def visit_Import(self, node: cst.Import) -> bool:
        self._statement_line = self._newlines + 1
        self._skip_lines_of(node)
        return False  # module names in imports are handled as a whole in leave_Import

    def leave_Import(self, original_node, updated_node):
        kept = []
        statement = frozenset(alias_key(None, a) for a in updated_node.names)
        for alias in updated_node.names:
            name = dotted_name(alias.name)
            removal = self.index.removal_for(name)
            if removal is not None and not (removal.only_unused and self._still_used(alias, name)):
                self._record_statement(DELETE, f"import {name} has been removed", removal.rule_id)
                continue
            kept.append(self._rewrite_import_alias(alias, name, statement))
        if not kept:
            return cst.RemovalSentinel.REMOVE
        if len(kept) != len(updated_node.names):
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(names=kept)

    def _still_used(self, alias: cst.ImportAlias, name: str) -> bool:
        """Whether the file uses the name the import binds (then deleting it breaks the uses)."""
        bound, _ = bound_by_import(name, _asname(alias))
        return bound in self.facts.used_names

    def _rewrite_import_alias(
        self, alias: cst.ImportAlias, name: str, statement=frozenset()
    ) -> cst.ImportAlias:
        asname = alias.asname.name.value if alias.asname is not None else None
        bound, qualified = bound_by_import(name, asname)
        if self.index.droppable_imports:
            self._note_droppable(bound, qualified, alias_key(None, alias), statement)
        # `import torch.cuda` binds `torch`, which is not renamed
        new = self._renamed(qualified) if asname else None
        self.scopes.bind(bound, ImportBinding(qualified, new or qualified))
        if new is None:
            return alias
        self._record_statement(MODIFY, f"change import {name} to {new}", self._rule_of(name))
        return alias.with_changes(name=dotted_expression(new))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self._statement_line = self._newlines + 1
        self._skip_lines_of(node)
        return False

    def leave_ImportFrom(self, original_node, updated_node):
        if isinstance(updated_node.names, cst.ImportStar):
            self._bind_star_names(updated_node)
        if updated_node.relative or updated_node.module is None:
            self._bind_relative_names(updated_node)
            return updated_node
        module = dotted_name(updated_node.module)
        if isinstance(updated_node.names, cst.ImportStar):
            new_module = self._renamed(module)
            if new_module is None:
                return updated_node
            self._record_statement(
                MODIFY, f"change import {module}.* to {new_module}.*", self._rule_of(module)
            )
            return updated_node.with_changes(module=dotted_expression(new_module))
        groups, changed = self._group_from_names(module, updated_node.names)
        return self._emit_from_groups(updated_node, groups) if changed else updated_node

    def _group_from_names(self, module: str, aliases):
        """Aliases of a from-import grouped by the module each comes from after renaming, and
        whether any alias changed."""
        groups: "OrderedDict[str, List[cst.ImportAlias]]" = OrderedDict()
        changed = False
        statement = frozenset(alias_key(module, alias) for alias in aliases)
        for alias in aliases:
            name = dotted_name(alias.name)
            bound, qualified = bound_by_from_import(module, name, _asname(alias))
            if self.index.droppable_imports:
                self._note_droppable(bound, qualified, alias_key(module, alias), statement)
            new = self._renamed(qualified)
            self.scopes.bind(bound, ImportBinding(qualified, new or qualified))
            if new is None:
                if self.index.bindings:
                    self._note_bound_move(bound, qualified, alias_key(module, alias), statement)
                groups.setdefault(module, []).append(alias)
                continue
            self._record_statement(MODIFY, f"change import {qualified} to {new}", self._rule_of(qualified))
            changed = True
            new_module, new_name = refs.module_and_name(new)
            asname = (
                alias.asname
                if (alias.asname is not None or new_name == name)
                else cst.AsName(cst.Name(bound))
            )
            groups.setdefault(new_module, []).append(
                alias.with_changes(name=cst.Name(new_name), asname=asname)
            )
        return groups, changed

    def _emit_from_groups(self, node: cst.ImportFrom, groups) -> cst.ImportFrom:
        """One statement per target module: the first in place, the others on lines after it."""
        modules = sorted(groups, key=lambda m: m != dotted_name(node.module))  # the kept module stays first
        first = node.with_changes(module=dotted_expression(modules[0]), names=groups[modules[0]])
        if len(modules) > 1:
            extra = [
                cst.SimpleStatementLine(
                    [cst.ImportFrom(module=dotted_expression(m), names=_clean_commas(groups[m]))]
                )
                for m in modules[1:]
            ]
            self._lines_after.setdefault(id(self._lines[-1]), []).extend(extra)
            first = first.with_changes(lpar=None, rpar=None, names=_clean_commas(groups[modules[0]]))
        return first

    def _bind_star_names(self, node: cst.ImportFrom) -> None:
        """The names a star import of a project module binds (its own imports of torch...)."""
        written = "." * len(node.relative) + (dotted_name(node.module) if node.module is not None else "")
        for name, qualified in self.project.star_bindings.get(self._path, {}).get(written, ()):
            self.scopes.bind(name, ImportBinding(qualified, self._renamed(qualified) or qualified))
            self._star_bound = True

    def _bind_relative_names(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            bound, _ = bound_by_from_import(None, dotted_name(alias.name), _asname(alias))
            self.scopes.bind(bound, LOCAL)

    def _record_statement(self, operation: str, message: str, rule_id: str) -> None:
        self.record(operation, message, rule_id, self._statement_line, self._newlines + 1)

    def _renamed(self, qualified: str) -> Optional[str]:
        """The new qualified name for ``qualified``, or None when it keeps its name."""
        decision = self.index.resolve_name(qualified)
        new = decision.new if decision is not None else None
        if new is not None and new.split(".")[0] in self.index.bindings:
            return None  # a bound name (DEVICE_MODULE) is no module to import from: the uses move
        return None if new == qualified else new

    def _rule_of(self, qualified: str) -> str:
        decision = self.index.resolve_name(qualified)
        return decision.rule_id if decision is not None else ""

    # -- dotted references -----------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> bool:
        self._callees.add(id(node.func))
        self._call_lines.append(self._newlines + 1)
        self._note_prefix_literals(node)
        qualified = self.qualified_name(node.func) if self._kept else None
        if qualified is not None and (self._newlines + 1, qualified) in self._kept:
            # a call kept on CUDA keeps its arguments too (get_device_properties('cuda:0'))
            self._kept_calls.add(id(node))
            self._skip_lines_of(node)
            return False
        return True

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        parts = chain_parts(node)
        if parts is None:
            return True
        binding = self.scopes.resolve_import(parts[0])
        if binding is None:
            return True
        qualified = ".".join([binding.original] + parts[1:])
        if (self._newlines + 1, qualified) in self._kept:
            self._skip_lines_of(node)
            return False
        decision = self.index.resolve_name(qualified)
        if decision is None:
            if binding.current == binding.original:
                self._skip_lines_of(node)
                return False
            target, label, rule_id = qualified, "name", ""
        elif decision.called_only and id(node) not in self._callees:
            self._keep_reference(node, qualified, decision.rule_id, decision.tip)
            return False
        else:
            # No counterpart: keep the original name, spelled so that it survives a renamed import.
            target = decision.new or qualified
            if decision.compared_new and id(node) in self._compared_names:
                target = decision.compared_new
            label = "function" if id(node) in self._callees else decision.label
            rule_id = decision.rule_id
        start = self._newlines + 1
        self._skip_lines_of(node)
        code = refs.render(parts[0], binding.current, target)
        root, dot, rest = code.partition(".")
        if root in self.index.bindings:  # a name bound after the imports (DEVICE_MODULE.synchronize)
            code = self.bound_name(root) + dot + rest
        elif dot and root != parts[0]:
            self._absolute_roots.add(root)
        if code != ".".join(parts):
            self._chain_edits[id(node)] = dotted_expression(code)
            self.record(MODIFY, f"change {label} {qualified} to {target}", rule_id, start, self._newlines + 1)
        return False  # the whole chain is decided here; a shorter prefix must not match again

    def _keep_reference(self, node: cst.Attribute, qualified: str, rule_id: str, tip: str) -> None:
        """A name that moves only where it is called, referenced otherwise: kept, and reported."""
        start = self._newlines + 1
        self._skip_lines_of(node)
        self.kept_here.append(Kept(start, qualified, self._newlines + 1, qualified, rule_id, tip=tip))

    def leave_Attribute(self, original_node, updated_node):
        edited = self._chain_edits.pop(id(original_node), None)
        if edited is not None:
            return edited
        rename = self.index.attributes.get(updated_node.attr.value)
        if rename is None or id(original_node) in self._callees or self._assigned_here(original_node):
            return updated_node
        line = self._newlines + 1
        if (line, ANY_RECEIVER + updated_node.attr.value) in self._kept:
            return updated_node
        if "npu" in rename.new:
            self._renamed_members = True
            self._note_npu_use(line)
        self.record(
            MODIFY,
            f'replace attribute "{updated_node.attr.value}" with "{rename.new}"',
            rename.rule_id,
            line,
            line,
        )
        return updated_node.with_changes(attr=cst.Name(rename.new))

    def _assigned_here(self, node: cst.Attribute) -> bool:
        """Whether the file assigns this attribute itself (timm's ``self.is_cuda = device.type ==
        'cuda'`` beside its own ``self.is_npu``): the project's flag, not torch's, keeps its name."""
        name = dotted_name(node)
        return bool(name) and (name in self.facts.attributes or name in self.facts.opaque_attributes)

    # -- calls -----------------------------------------------------------------------------------

    def leave_Call(self, original_node, updated_node):
        if id(original_node) in self._kept_calls:
            self._call_lines.pop()
            return updated_node
        func = original_node.func
        if isinstance(func, cst.Name) and self._bound_moves:
            updated_node = self._call_of_bound_move(func.value, updated_node)
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        if method is not None and method in self.index.methods:
            updated_node = self._rename_method(original_node, updated_node, method)
        edits = []
        qualified = self.qualified_name(func)
        if qualified is not None:
            edits += self.index.calls.get(qualified, []) or self._reexported_edits(qualified)
        else:
            edits += self._subclass_edits(func)
        if method is not None:
            edits += self.index.calls.get("." + method, [])
        self.original_call = original_node
        for edit in edits:
            if not isinstance(updated_node, cst.Call):
                break  # an edit made it another expression (a call's result indexed)
            updated_node = edit.edit(edit.rule, updated_node, self)
        self._call_lines.pop()
        return updated_node

    def _reexported_edits(self, qualified: str) -> list:
        """The keyword edits of the library helper a project module re-exports as ``qualified``."""
        helper = self.project.reexports.get(qualified)
        if helper is None:
            return []
        return self.index.reexported_edits.get(helper, [])

    def _subclass_edits(self, func: cst.BaseExpression) -> list:
        """The keyword edits of the helper that a class of this module builds as, where it keeps
        the helper's constructor (fairseq2's ``_InternalGradScaler(...)``, defined below its
        use); other modules' calls of it come through the re-exports."""
        helper = self._subclasses.get(func.value, "") if isinstance(func, cst.Name) else ""
        return self.index.reexported_edits.get(helper, []) if helper else []

    def _call_of_bound_move(self, name: str, updated_node: cst.Call) -> cst.Call:
        """``empty_cache()`` imported from torch.cuda -> ``DEVICE_MODULE.empty_cache()``."""
        binding = self.scopes.resolve_import(name)
        if binding is None or not any(
            d.bound == name and d.qualified == binding.original for d in self._bound_moves
        ):
            return updated_node
        decision = self.index.resolve_name(binding.original)
        root, _, rest = decision.new.partition(".")
        self.record(MODIFY, f"change function {binding.original} to {decision.new}", decision.rule_id)
        return updated_node.with_changes(func=dotted_expression(f"{self.bound_name(root)}.{rest}"))

    def _rename_method(self, original_node: cst.Call, updated_node: cst.Call, method: str) -> cst.Call:
        if not isinstance(updated_node.func, cst.Attribute) or self._defined_by_project(
            original_node.func, method
        ):
            return updated_node
        rename = self.index.methods[method]
        if "npu" in rename.new:
            self._renamed_members = True
            self._note_npu_use(self.line())
        self.record(MODIFY, f"change function {method} to {rename.new}", rename.rule_id)
        return updated_node.with_changes(func=updated_node.func.with_changes(attr=cst.Name(rename.new)))

    def _defined_by_project(self, func: cst.Attribute, method: str) -> bool:
        """Whether ``receiver.method`` is the project's own method, not torch's: called on
        ``self`` in a class that defines or inherits it, on such a class, or on an object
        built from one."""
        receiver = func.value
        if isinstance(receiver, cst.Name) and receiver.value == "self" and self._class_methods:
            if method in self._class_methods[-1]:
                return True
        classes = self._classes_defining(method)
        if not classes:
            return False
        if isinstance(receiver, cst.Call):
            receiver = receiver.func  # Pipeline().cuda()
        name = dotted_name(receiver)
        if not name:
            return False
        if name == "self":
            return bool(self._class_names) and self._class_names[-1] in classes
        if name.rsplit(".", 1)[-1] in classes:
            return True  # Pipeline.cuda(p), or the class object itself
        return bool(self.facts.instance_classes(name, self.line()) & classes)

    def _classes_defining(self, method: str) -> Set[str]:
        classes = set(self.project.method_classes.get(method, ()))
        if f"def {method}(" in self.source:
            classes |= self.facts.classes_defining(method)
        return classes

    # -- strings -----------------------------------------------------------------------------------

    def visit_Comparison(self, node: cst.Comparison) -> None:
        """Note the literals this comparison compares, with the calls they are compared with
        (ReplaceStringRule ``compared_with``)."""
        operands = [node.left] + [target.comparator for target in node.comparisons]
        calls = {self.qualified_name(o.func) for o in operands if isinstance(o, cst.Call)} - {None}
        for operand in operands:
            items = [e.value for e in operand.elements] if isinstance(operand, COLLECTIONS) else [operand]
            for item in items:
                if isinstance(item, STRING_NODES):
                    self._compared_literals[id(item)] = calls
                elif isinstance(item, cst.Attribute):
                    self._compared_names.add(id(item))
        for searched, target in zip(operands, node.comparisons):
            if isinstance(searched, cst.SimpleString) and isinstance(target.operator, (cst.In, cst.NotIn)):
                self._searched_literals.add(id(searched))

    def visit_MatchValue(self, node: cst.MatchValue) -> None:
        """``case "cuda":``: a bare name in a pattern captures every value (Python refuses one
        before other cases), so the literal cannot become a bound name (Megatron-LM's
        batch_invariant_kernels.py in the portable tree)."""
        if isinstance(node.value, STRING_NODES):
            self._pattern_literals.add(id(node.value))

    def visit_Dict(self, node: cst.Dict) -> None:
        """Note the literal keys of a table: a lookup compares them, so a device's key names the
        accelerator as a compared string does (portable: {'cpu': a, 'cuda': b} must not get two
        'cpu' keys on a machine without one)."""
        for element in node.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, STRING_NODES):
                self._key_literals.add(id(element.key))
                if _names_its_value(element):
                    self._option_keys.add(id(element.key))

    def _note_prefix_literals(self, node: cst.Call) -> None:
        """Note the literals of ``device.startswith('cuda')`` (or a tuple of them): they ask whether
        a value is the accelerator, as ``==`` does, so portable's answer must stay false without one."""
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in PREFIX_METHODS and node.args):
            return
        first = node.args[0].value
        items = [e.value for e in first.elements] if isinstance(first, cst.Tuple) else [first]
        literals = {id(item) for item in items if isinstance(item, STRING_NODES)}
        self._prefix_literals |= literals
        self._searched_literals |= literals  # spelled str(ACCELERATOR), as 'cuda' in device

    def _compared(self, node: cst.CSTNode) -> bool:
        return any(
            id(node) in seen for seen in (self._compared_literals, self._key_literals, self._prefix_literals)
        )

    def leave_SimpleString(self, original_node, updated_node):
        end = self._newlines + 1
        start = end - line_breaks(original_node.value)
        if (
            self._is_kept_literal(original_node, start)
            or self._prose_depth
            or id(original_node) in self._option_keys
        ):
            return updated_node
        if id(original_node) in self._pattern_literals:
            return self._pattern_literal(updated_node, start, end)
        if self.index.string_names and start not in self._binding_lines:
            compared = self._compared(original_node)
            named = named_simple_string(original_node, self.index.string_names, compared, self.bound_name)
            if named is not None and id(original_node) in self._searched_literals:
                named = _searched_for(*named)
            if named is not None:
                return self._apply_named(original_node.value, named, start, end)
        with_index = self._device_id_string(original_node, start, end)
        if with_index is not None:
            return with_index
        result = rewrite_simple_string(updated_node, self.index.strings)
        allowed = self._where_allowed(result, original_node, start, end)
        return self._apply_string(updated_node, allowed, start, end)

    def _pattern_literal(self, node: cst.SimpleString, start: int, end: int):
        """A literal of a case pattern: rewritten as a literal ('npu'), or kept and reported where
        the rules would bind a name or build an f-string there."""
        result = rewrite_simple_string(node, self.index.strings)
        if result is not None:
            return self._apply_string(node, self._where_allowed(result, node, start, end), start, end)
        value = str(node.evaluated_value)
        if self.index.string_names and names_literal(self.index.string_names, value):
            rule_id = self.index.string_names[value.partition(":")[0]].rule_id
            self.kept_here.append(Kept(start, STRING + value, end, repr(value), rule_id, True, PATTERN_TIP))
        return node

    def _device_id_string(self, node: cst.SimpleString, start: int, end: int):
        """``'cuda:0'`` -> ``f'npu:{DEVICE_ID}'`` (DeviceIdStringRule), or None."""
        block = self.device_block
        if block is None or not self.index.indexed_device_strings or "b" in node.prefix.lower():
            return None
        device_type, _, number = str(node.evaluated_value).partition(":")
        rule_id = self.index.indexed_device_strings.get(device_type)
        if rule_id is None or not number.isdigit() or not number.isascii():
            return None
        tips = self.index.device_string_tips.get(rule_id, {})
        if names_several_cards(self.source):
            kept_as = ""  # several cards by number (model parallel): they keep their numbers
        elif self.facts.narrows_visible_devices:
            kept_as = "mask"  # the process numbers the cards it sees from 0
        elif start in self._rank_alternatives():
            kept_as = "choice"
        else:
            kept_as = None
        if kept_as is not None:
            value = node.evaluated_value
            tip = tips.get(kept_as, "")
            self.kept_here.append(Kept(start, STRING + value, end, repr(value), rule_id, works=True, tip=tip))
            return None
        message = f'replace string "{node.evaluated_value}" with {block.device_string}'
        self.record(MODIFY, message, rule_id, start, end)
        return cst.parse_expression(block.device_string)

    def _rank_alternatives(self) -> Set[int]:
        """Lines of branches that name their card beside a branch taking a rank's (the facts' tree)."""
        if self._alternatives is None:
            tree = self.facts.tree
            self._alternatives = rank_alternatives(tree) if tree is not None else set()
        return self._alternatives

    def _where_allowed(self, result, original_node, start: int, end: int):
        """The rewrite, unless its rule rewrites only literals compared with certain calls (and,
        where it says so, uncompared ones) and this one is not: then it stays, reported where it is
        compared with something else."""
        if result is None or not result[1].compared_with:
            return result
        target = result[1]
        calls = self._compared_literals.get(id(original_node))
        if calls is None:
            return result if target.uncompared else None
        if calls & target.compared_with:
            return result
        text = repr(target.old)
        self.kept_here.append(Kept(start, f"{STRING}{target.old}#0", end, text, target.rule_id, works=True))
        return None

    def _is_kept_literal(self, node: cst.SimpleString, line: int) -> bool:
        """Whether a rule keeps this literal; counts the literals of equal text on the line as
        gpu2npu.rewrite.compared numbers them."""
        if not self._kept or "b" in node.prefix.lower():
            return False
        text = node.evaluated_value
        number = self._literals_seen.get((line, text), 0)
        self._literals_seen[(line, text)] = number + 1
        return (line, f"{STRING}{text}#{number}") in self._kept

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._call_lines.append(self._newlines + 1)  # f-strings nest like calls

    def leave_FormattedString(self, original_node, updated_node):
        start = self._call_lines.pop()
        if self._prose_depth:
            return updated_node
        if self.index.string_names:
            compared = self._compared(original_node)
            named = named_formatted_string(updated_node, self.index.string_names, compared, self.bound_name)
            if named is not None:
                return self._apply_named(self.code(original_node), named, start, self._newlines + 1)
        result = rewrite_formatted_string(updated_node, self.index.strings)
        allowed = self._where_allowed(result, original_node, start, self._newlines + 1)
        return self._apply_string(updated_node, allowed, start, self._newlines + 1)

    def visit_Arg(self, node: cst.Arg) -> None:
        keyword = node.keyword.value if node.keyword is not None else None
        unindexed = keyword in self._unindexed_keywords and not _chooses_the_cpu(node.value)
        self._unindexed_args.append([] if unindexed else None)

    def leave_Arg(self, original_node, updated_node):
        """``map_location=f'{DEVICE_TYPE}:0'`` is 'cpu:0' without an accelerator, which torch.load
        refuses: such a keyword gets 'cpu' there."""
        named = self._unindexed_args.pop()
        if not named:
            return updated_node
        value = updated_node.value
        if isinstance(value, (cst.IfExp, cst.Lambda)) and not value.lpar:
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        test = cst.Name(self.bound_name(named[0]))
        fallback = cst.IfExp(test=test, body=value, orelse=cst.SimpleString('"cpu"'))
        return updated_node.with_changes(value=fallback)

    def _apply_named(self, old: str, named, start: int, end: int):
        new_node, target = named
        message = f"replace string {old} with {self.module.code_for_node(new_node)}"
        frame = next((f for f in reversed(self._unindexed_args) if f is not None), None)
        if isinstance(new_node, cst.FormattedString) and frame is not None:
            frame.append(target.compared_name)
            message += ', or "cpu" without an accelerator (torch.load refuses an indexed cpu)'
        self.record(MODIFY, message, target.rule_id, start, end)
        return new_node

    def _apply_string(self, updated_node, result, start: int, end: int):
        if result is None:
            return updated_node
        new_node, target = result
        if NPU_NAMES.search(self.module.code_for_node(new_node)):
            self._note_npu_use(start)
        self.record(MODIFY, target.message, target.rule_id, start, end)
        return new_node


def _chooses_the_cpu(value: cst.BaseExpression) -> bool:
    """``'cuda:0' if available else 'cpu'``: the program picks the CPU itself."""
    orelse = value.orelse if isinstance(value, cst.IfExp) else None
    return isinstance(orelse, cst.SimpleString) and orelse.evaluated_value == "cpu"


def _searched_for(name: cst.BaseExpression, entry):
    """A bound name searched for with ``in`` (``'cuda' in device``) or a prefix
    (``device.startswith('cuda')``): spelled ``str(NAME)``, since the name is None on a machine
    without an accelerator and ``None in 'cpu'`` raises, while no device string holds 'None'."""
    if isinstance(name, cst.Name):
        return cst.Call(cst.Name("str"), [cst.Arg(name)]), entry
    return name, entry


def _asname(alias: cst.ImportAlias) -> Optional[str]:
    return alias.asname.name.value if alias.asname is not None else None


def _is_prose(line: cst.SimpleStatementLine) -> bool:
    """A statement that is only a string: a docstring or a comment written as a string."""
    return (
        len(line.body) == 1
        and isinstance(line.body[0], cst.Expr)
        and isinstance(line.body[0].value, STRING_NODES)
    )


def _without_body(line: cst.SimpleStatementLine):
    """A line all of whose statements were removed: drop it, but keep comments written above it."""
    if any(empty.comment is not None for empty in line.leading_lines):
        return line.with_changes(body=[cst.Pass()])
    return cst.RemovalSentinel.REMOVE


def _clean_commas(aliases: List[cst.ImportAlias]) -> List[cst.ImportAlias]:
    """Aliases for a rebuilt one-line import: default separators, no trailing comma."""
    return [alias.with_changes(comma=cst.MaybeSentinel.DEFAULT) for alias in aliases]


def _imported_at_module_level(scopes: ScopeStack, root: str) -> bool:
    binding = scopes.module.names.get(root)
    return isinstance(binding, ImportBinding) and binding.current == root


def _after_docstring_and_future(body) -> int:
    position = 0
    if body and isinstance(body[0], cst.SimpleStatementLine) and _is_prose(body[0]):
        position = 1
    while position < len(body) and _is_future_import(body[position]):
        position += 1
    return position


def _is_future_import(statement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.ImportFrom)
        and dotted_name(statement.body[0].module or cst.Name("_")) == "__future__"
    )


def _joined_after(line: cst.SimpleStatementLine, at: int, extra) -> cst.SimpleStatementLine:
    """The statements of ``extra`` lines put into ``line`` right after its statement ``at``: the
    code after it on the line may need them already."""
    semicolon = cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" "))
    added = [statement.with_changes(semicolon=semicolon) for new in extra for statement in new.body]
    body = list(line.body)
    return line.with_changes(body=body[: at + 1] + added + body[at + 1 :])


def _names_its_value(element: cst.DictElement) -> bool:
    """``"cuda": cuda``: the key is the name of the variable it maps."""
    key = element.key
    return (
        isinstance(key, cst.SimpleString)
        and isinstance(element.value, cst.Name)
        and key.evaluated_value == element.value.value
    )

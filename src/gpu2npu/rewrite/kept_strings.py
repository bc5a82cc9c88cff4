"""Device strings a rule keeps where they are no device of the program, read on the stdlib ast
before the rewrite pass (the pass meets the literals in source order and counts equal ones per
line as gpu2npu.rewrite.compared does):

* the value of an enumeration's member (KeepMemberStringRule): ``class RNGType(Enum): CUDA =
  "cuda"`` beside ``NPU = "npu"``, where a rename would make one member an alias of the other;
* a keyword's string of certain calls (KeepArgumentStringRule): Lightning's
  ``Trainer(accelerator="cuda")``, which has no NPU value;
* a string beside its NPU peer (KeepPeerStringRule): ``device == "cuda"`` where the function tests
  ``device == "npu"`` too, ``choices=["cuda", "npu"]``; and one compared with a project function
  that names the NPU itself (xtuner's ``get_device() == "cuda"``, whose ``get_device`` returns
  ``"npu"`` on the NPU), or with a name bound to its result.
"""

from __future__ import annotations

import ast
from typing import Callable, Collection, Dict, FrozenSet, Iterator, List, Set, Tuple

from gpu2npu.rewrite.changes import STRING, Kept
from gpu2npu.rewrite.compared import compared_sides, literal_numbers, scopes, string_literals, walk_scope
from gpu2npu.rules.index import ArgumentStrings, MemberStrings, PeerStrings
from gpu2npu.source.imports import qualify
from gpu2npu.source.names import dotted
from gpu2npu.source.parse import module_nodes


def kept_member_strings(
    tree: ast.AST, imports: Dict[str, str], rule: MemberStrings, rewritten: Callable[[str], bool]
) -> List[Kept]:
    """The members' literals ``rewritten`` would change, of the file's enumerations that hold the
    NPU already (a rename would make a member its alias), or that are another tool's (a module
    without torch: Triton's toolkits). An enumeration of torch devices without an NPU member
    follows the program's strings, which change: nanotron's callers pass ``"npu"`` to
    ``TimerType(timer_type)`` once migrated."""
    classes = [node for node in module_nodes(tree) if isinstance(node, ast.ClassDef)]
    enumerations = _enumerations(classes, imports, rule.bases)
    of_torch = any(name == "torch" or name.startswith("torch.") for name in imports.values())
    found = []
    for node in classes:
        members = [(statement, statement.value) for statement in node.body if _assigns_string(statement)]
        with_peer = any(value.value in rule.peers for _, value in members)
        if with_peer or (node.name in enumerations and not of_torch):
            found += [value for _, value in members if rewritten(value.value)]
    return _kept(tree, found, rule.rule_id, works=True)


def _assigns_string(statement: ast.stmt) -> bool:
    """``NAME = 'text'`` in a class body."""
    return (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _enumerations(classes: List[ast.ClassDef], imports: Dict[str, str], bases) -> Set[str]:
    """The names of the classes deriving from an enumeration base, or from such a class of the
    file (until nothing new is found)."""
    suffixes = tuple(base[1:] for base in bases if base.startswith("*"))
    found: Set[str] = set()
    grew = True
    while grew:
        grew = False
        for node in classes:
            if node.name in found:
                continue
            names = [dotted(base) or "" for base in node.bases]
            if any(
                qualify(name, imports) in bases
                or name in found
                or (suffixes and name.rsplit(".", 1)[-1].endswith(suffixes))
                for name in names
                if name
            ):
                found.add(node.name)
                grew = True
    return found


def kept_argument_strings(tree: ast.AST, imports: Dict[str, str], rules: List[ArgumentStrings]) -> List[Kept]:
    """The listed strings given to the rules' keywords of their callees (or at their positions)."""
    kept: List[Kept] = []
    for rule in rules:
        found = []
        for node in module_nodes(tree):
            if not isinstance(node, ast.Call) or qualify(dotted(node.func) or "", imports) not in rule.funcs:
                continue
            given = [keyword.value for keyword in node.keywords if keyword.arg == rule.keyword]
            if 0 <= rule.position < len(node.args):
                given.append(node.args[rule.position])
            found += [value for value in given if _is_text(value) and value.value in rule.values]
        kept += _kept(tree, found, rule.rule_id, rule.works, f"{rule.keyword}=")
    return kept


def kept_peer_strings(
    tree: ast.AST, rule: PeerStrings, rewritten: Callable[[str], bool], getters: Collection[str] = ()
) -> List[Kept]:
    """The literals ``rewritten`` would change into one their display or scope holds already, and
    those compared with a project function that names the NPU itself: one of the file's own, or
    of ``getters``, such functions of other files as the file may spell them
    (``xtuner.v1.utils.device.get_device``, ``.device.get_device``)."""
    found: Dict[int, ast.Constant] = {}
    for group in [*_displays(tree), *_compared_groups(tree)]:
        texts = {literal.value for literal in group}
        for literal in group:
            if rewritten(literal.value) and _peer(literal.value, rule.pairs) in texts:
                found[id(literal)] = literal
    kept = _kept(tree, _in_order(found.values()), rule.rule_id, True)
    own = npu_getters(tree, rule.pairs) if isinstance(tree, ast.Module) else ()
    names = _getter_names(tree, [*getters, *own]) if getters or own else frozenset()
    if names:
        compared = [
            literal
            for literal in _compared_with_getters(tree, names)
            if id(literal) not in found and rewritten(literal.value) and _peer(literal.value, rule.pairs)
        ]
        kept += _kept(tree, _in_order(compared), rule.rule_id, True, tip=rule.getter_tip)
    return kept


def _in_order(literals) -> List[ast.Constant]:
    return sorted(literals, key=lambda n: (n.lineno, n.col_offset))


def may_name_a_peer(data: bytes, pairs) -> bool:
    """Whether the bytes hold a literal of an NPU word ('npu', "npu:0") or ask for the
    accelerator's type (a getter that may give "npu" itself): worth reading for peer strings."""
    quoted = (q + peer.encode() for _, peer in pairs for q in (b"'", b'"'))
    return b"current_accelerator" in data or any(word in data for word in quoted)


def npu_getters(tree: ast.Module, pairs) -> Tuple[str, ...]:
    """The module-level functions that return a value and name the NPU in their body (a literal of
    a peer word: xtuner's ``get_device`` tests ``device == "npu"``), or return the accelerator's
    type (``torch.accelerator.current_accelerator().type``): on the NPU they may give "npu"
    themselves, so a 'cuda' compared with their result is the project's own CUDA test."""
    peers = {peer for _, peer in pairs}
    found = []
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and _returns_a_value(statement):
            if any(_names_a_peer(node, peers) for node in ast.walk(statement)):
                found.append(statement.name)
    return tuple(found)


def _returns_a_value(function: ast.AST) -> bool:
    return any(isinstance(node, ast.Return) and node.value is not None for node in walk_scope(function))


def _names_a_peer(node: ast.AST, peers: Set[str]) -> bool:
    if _is_text(node):
        return node.value.partition(":")[0] in peers
    return isinstance(node, ast.Attribute) and node.attr == "current_accelerator"


def _getter_names(tree: ast.AST, getters: Collection[str]) -> FrozenSet[str]:
    """The names the file calls the getters by: its own (a bare name of ``getters``) and those
    its imports bind (``from xtuner.v1.utils import get_device``, where the package re-exports
    ``xtuner.v1.utils.device.get_device``; ``from .device import get_device``)."""
    modules: Dict[str, List[str]] = {}  # by function, the modules spelled as defining one
    for getter in getters:
        module, _, function = getter.rpartition(".")
        modules.setdefault(function, []).append(module)
    names = {
        s.name
        for s in getattr(tree, "body", [])
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and "" in modules.get(s.name, ())
    }
    for node in module_nodes(tree):
        if isinstance(node, ast.ImportFrom):
            written = "." * node.level + (node.module or "")
            names.update(
                alias.asname or alias.name
                for alias in node.names
                if any(_within_package(m, written) for m in modules.get(alias.name, ()) if m)
            )
    return frozenset(names)


def _within_package(module: str, written: str) -> bool:
    """Whether ``module`` is the module an import names as ``written``, or one of its package's
    (the package re-exports the getter): ``xtuner.v1.utils.device`` within ``xtuner.v1.utils``,
    ``.device`` within ``.``, not ``..utils.device`` within ``.``."""
    if module == written:
        return True
    prefix = written if written.endswith(".") else written + "."
    return module.startswith(prefix) and not module[len(prefix) :].startswith(".")


def _compared_with_getters(tree: ast.AST, names: FrozenSet[str]) -> Iterator[ast.Constant]:
    """The literals compared with a call of one of ``names`` or with a name bound to its result,
    at module level (``DEVICE = get_device()``) or in the compare's scope."""
    module_level = _bound_to_getters(getattr(tree, "body", []), names)
    for scope in scopes(tree):
        bound = module_level if scope is tree else module_level | _bound_to_getters(walk_scope(scope), names)
        for node in walk_scope(scope):
            if isinstance(node, ast.Compare):
                for one_side, other in compared_sides(node):
                    if _is_getter_result(other, names, bound):
                        yield from string_literals(one_side)


def _bound_to_getters(statements, names: FrozenSet[str]) -> FrozenSet[str]:
    return frozenset(
        target.id
        for s in statements
        if isinstance(s, ast.Assign) and _is_getter_result(s.value, names, frozenset())
        for target in s.targets
        if isinstance(target, ast.Name)
    )


def _is_getter_result(node: ast.AST, names: FrozenSet[str], bound: FrozenSet[str]) -> bool:
    """A getter's call, a name bound to one, or either's text (``str(DEVICE)``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "str" and len(node.args) == 1 and not node.keywords:
            return _is_getter_result(node.args[0], names, bound)
        return node.func.id in names
    return isinstance(node, ast.Name) and node.id in bound


def _peer(text: str, pairs) -> str:
    """'cuda:0' -> 'npu:0'; '' for a text of no word of ``pairs``."""
    word, colon, rest = text.partition(":")
    return next((peer + colon + rest for known, peer in pairs if known == word), "")


def _displays(tree: ast.AST) -> Iterator[List[ast.Constant]]:
    """The string literals of each list, tuple and set display, and the keys of each dict's."""
    for node in module_nodes(tree):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            yield list(string_literals(node))
        elif isinstance(node, ast.Dict):
            yield [key for key in node.keys if key is not None and _is_text(key)]


def _compared_groups(tree: ast.AST) -> Iterator[List[ast.Constant]]:
    """Per scope and compared expression (``device``, ``args.device``), the literals compared
    with it (``==``, ``!=``, ``in``, a display's for ``in``)."""
    for scope in scopes(tree):
        groups: Dict[str, List[ast.Constant]] = {}
        for node in walk_scope(scope):
            if not isinstance(node, ast.Compare):
                continue
            for one_side, other in compared_sides(node):
                literals = list(string_literals(one_side))
                if literals and not _is_text(other):
                    groups.setdefault(ast.dump(other), []).extend(literals)
        yield from groups.values()


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _kept(
    tree: ast.AST, literals: List[ast.Constant], rule_id: str, works: bool, label: str = "", tip: str = ""
) -> List[Kept]:
    if not literals:
        return []
    numbers = literal_numbers(tree)
    return [
        Kept(
            literal.lineno,
            f"{STRING}{literal.value}#{numbers[(literal.lineno, literal.col_offset)]}",
            literal.end_lineno or literal.lineno,
            label + repr(literal.value),
            rule_id,
            works=works,
            tip=tip,
        )
        for literal in literals
    ]

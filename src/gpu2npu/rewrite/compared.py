"""Which device strings of a file are compared with data and keep their text
(KeepComparedStringRule).

``ckpt['device_type'] == 'cuda'``, ``str(node['value']).startswith('cuda')``,
``os.getenv('DEVICE') in ('cuda', 'cpu')``: the other side comes from outside the program (a
loaded checkpoint, a parsed graph, the environment) and still says ``cuda`` after the migration.
Data is a subscript, a call of one of the rule's ``sources`` or of a function the rules do not
know, ``str()`` or a text method of data, a caught exception, or a name its function binds to data
only. The program's own values are names and attributes (``device``, ``args.device``, a
parameter), a device, type or backend (``x.device.type``, ``get_device()``) and torch's calls:
their strings are migrated with them. Another framework's device name is data too where a rule
says so (Triton's ``get_current_target().backend`` is ``'cuda'`` only with NVIDIA's driver), as is
the result of a function of the file that returns data. Read on the stdlib ast before the
rewrite pass; the pass meets the literals in source order and counts equal ones per line the same
way.
"""

from __future__ import annotations

import ast
from typing import Container, Dict, FrozenSet, Iterator, List, Mapping, Optional, Tuple

from gpu2npu.rewrite.changes import STRING, Kept
from gpu2npu.rewrite.string_names import names_literal
from gpu2npu.rules.index import StringName
from gpu2npu.source.imports import qualify
from gpu2npu.source.names import dotted
from gpu2npu.source.parse import module_nodes

COMPARISONS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
TEXT_OF = frozenset({"str", "repr", "getattr"})  # str(data) is data
DEVICE_WORDS = ("device", "type", "backend")  # x.device.type, get_device(), args.dist_backend: the program's
TEXT_METHODS = frozenset({"lower", "upper", "strip", "lstrip", "rstrip", "casefold", "decode"})
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def kept_compared_strings(
    tree: ast.AST, imports: Dict[str, str], strings, rule, names: Mapping[str, StringName] = None
) -> List[Kept]:
    """``strings``: the index's string table and ``names`` its literals that become bound names
    (only literals they would rewrite are kept); ``rule``: the index's ComparedStrings."""

    def rewritten(text: str) -> bool:
        return strings.rewrite(text) is not None or bool(names and names_literal(names, text))

    literals = (n for n in module_nodes(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    if not any(rewritten(literal.value) for literal in literals):
        return []  # no literal to keep: no scope to read
    returning = _ReturningData(tree, imports, rule)
    found = []
    for scope in scopes(tree):
        data = _DataView(scope, imports, rule, returning)
        found += _compared_literals(scope, data, rule.methods, rewritten)
    if not found:
        return []
    numbers = literal_numbers(tree)
    kept = {
        Kept(
            literal.lineno,
            f"{STRING}{literal.value}#{numbers[(literal.lineno, literal.col_offset)]}",
            literal.end_lineno or literal.lineno,
            repr(literal.value),
            rule.rule_id,
            works=True,
        )
        for literal in found
    }
    return sorted(kept)


def _compared_literals(scope: ast.AST, data: "_DataView", methods, rewritten) -> List[ast.Constant]:
    """The literals ``rewritten`` would change that the scope compares with data."""
    found = []

    def compare(literal_side: ast.AST, other: ast.AST) -> None:
        literals = [literal for literal in string_literals(literal_side) if rewritten(literal.value)]
        if literals and data.holds(other):
            found.extend(literals)

    for node in walk_scope(scope):
        if isinstance(node, ast.Compare):
            for one_side, other in compared_sides(node):
                compare(one_side, other)
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods
        ):
            for argument in node.args:
                compare(argument, node.func.value)
    return found


def compared_sides(node: ast.Compare) -> Iterator[Tuple[ast.AST, ast.AST]]:
    """Each side of each equality or membership test of a comparison, with the side it is
    compared with (both ways round)."""
    operands = [node.left, *node.comparators]
    for position, op in enumerate(node.ops):
        if isinstance(op, COMPARISONS):
            yield operands[position], operands[position + 1]
            yield operands[position + 1], operands[position]


def string_literals(node: ast.AST) -> Iterator[ast.Constant]:
    """A string literal, or those of a tuple, list or set display (``x in ('cuda', 'cpu')``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                yield element


# what an ``except ... as e`` binds: an exception, whose text comes from the runtime (composer's
# ``'cuda' in str(e).lower()``: the NPU's errors name no 'npu' where CUDA's said 'cuda')
_CAUGHT = ast.Name(id="<caught exception>")


class _ReturningData:
    """The module's functions that return data where they return anything but a constant
    (``get_available_device()``: Triton's backend name, or ``'cpu'`` where there is no driver);
    read on the first question, as most files call none of their functions where it matters."""

    def __init__(self, tree: ast.AST, imports: Dict[str, str], rule):
        self.tree, self.imports, self.rule = tree, imports, rule
        self._names: Optional[FrozenSet[str]] = None

    def __contains__(self, name: str) -> bool:
        if self._names is None:
            self._names = frozenset(self._read())
        return name in self._names

    def _read(self) -> Iterator[str]:
        for node in getattr(self.tree, "body", []):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            data = _DataView(node, self.imports, self.rule, frozenset())
            values = [n.value for n in walk_scope(node) if isinstance(n, ast.Return) and n.value is not None]
            computed = [value for value in values if not isinstance(value, ast.Constant)]
            if computed and all(data.holds(value, compared=False) for value in computed):
                yield node.name


class _DataView:
    """What in one function (or the module) holds data from outside the program; ``returning``:
    the module's functions whose result is data."""

    def __init__(self, scope: ast.AST, imports: Dict[str, str], rule, returning: Container[str]):
        self.scope = scope
        self.imports = imports
        self.sources = rule.sources
        self.attributes = rule.attributes
        self.only_sources = rule.only_sources
        self.returning = returning
        self._bindings: Optional[Dict[str, List[ast.AST]]] = None

    @property
    def bindings(self) -> Dict[str, List[ast.AST]]:
        """Plain names the scope binds, with the values (read on the first question)."""
        if self._bindings is None:
            self._bindings = self._read_bindings()
        return self._bindings

    def _read_bindings(self) -> Dict[str, List[ast.AST]]:
        bindings: Dict[str, List[ast.AST]] = {}
        for node in walk_scope(self.scope):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bindings.setdefault(target.id, []).append(node.value)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bindings.setdefault(node.name, []).append(_CAUGHT)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.withitem, ast.NamedExpr)):
                target = getattr(node, "target", None) or getattr(node, "optional_vars", None)
                if isinstance(target, ast.Name):  # bound otherwise too: not only data
                    bindings.setdefault(target.id, []).append(ast.Constant(value=None))
        return bindings

    def holds(self, node: ast.AST, depth: int = 0, compared: bool = True) -> bool:
        """Whether ``node`` holds data. A call the rules do not know is data where it is compared
        directly (``str(_node_get(node, 'value'))``: keep and report when unsure), not where a
        name is bound to it (``args = parser.parse_args()``)."""
        if depth > 4:
            return False
        if node is _CAUGHT:
            return True
        if isinstance(node, ast.Subscript):
            return not self.only_sources
        if isinstance(node, ast.Name):
            values = self.bindings.get(node.id, [])
            return bool(values) and all(self.holds(value, depth + 1, compared=False) for value in values)
        if isinstance(node, ast.Attribute):
            if node.attr in self.attributes and self._is_source(node.value):
                return True  # get_current_target().backend: Triton's name for the device
            return node.attr not in DEVICE_WORDS and self.holds(node.value, depth + 1, compared)
        if isinstance(node, ast.Call):
            return self._call_holds(node, depth, compared)
        return False

    def _call_holds(self, node: ast.Call, depth: int, compared: bool) -> bool:
        func = node.func
        if isinstance(func, ast.Name) and func.id in TEXT_OF and node.args:
            return self.holds(node.args[0], depth + 1, compared)  # str(x), getattr(x, 'type')
        if isinstance(func, ast.Attribute) and func.attr in TEXT_METHODS:
            return self.holds(func.value, depth + 1, compared)
        if self._is_source(node) or (isinstance(func, ast.Name) and func.id in self.returning):
            return True
        name = qualify(dotted(func) or "", self.imports)
        if name.startswith("torch.") or any(word in name.rsplit(".", 1)[-1] for word in DEVICE_WORDS):
            return False  # torch.device(...), get_current_device(): the program's device
        return compared and not self.only_sources

    def _is_source(self, node: ast.AST) -> bool:
        """Whether ``node`` calls one of the rule's sources."""
        if not isinstance(node, ast.Call):
            return False
        if isinstance(node.func, ast.Attribute) and "*." + node.func.attr in self.sources:
            return True
        return qualify(dotted(node.func) or "", self.imports) in self.sources


def literal_numbers(tree: ast.AST) -> Dict[Tuple[int, int], int]:
    """Each string literal's number among the literals of equal text on its line, in source
    order (the parts of an f-string are not literals of their own)."""
    parts = {
        id(part) for node in module_nodes(tree) if isinstance(node, ast.JoinedStr) for part in node.values
    }
    literals = sorted(
        (node.lineno, node.col_offset, node.value)
        for node in module_nodes(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts
    )
    numbers, seen = {}, {}
    for line, column, value in literals:
        numbers[(line, column)] = seen.get((line, value), 0)
        seen[(line, value)] = numbers[(line, column)] + 1
    return numbers


def scopes(tree: ast.AST) -> Iterator[ast.AST]:
    yield tree
    for node in module_nodes(tree):
        if isinstance(node, SCOPES):
            yield node


def walk_scope(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of one scope, not those of the functions and classes defined in it."""
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, SCOPES):
            pending.extend(ast.iter_child_nodes(node))

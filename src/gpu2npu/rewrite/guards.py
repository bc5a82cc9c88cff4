"""Which CUDA tests of a file stay CUDA tests (KeepGuardRule).

A test such as ``torch.cuda.is_available()`` or ``x.is_cuda`` in an ``if``, a conditional
expression or a ``while`` is kept when the statement (its test or a branch) uses code that runs
only on CUDA after the migration:

* a library the status rules mark ``cuda_only`` (``from apex.normalization import
  FusedLayerNorm``), reached through the file's imports;
* a C++/CUDA extension the project builds (``from detectron2 import _C``; a ``load()`` result);
* a torch name that keeps its CUDA name (``torch.cuda.get_device_capability``), or a call kept
  on CUDA where it is (KeepReadRule: ``torch.cuda.get_device_properties(0).major``);
* a name the file binds at module level to one of those: a class deriving from one, or a value
  taken from one (``multi_tensor_l2norm = amp_C.multi_tensor_l2norm``).

Read on the stdlib ast, once per file, before the rewrite pass; the pass leaves the kept tests
as they are and the reports list them.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterator, List, Set, Tuple

from gpu2npu.rewrite.changes import Kept
from gpu2npu.rules.index import RuleIndex
from gpu2npu.source.imports import qualify
from gpu2npu.source.names import dotted, within
from gpu2npu.source.parse import module_nodes

ANY_RECEIVER = "*."


def kept_guards(
    tree: ast.AST,
    imports: Dict[str, str],
    index: RuleIndex,
    cuda_modules: FrozenSet[str] = frozenset(),
    kept_calls: FrozenSet[Tuple[int, str]] = frozenset(),
) -> List[Kept]:
    """The CUDA tests to keep in the file; ``cuda_modules``: the modules of the project's own
    C++/CUDA extensions (and the names ``load()`` results are bound to in this file);
    ``kept_calls``: (line, qualified name) of the calls other rules keep on CUDA."""
    modules = index.cuda_only_modules() | set(cuda_modules)
    cuda_only = CudaOnly(tree, imports, index, modules, kept_calls)
    found: Set[Kept] = set()
    for node, after in _branchings(tree):
        tests = list(_guard_tests(node.test, imports, index.guard_tests))
        if tests and any(cuda_only.used_in(part) for part in [node, *after]):
            found.update(tests)
    return sorted(found)


def _branchings(tree: ast.AST) -> Iterator[Tuple[ast.AST, List[ast.stmt]]]:
    """Each if, while and conditional expression, with the statements that follow an ``if``
    whose body always leaves the block (``if not x.is_cuda: return y`` then the CUDA path)."""
    for node in module_nodes(tree):
        if isinstance(node, ast.IfExp):
            yield node, []
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for position, statement in enumerate(block):
                if isinstance(statement, ast.If) and _leaves(statement.body) and not statement.orelse:
                    yield statement, block[position + 1 :]
                elif isinstance(statement, (ast.If, ast.While)):
                    yield statement, []


def _leaves(block: List[ast.stmt]) -> bool:
    return bool(block) and isinstance(block[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _guard_tests(test: ast.AST, imports: Dict[str, str], table: Dict[str, str]) -> Iterator[Kept]:
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = qualify(dotted(node.func) or "", imports)
            if name in table:
                yield Kept(
                    node.func.lineno, name, node.func.end_lineno or node.func.lineno, name, table[name]
                )
        elif isinstance(node, ast.Attribute) and ANY_RECEIVER + node.attr in table:
            test_key = ANY_RECEIVER + node.attr
            line = node.end_lineno or node.lineno
            yield Kept(line, test_key, line, f"torch.Tensor.{node.attr}", table[test_key])


class CudaOnly:
    """What in one file runs only on CUDA after the migration."""

    def __init__(
        self,
        tree: ast.AST,
        imports: Dict[str, str],
        index: RuleIndex,
        modules: Set[str],
        kept_calls: FrozenSet[Tuple[int, str]] = frozenset(),
    ):
        self.imports = imports
        self.index = index
        self.modules = modules
        self.kept_calls = kept_calls
        self.local: Set[str] = set()  # module-level names bound to CUDA-only code
        self._bind_locals(tree)

    def used_in(self, node: ast.AST) -> bool:
        """Whether a whole dotted name under ``node`` is CUDA-only (``torch.cuda`` inside
        ``torch.cuda.is_available`` is no use of its own)."""
        children = list(ast.walk(node))
        inner = {id(child.value) for child in children if isinstance(child, ast.Attribute)}
        return any(id(child) not in inner and self._is_cuda_only(child) for child in children)

    def _is_cuda_only(self, node: ast.AST) -> bool:
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return False
        name = dotted(node)
        if name is None:
            return False
        if name.split(".")[0] in self.local:
            return True
        qualified = qualify(name, self.imports)
        if any(within(qualified, module) for module in self.modules):
            return True
        if (node.lineno, qualified) in self.kept_calls:
            return True
        return qualified.startswith("torch.") and self.index.stays_on_cuda(qualified)

    def _bind_locals(self, tree: ast.AST) -> None:
        """Module-level classes deriving from CUDA-only code and names assigned from it (until
        nothing new is found: a class may derive from another such class)."""
        statements = list(_module_level(tree))
        grew = True
        while grew:
            before = len(self.local)
            for statement in statements:
                if isinstance(statement, ast.ClassDef):
                    if any(self.used_in(base) for base in statement.bases):
                        self.local.add(statement.name)
                elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                    if self.used_in(statement.value):
                        targets = (
                            statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                        )
                        self.local.update(t.id for t in targets if isinstance(t, ast.Name))
            grew = len(self.local) > before


def _module_level(tree: ast.AST) -> Iterator[ast.stmt]:
    """Statements run at import time: the module body, into if/try/with blocks."""
    pending = list(getattr(tree, "body", []))
    while pending:
        statement = pending.pop(0)
        yield statement
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            pending += statement.body + getattr(statement, "orelse", [])
            pending += [s for handler in getattr(statement, "handlers", []) for s in handler.body]
            pending += getattr(statement, "finalbody", [])

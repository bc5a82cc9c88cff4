"""Find the API uses of one file: calls, class bases, decorators and imports, each named by its
fully qualified name through the file's own imports (``import torch as t``, ``from torch
import nn``), and methods of torch objects typed through assignments
(``opt = torch.optim.Adam(...); opt.step()`` is ``torch.optim.Adam.step``).

The stdlib ast is used (several times faster than libcst, and nothing is rewritten here);
scoping follows the same rules as the rewrite pass (gpu2npu.source.scopes).
"""

from __future__ import annotations

import ast
import re
from contextlib import ExitStack, contextmanager
from typing import Dict, FrozenSet, List, Mapping, Optional, Tuple

from gpu2npu.apis.callsites import CallSite
from gpu2npu.rules.index import ANY_RECEIVER
from gpu2npu.source.binder import ScopedReader
from gpu2npu.source.names import dotted
from gpu2npu.source.scopes import LOCAL, ImportBinding


def _placeholder(node: ast.AST) -> str:
    return ""


def collect_calls(
    source: bytes,
    rel: str,
    detail_for: FrozenSet[str] = frozenset(),
    tree: Optional[ast.AST] = None,
    references: FrozenSet[str] = frozenset(),
    reexports: Optional[Mapping[str, str]] = None,
    star_bindings: Optional[Mapping[str, Tuple[Tuple[str, str], ...]]] = None,
) -> Optional[List[CallSite]]:
    """The API uses of a file, in source order; None when it cannot be parsed.

    Argument texts are kept only for calls whose API or method name is in ``detail_for``
    (the ones some analysis reads); other calls keep empty placeholders, so counts stay right.
    References to the APIs in ``references`` are uses too (``dtype=torch.float64``), recorded
    as ``attribute`` sites; ``*.method`` there stands for the method on any receiver
    (``map(lambda ddp: ddp.no_sync, ddps)``), recorded by its method name. ``reexports``: the
    project modules' names for the APIs they re-export (``dinov2.fsdp.ShardedGradScaler``), used
    as those APIs. ``star_bindings``: by module the file star-imports (as written), the names
    that import binds (``torch`` through ``from .base import *``).
    """
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return None
    collector = _Collector(rel, detail_for, references, reexports or {}, star_bindings or {})
    collector.visit(tree)
    return collector.sites


class _Collector(ScopedReader):
    def __init__(
        self,
        rel: str,
        detail_for: FrozenSet[str],
        references: FrozenSet[str],
        reexports: Mapping[str, str],
        star_bindings: Mapping[str, Tuple[Tuple[str, str], ...]],
    ):
        super().__init__()
        self.rel = rel
        self.reexports = reexports
        self.star_bindings = star_bindings
        self.detail_for = detail_for
        self.references = references
        self.sites: List[CallSite] = []
        self.instances: List[Dict[str, str]] = [{}]  # per function scope: name -> qualified class
        self.attribute_instances: Dict[str, str] = {}  # self.opt -> qualified class, file-wide
        self._callees = set()
        self._fallbacks = 0  # the try statements around here whose ImportError handlers go on
        self._attempts = 0  # ... whose handlers catch an ImportError (a fallback import of another module)
        self._present: List[str] = []  # names a hasattr test around here found (torch.accelerator)
        self._probed: List[str] = []  # libraries a test around here found installed (is_xformers_available())

    def qualified(self, node):
        found = super().qualified(node)
        return self.reexports.get(found, found) if found and self.reexports else found

    # -- bindings ---------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        self.bind_imports(node)
        for alias in node.names:
            self._add(node, alias.name, "import")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.bind_imports(node)
        if self.star_bindings and any(alias.name == "*" for alias in node.names):
            for name, qualified in self.star_bindings.get("." * node.level + (node.module or ""), ()):
                self.bind_name(name, ImportBinding(qualified, qualified))
        if node.module and not node.level:
            self._add(node, node.module, "import", tuple(alias.name for alias in node.names))
            for alias in node.names:  # a name a torch lacks stops the import (DTensor before 2.5)
                if f"{node.module}.{alias.name}" in self.references and not self._attempts:
                    self._add(node, f"{node.module}.{alias.name}", "imported")

    def visit_Try(self, node: ast.Try) -> None:
        """The imports of a try whose ImportError handler goes on without them (llm-foundry's
        optional flash_attn, fairseq's xformers) are optional: the program runs where they are
        missing."""
        fallback = any(_goes_on_without_the_import(handler, node) for handler in node.handlers)
        attempt = any(_catches_import_errors(handler) for handler in node.handlers)
        self._fallbacks += fallback
        self._attempts += attempt
        for statement in node.body:
            self.visit(statement)
        self._fallbacks -= fallback
        self._attempts -= attempt
        for part in (*node.handlers, *node.orelse, *node.finalbody):
            self.visit(part)

    visit_TryStar = visit_Try

    def visit_FunctionDef(self, node) -> None:
        for decorator in node.decorator_list:
            self._record_reference(decorator, "decorator")
            self.visit(decorator)
        self.visit_defaults(node.args)
        self.scopes.bind(node.name)
        self.scopes.push("function")
        self.instances.append({})
        self.bind_arguments(node.args)
        for statement in node.body:
            self.visit(statement)
        self.instances.pop()
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for decorator in node.decorator_list:
            self._record_reference(decorator, "decorator")
            self.visit(decorator)
        for base in node.bases:
            self._record_reference(base, "base")
            self.visit(base)
        for keyword in node.keywords:
            self.visit(keyword.value)
        self.scopes.bind(node.name)
        self.scopes.push("class")
        for statement in node.body:
            self.visit(statement)
        self.scopes.pop()

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._bind_target(target, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self._bind_target(node.target, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        self._bind_target(node.target, None)

    def bind_target(self, target: ast.AST) -> None:
        self._bind_target(target, None)

    def _bind_target(self, target: ast.AST, value: Optional[ast.AST]) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind_target(element, None)
            return
        if isinstance(target, ast.Starred):
            self._bind_target(target.value, None)
            return
        name = dotted(target)
        if name is None:
            return
        if isinstance(target, ast.Attribute):  # a switch set (torch.backends.cudnn.allow_tf32 = x) is a use
            qualified = self.qualified(target)
            if qualified in self.references:
                self._add(target, qualified, "attribute")
        cls = self._constructed_class(value)
        table = self.attribute_instances if "." in name else self.instances[-1]
        if cls:
            table[name] = cls
        else:
            table.pop(name, None)
        if "." not in name:
            self.scopes.bind(name)

    def _constructed_class(self, value: Optional[ast.AST]) -> str:
        """'torch.optim.Adam' when value is a call of a torch class (capitalised last name)."""
        if not isinstance(value, ast.Call):
            return ""
        qualified = self.qualified(value.func)
        if qualified and qualified.rsplit(".", 1)[-1][:1].isupper():
            return qualified
        return ""

    # -- what a hasattr test proves -----------------------------------------------------------

    @contextmanager
    def branch(self, test: ast.AST, taken: bool):
        found = self._tested_attributes(test, taken)
        probed = _probed_libraries(test, taken)
        self._present.extend(found)
        self._probed.extend(probed)
        try:
            yield
        finally:
            del self._present[len(self._present) - len(found) :]
            del self._probed[len(self._probed) - len(probed) :]

    def _tested_attributes(self, test: ast.AST, taken: bool) -> List[str]:
        """The qualified names a test proves present where it is ``taken``: ``torch.accelerator``
        for ``hasattr(torch, "accelerator")`` (for ``not hasattr(...)`` where it is not taken),
        each operand's where an ``and`` chain is taken (an ``or`` chain where it is not)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._tested_attributes(test.operand, not taken)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) == taken:
            return [name for value in test.values for name in self._tested_attributes(value, taken)]
        if not (taken and isinstance(test, ast.Call) and dotted(test.func) == "hasattr"):
            return []
        if len(test.args) != 2 or test.keywords:
            return []
        owner, attribute = test.args
        qualified = self.qualified(owner)
        if qualified and isinstance(attribute, ast.Constant) and isinstance(attribute.value, str):
            return [f"{qualified}.{attribute.value}"]
        return []

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.visit(node.test)
        with self.branch(node.test, True):
            self.visit(node.body)
        with self.branch(node.test, False):
            self.visit(node.orelse)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        """Each operand runs where those before it are true (``and``) or false (``or``):
        ``hasattr(torch, "accelerator") and torch.accelerator.is_available()``."""
        taken = isinstance(node.op, ast.And)
        with ExitStack() as before:
            for value in node.values:
                self.visit(value)
                before.enter_context(self.branch(value, taken))

    def _was_probed(self, module: str) -> bool:
        """Whether a test around here found the module's library installed: parler-tts's
        ``if is_flash_attn_2_available(): from flash_attn import ...`` imports it only there."""
        root = module.split(".")[0]
        return any(probed == root or probed.startswith(root + "_") for probed in self._probed)

    def _found_by_a_test(self, api: str) -> bool:
        return any(api == name or api.startswith(name + ".") for name in self._present)

    # -- uses ---------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        self._callees.add(id(node.func))
        api, method = self._callee(node.func)
        receiver = dotted(node.func.value) or "" if method and isinstance(node.func, ast.Attribute) else ""
        text = ast.unparse if (api in self.detail_for or method in self.detail_for) else _placeholder
        args = tuple(text(a) for a in node.args)
        keywords = tuple((k.arg or "**", text(k.value)) for k in node.keywords)
        self.sites.append(
            CallSite(
                self.rel,
                node.lineno,
                node.end_lineno or node.lineno,
                api,
                "call",
                method,
                args,
                keywords,
                receiver,
                node.col_offset + 1,
                tested=self._found_by_a_test(api),
            )
        )
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if id(node) not in self._callees:
            qualified = self.qualified(node)
            if qualified in self.references:
                self._add(node, qualified, "attribute")
            elif ANY_RECEIVER + node.attr in self.references:  # a method passed on, called later
                end = node.end_lineno or node.lineno
                self.sites.append(
                    CallSite(
                        self.rel, node.lineno, end, "", "attribute", node.attr, column=node.col_offset + 1
                    )
                )
        self.generic_visit(node)

    def _callee(self, func: ast.AST):
        qualified = self.qualified(func)
        if qualified:
            return qualified, ""
        if isinstance(func, ast.Attribute):
            receiver = dotted(func.value)
            cls = self._instance_class(receiver) if receiver else ""
            if cls:
                return f"{cls}.{func.attr}", ""
            return "", func.attr
        return "", ""

    def _instance_class(self, receiver: str) -> str:
        if "." in receiver:
            return self.attribute_instances.get(receiver, "")
        if self.scopes.lookup(receiver) is not LOCAL:
            return ""
        return self.instances[-1].get(receiver, "") or self.instances[0].get(receiver, "")

    def _record_reference(self, node: ast.AST, kind: str) -> None:
        target = node.func if isinstance(node, ast.Call) else node
        qualified = self.qualified(target)
        if qualified:
            self._add(node, qualified, kind)
            if isinstance(node, ast.Call):
                self._callees.add(id(node.func))

    def _add(self, node: ast.AST, api: str, kind: str, names: Tuple[str, ...] = ()) -> None:
        """``names``: what a from-import imports (its site's ``args``)."""
        end = getattr(node, "end_lineno", None) or node.lineno
        optional = kind == "import" and (self._fallbacks > 0 or self._was_probed(api))
        self.sites.append(
            CallSite(
                self.rel,
                node.lineno,
                end,
                api,
                kind,
                args=names,
                column=node.col_offset + 1,
                optional=optional,
                tested=self._found_by_a_test(api),
            )
        )


_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
# a probe for an installed library: transformers' is_flash_attn_2_available(), diffusers'
# is_xformers_available(); importlib.util.find_spec("flash_attn")
_PROBE = re.compile(r"is_(\w+?)_available$")


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _probed_libraries(test: ast.AST, taken: bool) -> List[str]:
    """The libraries (as the probe words them: ``flash_attn_2``) a test finds installed where it
    is ``taken``, through ``not`` and the operands of an ``and`` chain."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _probed_libraries(test.operand, not taken)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) == taken:
        return [word for value in test.values for word in _probed_libraries(value, taken)]
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_none(test.comparators[0]):
        if isinstance(test.ops[0], (ast.IsNot, ast.Is)):  # find_spec("xformers") is not None
            return _probed_libraries(test.left, taken == isinstance(test.ops[0], ast.IsNot))
    if not (taken and isinstance(test, ast.Call)):
        return []
    name = (dotted(test.func) or "").rsplit(".", 1)[-1]
    if name == "find_spec" and test.args and isinstance(test.args[0], ast.Constant):
        return [str(test.args[0].value)]
    match = _PROBE.match(name)
    return [match.group(1)] if match and match.group(1) not in ("torch", "cuda") else []


def _goes_on_without_the_import(handler: ast.ExceptHandler, attempt: ast.Try) -> bool:
    """Whether ``handler`` catches a failed import, does not always raise (a raise in a branch,
    llm-foundry's for a broken install, still lets a missing package pass) and leaves the program
    a way on: it binds a fallback or a flag (``XFORMERS_AVAILABLE = False``, ``has_apex = False``,
    an import from another package), or the try only probes (``del flash_attn_func``). A handler
    that only logs leaves the names unbound for the code that uses them (FastChat's xformers
    patch); one that imports from the same library is a second try of it (LLaVA's flash_attn)."""
    if not _catches_import_errors(handler) or (handler.body and isinstance(handler.body[-1], ast.Raise)):
        return False
    tried = _imported_roots(attempt.body)
    binds = any(
        isinstance(node, _BINDINGS) or (_imported_roots([node]) - tried)  # LLaVA's: the same library
        for statement in handler.body
        for node in ast.walk(statement)
    )
    return binds or any(isinstance(statement, ast.Delete) for statement in attempt.body)


def _catches_import_errors(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return caught is None or any((dotted(name) or "").rsplit(".", 1)[-1] in _IMPORT_ERRORS for name in names)


_BINDINGS = (ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.ClassDef)


def _imported_roots(statements) -> set:
    """The top-level packages the import statements among ``statements`` name."""
    roots = set()
    for node in statements:
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").split(".")[0] if not node.level else ".")
    return roots

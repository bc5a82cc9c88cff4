"""Name bindings seen so far in the pass: what each name refers to, scope by scope.

The transformer walks the file once, in source order, and records every binding as it meets
it: imports bind a name to a qualified name (``t -> torch``), anything else (assignment,
parameter, loop target, def, class) makes the name a plain local that rules must not touch.
This is the pass's own import table; libcst's QualifiedNameProvider would cost several extra
parses per file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union


@dataclass(frozen=True)
class ImportBinding:
    """A name bound by an import: what it referred to, and what it refers to after our rewrite."""

    original: str  # e.g. "torch.cuda.amp.GradScaler"
    current: str  # e.g. "torch_npu.npu.amp.GradScaler" when the import was rewritten


LOCAL = "<local>"  # a binding that is not an import
Binding = Union[ImportBinding, str]


@dataclass
class Scope:
    kind: str  # "module", "function", "class", "comprehension"
    names: Dict[str, Binding] = field(default_factory=dict)
    global_names: set = field(default_factory=set)


class ScopeStack:
    """Python's scoping rules, as far as name resolution for rewrite rules needs them."""

    def __init__(self) -> None:
        self.stack: List[Scope] = [Scope("module")]
        self.fallbacks = 0  # except handlers and else branches being visited

    def enter_fallback(self) -> None:
        """An except handler or an ``else:`` branch: ``except ImportError: torch = None`` runs
        only where the import of its try failed (``else: torch = None`` where the ``if`` found no
        torch), so a plain local bound there does not replace an import binding (the code after
        it is read as it runs where torch is installed)."""
        self.fallbacks += 1

    def leave_fallback(self) -> None:
        self.fallbacks -= 1

    @property
    def module(self) -> Scope:
        return self.stack[0]

    @property
    def at_module_level(self) -> bool:
        return len(self.stack) == 1

    def push(self, kind: str) -> None:
        self.stack.append(Scope(kind))

    def pop(self) -> None:
        self.stack.pop()

    def bind(self, name: str, binding: Binding = LOCAL) -> None:
        scope = self.stack[-1]
        if name in scope.global_names:
            scope = self.module
        if self.fallbacks and binding == LOCAL and isinstance(scope.names.get(name), ImportBinding):
            return
        scope.names[name] = binding

    def declare_global(self, name: str) -> None:
        self.stack[-1].global_names.add(name)

    def lookup(self, name: str) -> Optional[Binding]:
        """The binding a load of ``name`` sees here, or None when it is unbound (a builtin)."""
        innermost = len(self.stack) - 1
        for depth in range(innermost, -1, -1):
            scope = self.stack[depth]
            # A class body's names are not visible inside the methods nested in it.
            if scope.kind == "class" and depth != innermost:
                continue
            if name in scope.global_names:
                return self.module.names.get(name)
            if name in scope.names:
                return scope.names[name]
        return None

    def resolve_import(self, name: str) -> Optional[ImportBinding]:
        binding = self.lookup(name)
        return binding if isinstance(binding, ImportBinding) else None

"""One C++ text as tokens, with the structural queries the binding scanners share: brackets,
template argument lists, top-level splits, statements of a block, ``.method(...)`` chains,
qualified names and parameter lists of definitions."""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Tuple

from gpu2npu.apis.cuda_ops.tokens import OPENERS, bracket_pairs, tokenize

NOT_A_TYPE = frozenset(
    {"return", "new", "delete", "throw", "case", "else", "do", "sizeof", "co_return", "co_yield"}
)
AFTER_DEFINITION = frozenset({"{", "const", "noexcept", "->", "override", "final", "try", ":"})
AFTER_PROTOTYPE = frozenset({";", "="})
BLOCK_KEYWORDS = frozenset({"if", "for", "while", "switch", "catch"})
MAX_BLOCK_DEPTH = 32


class CppText:
    """One C++ text as tokens, with the structural helpers the binding scanners share."""

    def __init__(self, text: str):
        self.tokens = tokenize(text)
        self.close, self.open = bracket_pairs(self.tokens)
        self._call_names: Optional[Dict[str, List[int]]] = None
        # (function, owner type) -> its arities (gpu2npu.apis.cuda_ops.arity), computed once per text
        self.arity_cache: Dict[Tuple[str, str], list] = {}

    def is_op(self, index: int, text: str) -> bool:
        return (
            0 <= index < len(self.tokens)
            and self.tokens[index].kind == "op"
            and self.tokens[index].text == text
        )

    def is_id(self, index: int, text: Optional[str] = None) -> bool:
        if not 0 <= index < len(self.tokens) or self.tokens[index].kind != "id":
            return False
        return text is None or self.tokens[index].text == text

    def group_end(self, index: int, limit: int) -> Optional[int]:
        """Closer of the bracket opened at index, when it lies before limit."""
        end = self.close.get(index)
        return end if end is not None and end < limit else None

    def template_end(self, index: int, limit: int) -> Optional[int]:
        """The '>' closing the '<' at index (brackets inside are skipped)."""
        depth, i = 0, index
        while i < limit:
            if self.tokens[i].text in OPENERS and self.tokens[i].kind == "op":
                i = self.close.get(i, limit)
            elif self.is_op(i, "<"):
                depth += 1
            elif self.is_op(i, ">"):
                depth -= 1
                if depth == 0:
                    return i
            elif self.is_op(i, ";") or self.is_op(i, "{"):
                return None
            i += 1
        return None

    def split(self, start: int, end: int, separator: str = ",") -> List[Tuple[int, int]]:
        """Top-level parts of start..end; brackets and template argument lists are not split."""
        parts: List[Tuple[int, int]] = []
        part_start, angle, i = start, 0, start
        while i < end:
            token = self.tokens[i]
            if token.kind == "op" and token.text in OPENERS:
                close = self.close.get(i)
                i = close + 1 if close is not None and close < end else end
                continue
            if token.kind == "op":
                if token.text == "<" and self.is_id(i - 1) and i > start:
                    angle += 1
                elif token.text == ">" and angle:
                    angle -= 1
                elif token.text == separator and not angle:
                    parts.append((part_start, i))
                    part_start = i + 1
            i += 1
        parts.append((part_start, end))
        return [(s, e) for s, e in parts if s < e]

    def string_of(self, part: Tuple[int, int]) -> Optional[str]:
        """The string when the part is exactly one string literal."""
        start, end = part
        if end - start == 1 and self.tokens[start].kind == "str":
            return self.tokens[start].text
        return None

    def only_string_in(self, part: Tuple[int, int]) -> Optional[str]:
        """The one string literal inside the part (TORCH_SELECTIVE_SCHEMA("...") and the like)."""
        strings = [t.text for t in self.tokens[part[0] : part[1]] if t.kind == "str"]
        return strings[0] if len(strings) == 1 else None

    def has_assignment(self, part: Tuple[int, int]) -> bool:
        """A top-level '=' that is not part of ==, !=, <=, >=."""
        for _ in self._top_level_assignments(*part):
            return True
        return False

    def _top_level_assignments(self, start: int, end: int) -> Iterator[int]:
        i = start
        while i < end:
            if self.tokens[i].kind == "op" and self.tokens[i].text in OPENERS:
                close = self.close.get(i)
                i = close + 1 if close is not None else end
                continue
            if self.is_op(i, "=") and not self.is_op(i + 1, "="):
                before = self.tokens[i - 1] if i > start else None
                if not (before and before.kind == "op" and before.text in "=!<>"):
                    yield i
            i += 1

    def first_assignment(self, start: int, end: int) -> Optional[int]:
        return next(self._top_level_assignments(start, end), None)

    # -- parameter lists ------------------------------------------------------------------------

    def parameters(self, open_index: int) -> Optional[List[Tuple[int, int]]]:
        """The parameters of the '(' at open_index; (void) is none."""
        close = self.close.get(open_index)
        if close is None:
            return None
        params = self.split(open_index + 1, close)
        if len(params) == 1 and params[0][1] - params[0][0] == 1 and self.is_id(params[0][0], "void"):
            return []
        return params

    def is_variadic(self, param: Tuple[int, int]) -> bool:
        """C varargs, a parameter pack, or pybind11's py::args / py::kwargs."""
        for i in range(*param):
            if self.is_op(i, "..."):
                return True
            if self.is_id(i) and self.tokens[i].text in ("args", "kwargs") and self.is_op(i - 1, "::"):
                if self.is_id(i - 2, "py") or self.is_id(i - 2, "pybind11"):
                    return True
        return False

    def mentions(self, part: Tuple[int, int], name: str) -> bool:
        return any(t.kind == "id" and t.text == name for t in self.tokens[part[0] : part[1]])

    def declarations(self, name: str) -> List[List[Tuple[int, int]]]:
        """Parameter lists of the definitions of ``name(`` in this text (prototypes when no definition)."""
        definitions, prototypes = [], []
        for index in self._calls_of(name):
            params = self.parameters(index + 1)
            if params is None or not self._preceded_by_type(index):
                continue
            after = (
                self.tokens[self.close[index + 1] + 1].text
                if self.close[index + 1] + 1 < len(self.tokens)
                else ""
            )
            if after in AFTER_DEFINITION:
                definitions.append(params)
            elif after in AFTER_PROTOTYPE:
                prototypes.append(params)
        return definitions or prototypes

    def _calls_of(self, name: str) -> List[int]:
        if self._call_names is None:
            self._call_names = {}
            for i, token in enumerate(self.tokens):
                if token.kind == "id" and self.is_op(i + 1, "("):
                    self._call_names.setdefault(token.text, []).append(i)
        return self._call_names.get(name, [])

    def _preceded_by_type(self, index: int) -> bool:
        """``Tensor fn(``, ``std::vector<T> fn(``, ``T* Cls::fn(`` -- not ``return fn(``, ``x = fn(``."""
        i = index - 1
        while self.is_op(i, "::") and self.is_id(i - 1):  # qualified definition: skip Cls::
            i -= 2
        if self.is_id(i):
            return self.tokens[i].text not in NOT_A_TYPE
        return self.is_op(i, ">") or self.is_op(i, "*") or self.is_op(i, "&")

    def statements(self, start: int, end: int, depth: int = 0) -> Iterator[Tuple[int, int]]:
        """Top-level statements of a block, descending into nested blocks ({...}, if (...) {...})."""
        statement_start, i = start, start
        while i < end:
            token = self.tokens[i]
            if token.kind == "op" and token.text == ";":
                if statement_start < i:
                    yield statement_start, i
                statement_start = i + 1
            elif token.kind == "op" and token.text in OPENERS:
                close = self.close.get(i)
                close = close if close is not None and close < end else end
                if token.text == "{" and depth < MAX_BLOCK_DEPTH and self._starts_block(statement_start, i):
                    yield from self.statements(i + 1, close, depth + 1)
                    statement_start = close + 1
                i = close
            i += 1
        if statement_start < end:
            yield statement_start, end

    def _starts_block(self, statement_start: int, brace: int) -> bool:
        if brace == statement_start or self.is_id(brace - 1, "else") or self.is_id(brace - 1, "do"):
            return True
        if self.is_id(brace - 1, "try"):
            return True
        opener = self.open.get(brace - 1) if self.is_op(brace - 1, ")") else None
        return (
            opener is not None and self.is_id(opener - 1) and self.tokens[opener - 1].text in BLOCK_KEYWORDS
        )

    def chain_calls(self, start: int, end: int) -> Iterator[Tuple[str, int, int, int]]:
        """(method, index of its name, args start, args end) for each top-level ``.method(...)``
        or ``.method<...>(...)`` in start..end."""
        i = start
        while i < end:
            token = self.tokens[i]
            if token.kind == "op" and token.text in OPENERS:
                close = self.close.get(i)
                i = close + 1 if close is not None else end
                continue
            if token.kind == "op" and token.text == "." and self.is_id(i + 1):
                paren = i + 2
                if self.is_op(paren, "<"):
                    angle_end = self.template_end(paren, end)
                    paren = angle_end + 1 if angle_end is not None else end
                close = self.group_end(paren, end) if self.is_op(paren, "(") else None
                if close is not None:
                    yield self.tokens[i + 1].text, i + 1, paren + 1, close
                    i = close + 1
                    continue
            i += 1

    def qualified_name(self, start: int, end: int) -> Tuple[List[str], int]:
        """The ``a::b::c`` names starting at start (a leading '::' allowed) and the index after them."""
        names, i = [], start + 1 if self.is_op(start, "::") else start
        while self.is_id(i) and i < end:
            names.append(self.tokens[i].text)
            if not (self.is_op(i + 1, "::") and i + 2 < end):
                return names, i + 1
            i += 2
        return names, i

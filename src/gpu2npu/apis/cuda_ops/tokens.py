"""C++ text as tokens: comments, preprocessor lines and string contents never become structure,
so commented-out or quoted ``m.def`` lines never count; string literals keep their contents
(adjacent ones joined), since op names and schemas live in them."""

from __future__ import annotations

import re
from typing import Dict, List, NamedTuple, Sequence, Tuple


class Token(NamedTuple):
    kind: str  # 'id', 'str', 'chr', 'num', 'op'
    text: str  # for strings: the contents without quotes
    line: int


_TOKEN_RE = re.compile(
    r"""
    (?P<space>[ \t\r\f\v]+)
  | (?P<newline>\n)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\()
  | (?P<str>(?:u8|[uUL])?"(?P<body>(?:[^"\\\n]|\\.)*)"?)
  | (?P<chr>(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*'?)
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.'])*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<op>::|->|\.\.\.|.)
    """,
    re.VERBOSE | re.DOTALL,
)


def _directive_end(text: str, pos: int) -> int:
    """End of a preprocessor line starting before pos (backslash-newline continues it)."""
    while True:
        newline = text.find("\n", pos)
        if newline == -1:
            return len(text)
        if text[newline - 1 : newline] == "\\" or text[newline - 2 : newline] == "\\\r":
            pos = newline + 1
            continue
        return newline


def tokenize(text: str) -> List[Token]:
    tokens: List[Token] = []
    line, pos, at_line_start = 1, 0, True
    while pos < len(text):
        match = _TOKEN_RE.match(text, pos)
        kind, end = match.lastgroup, match.end()
        if kind == "newline":
            at_line_start = True
        elif kind == "op" and match.group() == "#" and at_line_start:
            end = _directive_end(text, end)  # #include/#define/#if...: never part of a declaration
        elif kind == "raw":
            closing = text.find(")" + match.group("delim") + '"', end)
            content_end = closing if closing >= 0 else len(text)
            _append_string(tokens, text[end:content_end], line)
            end = content_end + len(match.group("delim")) + 2 if closing >= 0 else len(text)
            at_line_start = False
        elif kind == "str":
            _append_string(tokens, match.group("body"), line)
            at_line_start = False
        elif kind not in ("space", "comment"):
            tokens.append(Token(kind, match.group(), line))
            at_line_start = False
        line += text.count("\n", pos, end)
        pos = end
    return tokens


def _append_string(tokens: List[Token], body: str, line: int) -> None:
    # Adjacent literals are one string in C++ ("a" "b" == "ab").
    if tokens and tokens[-1].kind == "str":
        tokens[-1] = tokens[-1]._replace(text=tokens[-1].text + body)
    else:
        tokens.append(Token("str", body, line))


OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = frozenset(OPENERS.values())


def bracket_pairs(tokens: Sequence[Token]) -> Tuple[Dict[int, int], Dict[int, int]]:
    """opener index -> closer index, and back. Stray closers (macro tricks) are ignored."""
    forward: Dict[int, int] = {}
    stack: List[int] = []
    for index, token in enumerate(tokens):
        if token.kind != "op":
            continue
        if token.text in OPENERS:
            stack.append(index)
        elif token.text in CLOSERS:
            # Look a few levels down only, so unbalanced text stays linear.
            for depth in range(len(stack) - 1, max(len(stack) - 8, 0) - 1, -1):
                if OPENERS[tokens[stack[depth]].text] == token.text:
                    forward[stack[depth]] = index
                    del stack[depth:]
                    break
    return forward, {close: open_ for open_, close in forward.items()}

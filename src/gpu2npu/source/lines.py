"""Line numbers without libcst's PositionProvider (which costs a whole extra code generation):
a transformer counts the newlines it passes; every newline of a source lives in one of these
nodes, so the current line is the count + 1."""

from __future__ import annotations

import libcst as cst


def line_breaks(text: str) -> int:
    """Line breaks as Python counts them for line numbers: ``\r\n``, ``\n`` and a lone ``\r``."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def chain_line_breaks(node: cst.CSTNode):
    """Line breaks inside a dotted name (``torch.cuda.synchronize``) without parentheses, read
    off its dots (backslash continuations) instead of generating its code; None for other nodes."""
    breaks = 0
    while isinstance(node, cst.Attribute) and not node.lpar:
        for space in (node.dot.whitespace_before, node.dot.whitespace_after):
            if not isinstance(space, cst.SimpleWhitespace):
                return None
            breaks += line_breaks(space.value)
        node = node.value
    return breaks if isinstance(node, cst.Name) and not node.lpar else None


class NewlineCounter:
    """Mixin for a libcst visitor or transformer walking a module in source order."""

    _newlines = 0

    def visit_Newline(self, node: cst.Newline) -> None:
        self._newlines += 1

    def visit_SimpleWhitespace(self, node: cst.SimpleWhitespace) -> None:
        self._newlines += line_breaks(node.value)  # backslash continuations

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self._newlines += line_breaks(node.value)

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
        self._newlines += line_breaks(node.value)

"""Line numbers without libcst's PositionProvider (which costs a whole extra code generation):
a transformer counts the newlines it passes; every newline of a source lives in one of these
nodes, so the current line is the count + 1."""

from __future__ import annotations

import libcst as cst


def line_breaks(text: str) -> int:
    """Line breaks as Python counts them for line numbers: ``\r\n``, ``\n`` and a lone ``\r``."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


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

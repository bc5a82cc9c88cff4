"""Finding, replacing and deleting arguments of a libcst Call without breaking its commas."""

from __future__ import annotations

from typing import Optional, Sequence

import libcst as cst


def positional_index(call: cst.Call, position: int) -> Optional[int]:
    """Index in ``call.args`` of the positional argument number ``position`` (keywords skipped)."""
    seen = 0
    for index, arg in enumerate(call.args):
        if arg.keyword is not None or arg.star:
            if arg.star == "*":
                return None  # positions after *args are unknowable
            continue
        if seen == position:
            return index
        seen += 1
    return None


def keyword_index(call: cst.Call, keyword: str) -> Optional[int]:
    for index, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            return index
    return None


def find_argument(call: cst.Call, position: int = -1, keyword: Optional[str] = None) -> Optional[int]:
    """The positional argument ``position`` if given, else the keyword argument ``keyword``."""
    if position is not None and position >= 0:
        found = positional_index(call, position)
        if found is not None:
            return found
    if keyword:
        return keyword_index(call, keyword)
    return None


def replace_value(call: cst.Call, index: int, value: cst.BaseExpression) -> cst.Call:
    args = list(call.args)
    args[index] = args[index].with_changes(value=value)
    return call.with_changes(args=args)


def delete_argument(call: cst.Call, index: int) -> cst.Call:
    args = list(call.args)
    removed = args.pop(index)
    if index == len(args) and args:
        # The new last argument takes over the removed one's comma (or lack of it).
        args[-1] = args[-1].with_changes(comma=removed.comma)
    return call.with_changes(args=args)


def passed_parameters(call: cst.Call, parameters: Sequence[str]) -> Optional[set]:
    """The parameters a call passes, by keyword or by position (``parameters``: the callee's, in
    order); None for a call with ``*args`` or ``**kwargs``, which may pass any."""
    if any(arg.star for arg in call.args):
        return None
    positional = sum(1 for arg in call.args if arg.keyword is None)
    return {arg.keyword.value for arg in call.args if arg.keyword is not None} | set(parameters[:positional])


def append_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with ``keyword=value`` last. A call whose arguments end with a comma (one per line)
    keeps its layout: the new argument takes the last one's comma, the last one its neighbour's.
    A closing parenthesis on a line of its own stays there: the new argument takes the line break."""
    added = cst.Arg(
        value,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    if args and isinstance(args[-1].comma, cst.Comma):
        separator = (
            args[-2].comma
            if len(args) > 1 and isinstance(args[-2].comma, cst.Comma)
            else args[-1].comma.with_changes(whitespace_after=_first_argument_break(call))
        )
        closing = args[-1].comma.whitespace_after
        added = added.with_changes(
            comma=args[-1].comma.with_changes(whitespace_after=_line_comment(closing, None))
        )
        args[-1] = args[-1].with_changes(
            comma=separator.with_changes(whitespace_after=_line_comment(separator.whitespace_after, closing))
        )
    elif args:
        added = added.with_changes(whitespace_after_arg=args[-1].whitespace_after_arg)
        args[-1] = args[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
    return call.with_changes(args=[*args, added])


def _line_comment(whitespace, comment_of):
    """``whitespace`` after a comma that ends a line, with the end-of-line comment of
    ``comment_of`` (None: none): an argument keeps its own comment wherever its comma moves."""
    if not isinstance(whitespace, cst.ParenthesizedWhitespace):
        return whitespace
    own = comment_of.first_line if isinstance(comment_of, cst.ParenthesizedWhitespace) else None
    return whitespace.with_changes(
        first_line=own or cst.TrailingWhitespace(newline=whitespace.first_line.newline)
    )


def _first_argument_break(call: cst.Call):
    """What precedes the first argument when it sits on a line of its own (its indentation),
    else one space: what a second argument follows its comma with."""
    before = call.whitespace_before_args
    return before if isinstance(before, cst.ParenthesizedWhitespace) else cst.SimpleWhitespace(" ")

"""Small helpers shared by the kind modules."""

from __future__ import annotations

import ast
import keyword as python_keywords
import re
from typing import Optional

import libcst as cst

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.model import Field
from gpu2npu.source.arguments import find_argument

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_identifier(text: str) -> bool:
    return bool(IDENTIFIER.match(text)) and not python_keywords.iskeyword(text)


def check_names(**names: str):
    """A problem message if any of the given values is not a dotted Python name."""
    for field, value in names.items():
        if value is None:
            continue
        if not all(is_identifier(part) for part in value.split(".")):
            return f"'{field}' must be a dotted Python name such as torch.cuda.synchronize, not {value!r}"
    return None


def is_expression(text: str) -> bool:
    """Whether both parsers read ``text`` as an expression. CPython's goes first: it refuses deep
    nesting with an error, where libcst's runs out of stack and kills the interpreter (a few
    thousand parentheses)."""
    try:
        ast.parse(text, mode="eval")
        cst.parse_expression(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, cst.ParserSyntaxError):
        return False
    return True


def shortened(value) -> str:
    """``repr(value)``, cut to fit an error line."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def listed_names(field: str, values: list) -> dict:
    """``check_names`` keywords for a list field's items (``reads[0]``, ...); an item that is not a
    string is checked as its repr, so it is reported as not a name."""
    return {
        f"{field}[{i}]": value if isinstance(value, str) else repr(value) for i, value in enumerate(values)
    }


def tips_problem(tips: dict, wanted) -> Optional[str]:
    """A problem message unless ``tips`` gives a text for each situation ``wanted``."""
    missing = [name for name in wanted if not isinstance(tips.get(name), str)]
    return f"'tips' must give a text for {', '.join(missing)}" if missing else None


def assigned_values(source: str, name: str) -> list:
    """The right-hand sides of the lines of ``source`` that assign ``name`` (a name or a dotted
    attribute)."""
    return re.findall(rf"(?m)^[ \t]*{re.escape(name)}[ \t]*=(?!=)(.*)$", source)


def parent(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else ""


def last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def call_key(func_name: str) -> str:
    """Index key of a call rule: a qualified name, or '.name' for a method on any receiver."""
    return func_name if "." in func_name else "." + func_name


def name_trigger(qualified: str) -> str:
    """A word every spelling of a reference to ``qualified`` contains: the segment right under
    the root package (``cuda`` for torch.cuda.synchronize, whether written ``t.cuda.synchronize``,
    ``from torch import cuda`` or ``from torch.cuda import synchronize``)."""
    parts = qualified.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def dotted_name(name: str) -> set:
    """``trigger_names`` of a rule on ``name``: itself when it is a qualified name."""
    return {name} if "." in name else set()


def method_word(name: str, word: str) -> set:
    """``trigger_words`` of a rule on ``name``: ``word`` when it is a method on any receiver."""
    return set() if "." in name else {word}


def name_subject(old_name: str) -> str:
    """A renamed name as third_party reports it: dotted names as they are, a method or
    attribute on any receiver as ``*.name``."""
    return old_name if "." in old_name else f"*.{old_name}"


def check_argument_choice(fields) -> Optional[str]:
    """A call-argument kind names its function and the argument by position or keyword."""
    problem = check_names(func_name=fields["func_name"])
    if problem:
        return problem
    if fields["arg_idx"] < 0 and not fields["arg_keyword"]:
        return "give 'arg_idx' (>= 0) or 'arg_keyword'"
    return None


def argument_label(arg, rule) -> str:
    """How a change message names the argument it changed: its keyword, or its position."""
    return arg.keyword.value if arg.keyword is not None else f"at position {rule['arg_idx']}"


def argument_place(rule) -> str:
    """``arg 0`` or ``device=``: which argument of the call a rule reads."""
    return f"arg {rule['arg_idx']}" if rule["arg_idx"] >= 0 else f"{rule['arg_keyword']}="


# The fields that say which argument of which call a call-argument kind reads.
ARGUMENT_FIELDS = {
    "func_name": Field(str, required=True, help="qualified function name, or a method name"),
    "arg_idx": Field(int, default=-1, help="position among the positional arguments"),
    "arg_keyword": Field(str, help="keyword of the argument"),
}


class CallArgumentKind(RuleKind):
    """A kind that edits one argument (``arg_idx`` among the positional ones, or ``arg_keyword``)
    of the calls of ``func_name``; subclasses say how in ``edit``."""

    def validate(self, fields):
        return check_argument_choice(fields)

    def compile(self, rule, index):
        index.add_call_edit(call_key(rule["func_name"]), rule, self.apply)

    def subject(self, rule):
        return rule["func_name"]

    def apply(self, rule, call: cst.Call, ctx) -> cst.Call:
        position = find_argument(call, rule["arg_idx"], rule["arg_keyword"])
        return call if position is None else self.edit(rule, call, position, ctx)

    def edit(self, rule, call: cst.Call, position: int, ctx) -> cst.Call:
        raise NotImplementedError

"""Instrumenting one Python file for the dynamic-shape analysis: one stdlib parse for the
facts (imports, loops, jit-scripted functions), one libcst pass for the edits.

Each call ``f(args)`` becomes ``DETECTOR.hook_func(f, '<name>', <n>, args)``, where ``<name>``
is the callee as written, its import resolved (``F.relu`` -> ``torch.nn.functional.relu``), and
``<n>`` numbers the calls of one name on the same lines. The training loop's iterable becomes
``DETECTOR.start(<iterable>)`` (``gpu2npu.modes.dynamic_shape.loops`` chooses it), and
``from msft_dynamic_analysis.hook import DETECTOR`` is put on an existing line -- after the
docstring and ``__future__`` imports, or before the first statement, joined with ``;`` -- so
that every line keeps its number: tracebacks and the report show the original lines. Only a
file opening with a compound statement (def, class, if, try, ...) gains a line; the caller
records it for the runtime.

Left as they are (as Huawei's tool does, plus the calls that must not gain a frame):
* builtins called by their bare name (``len``, ``print``, ``super``, ``locals``), unless the
  file imports that name (``from torch import max``);
* ``x.__init__(...)``, everything inside a function named ``__init__``, and functions and
  classes that TorchScript compiles (decorated with ``torch.jit.script`` and friends, or
  passed by name to ``torch.jit.script(...)`` in the file): TorchScript cannot compile the hook;
* decorator expressions (``@DETECTOR.hook_func(...)`` needs Python 3.9) and calls inside
  f-strings (the name's quotes could clash before Python 3.12);
* calls of standard-library modules through the file's imports (``os.path.join``,
  ``warnings.warn``, ``inspect.currentframe``) and logger methods (``logger.info``): they never
  take tensors, and an extra frame would change what they see (stack levels, caller lines);
* calls on ``DETECTOR`` itself, so that instrumenting a copy again changes nothing.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from gpu2npu.modes.dynamic_shape.loops import BY_HAND, Loop, find_loops
from gpu2npu.modes.dynamic_shape.runtime_package import DETECTOR_IMPORT
from gpu2npu.source.imports import file_imports, qualify
from gpu2npu.source.lines import NewlineCounter
from gpu2npu.source.modules import is_script
from gpu2npu.source.names import dotted, dotted_name
from gpu2npu.source.parse import COPIED, PARSE_ERRORS, parse_ast, unreadable_reason
from gpu2npu.source.stdlib import STDLIB

BUILTINS = frozenset(dir(builtins))
LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})
UNTOUCHED_METHODS = LOGGER_METHODS | {"__init__"}
JIT_COMPILED = frozenset(
    {
        "torch.jit.script",
        "torch.jit.script_method",
        "torch.jit.export",
        "torch.jit.interface",
        "torch.jit.script_if_tracing",
    }
)


@dataclass
class Instrumented:
    new_bytes: Optional[bytes] = None  # None: the copy stays byte-identical
    calls: int = 0  # calls rewritten to DETECTOR.hook_func
    loops: List[Loop] = field(default_factory=list)  # loops wrapped now or by hand earlier
    added_line: Optional[int] = None  # line of the import in the copy, when it took a new line
    main_guard: bool = False  # the file has ``if __name__ == "__main__":`` (a script to run)
    skipped: str = ""  # why the file was copied unchanged


@dataclass(frozen=True)
class FileFacts:
    """What the stdlib parse tells the libcst pass."""

    imports: Dict[str, str]
    loops: Dict[int, Loop]  # by line of the ``for``
    jit_compiled: Set[str]  # names of functions and classes passed to torch.jit.script(...)
    imports_detector: bool


def instrument_source(data: bytes, path: str = "<file>") -> Instrumented:
    tree = parse_ast(data)  # first: a file libcst's parser cannot take never reaches it
    try:
        if tree is None:
            raise SyntaxError("not parsed")
        module = cst.parse_module(data)
    except PARSE_ERRORS:
        return Instrumented(skipped=f"{unreadable_reason(data) or 'cannot be parsed as Python 3'}{COPIED}")
    facts = _file_facts(tree, data.decode(module.encoding).lstrip("\ufeff"))
    transformer = CallInstrumenter(module, facts)
    new_module = module.visit(transformer)
    result = Instrumented(calls=transformer.calls, loops=transformer.loops, main_guard=is_script(tree))
    if not transformer.calls and all(loop.found_by == BY_HAND for loop in transformer.loops):
        return result  # nothing is recorded here: the copy stays byte-identical
    if not facts.imports_detector:
        new_module, result.added_line = with_detector_import(new_module)
    result.new_bytes = new_module.bytes
    try:
        compile(result.new_bytes, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # a bug of ours: never hand out a broken copy
        return Instrumented(
            skipped=(
                f"internal error: the instrumented file would not compile ({_first_line(exc)}); "
                "copied unchanged"
            )
        )
    return result


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _file_facts(tree: ast.Module, source: str) -> FileFacts:
    imports = file_imports(tree)
    loops = {loop.line: loop for loop in find_loops(tree, source, imports)}
    return FileFacts(imports, loops, _jit_compiled_names(tree, imports), _imports_detector(tree))


def _jit_compiled_names(tree: ast.Module, imports: Dict[str, str]) -> Set[str]:
    """``f`` and ``Net`` in ``torch.jit.script(f)`` and ``torch.jit.script(Net(...))``."""
    names = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and node.args
            and qualify(dotted(node.func) or "", imports) == "torch.jit.script"
        ):
            argument = node.args[0]
            if isinstance(argument, ast.Call):
                argument = argument.func
            if isinstance(argument, ast.Name):
                names.add(argument.id)
    return names


def _imports_detector(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == DETECTOR_IMPORT.split()[1]
        and any(alias.name == "DETECTOR" and alias.asname is None for alias in node.names)
        for node in tree.body
    )


class CallInstrumenter(NewlineCounter, cst.CSTTransformer):
    """The one libcst pass. Lines come from a newline counter kept during the pass (libcst
    visits nodes in source order), as in gpu2npu.rewrite.transformer; so no visit may skip
    children: excluded regions are a depth counter instead."""

    def __init__(self, module: cst.Module, facts: FileFacts):
        super().__init__()
        self.module = module
        self.facts = facts
        self.calls = 0
        self.loops: List[Loop] = []
        self._newlines = 0
        self._call_lines: List[int] = []
        self._loop_lines: List[int] = []
        self._excluded = 0  # > 0: inside a region whose calls stay as they are
        self._region_flags: List[bool] = []
        self._numbers: Dict[Tuple[int, int, str], int] = {}

    # -- regions left alone ----------------------------------------------------------------------

    def _enter_region(self, excluded: bool) -> None:
        self._region_flags.append(excluded)
        self._excluded += excluded

    def _leave_region(self) -> None:
        self._excluded -= self._region_flags.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        self._enter_region(name == "__init__" or name in self.facts.jit_compiled or self._jit_decorated(node))

    def leave_FunctionDef(self, original_node, updated_node):
        self._leave_region()
        return updated_node

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._enter_region(node.name.value in self.facts.jit_compiled or self._jit_decorated(node))

    def leave_ClassDef(self, original_node, updated_node):
        self._leave_region()
        return updated_node

    def visit_Decorator(self, node: cst.Decorator) -> None:
        self._enter_region(True)

    def leave_Decorator(self, original_node, updated_node):
        self._leave_region()
        return updated_node

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._enter_region(True)

    def leave_FormattedString(self, original_node, updated_node):
        self._leave_region()
        return updated_node

    def _jit_decorated(self, node) -> bool:
        for decorator in node.decorators:
            expression = decorator.decorator
            if isinstance(expression, cst.Call):
                expression = expression.func
            if qualify(dotted_name(expression), self.facts.imports) in JIT_COMPILED:
                return True
        return False

    # -- calls -----------------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        self._call_lines.append(self._newlines + 1)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        first, last = self._call_lines.pop(), self._newlines + 1
        if self._excluded or not self._instrumentable(original_node.func):
            return updated_node
        name = self._name(original_node.func)
        key = (first, last, name)
        number = self._numbers.get(key, 0)
        self._numbers[key] = number + 1
        self.calls += 1
        return hook_call(updated_node, name, number)

    def _instrumentable(self, callee: cst.BaseExpression) -> bool:
        text = dotted_name(callee)
        if isinstance(callee, cst.Name):
            return callee.value not in BUILTINS or callee.value in self.facts.imports
        if isinstance(callee, cst.Attribute) and callee.attr.value in UNTOUCHED_METHODS:
            return False
        if not text:
            return True
        root = text.split(".")[0]
        if root == "DETECTOR":
            return False
        return not (root in self.facts.imports and self.facts.imports[root].split(".")[0] in STDLIB)

    def _name(self, callee: cst.BaseExpression) -> str:
        text = dotted_name(callee)
        if text:
            return qualify(text, self.facts.imports)
        return " ".join(self.module.code_for_node(callee).split())

    # -- loops -----------------------------------------------------------------------------------

    def visit_For(self, node: cst.For) -> None:
        self._loop_lines.append(self._newlines + 1 + len(node.leading_lines))

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        loop = self.facts.loops.get(self._loop_lines.pop())
        if loop is None or self._excluded or original_node.asynchronous is not None:
            return updated_node
        self.loops.append(loop)
        if loop.found_by == BY_HAND:
            return updated_node
        return updated_node.with_changes(iter=_detector_call("start", [cst.Arg(updated_node.iter)]))


def _detector_call(method: str, args) -> cst.Call:
    return cst.Call(func=cst.Attribute(cst.Name("DETECTOR"), cst.Name(method)), args=args)


def hook_call(call: cst.Call, name: str, number: int) -> cst.Call:
    """``DETECTOR.hook_func(f, 'name', n, <the original arguments, as written>)``. The space
    after the original ``(`` goes after our arguments, so a call keeps its line breaks."""
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    args = list(call.args)
    callee_space = call.whitespace_after_func
    callee = cst.Arg(
        call.func,
        comma=comma,
        whitespace_after_arg=callee_space
        if isinstance(callee_space, cst.ParenthesizedWhitespace)
        else cst.SimpleWhitespace(""),
    )
    label = cst.Arg(cst.SimpleString(repr(name)), comma=comma)
    opening = call.whitespace_before_args
    if args:
        space = cst.SimpleWhitespace(" ") if opening.empty else opening
        counter = cst.Arg(cst.Integer(str(number)), comma=cst.Comma(whitespace_after=space))
        args = _parenthesized_generator(args)
    else:
        counter = cst.Arg(cst.Integer(str(number)), whitespace_after_arg=opening)
    return cst.Call(
        func=cst.Attribute(cst.Name("DETECTOR"), cst.Name("hook_func")),
        args=[callee, label, counter, *args],
        lpar=call.lpar,
        rpar=call.rpar,
    )


def _parenthesized_generator(args: List[cst.Arg]) -> List[cst.Arg]:
    """``f(x for x in y)`` -> ``..., (x for x in y))``: a bare generator must be the sole argument."""
    if len(args) == 1 and isinstance(args[0].value, cst.GeneratorExp) and not args[0].value.lpar:
        generator = args[0].value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return [args[0].with_changes(value=generator)]
    return args


def with_detector_import(module: cst.Module) -> Tuple[cst.Module, Optional[int]]:
    """The module with the DETECTOR import on an existing line when possible, and the line
    number it took in the copy when it needed a line of its own (else None)."""
    statement = cst.parse_statement(DETECTOR_IMPORT + "\n").body[0]
    body = list(module.body)
    line_index, position = _import_spot(body)
    if line_index is None:
        body.insert(0, cst.SimpleStatementLine([statement]))
        return module.with_changes(body=body), len(module.header) + 1
    line = body[line_index]
    small = list(line.body)
    small.insert(position, statement)  # libcst writes the "; " between statements
    body[line_index] = line.with_changes(body=small)
    return module.with_changes(body=body), None


def _import_spot(body) -> Tuple[Optional[int], int]:
    """(statement line, position in it) for the import: after the leading docstring and
    ``__future__`` imports, else before the first statement; (None, 0) if that one is compound."""
    spot: Tuple[Optional[int], int] = (None, 0)
    for index, line in enumerate(body):
        if not isinstance(line, cst.SimpleStatementLine):
            break
        leading = 0
        for small in line.body:
            if not (_is_docstring(small, index == 0 and leading == 0) or _is_future_import(small)):
                break
            leading += 1
        if leading == 0:
            break
        spot = (index, leading)
        if leading < len(line.body):
            break
    if spot[0] is None and body and isinstance(body[0], cst.SimpleStatementLine):
        return 0, 0
    return spot


def _is_docstring(small, first_statement: bool) -> bool:
    return (
        first_statement
        and isinstance(small, cst.Expr)
        and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_future_import(small) -> bool:
    return (
        isinstance(small, cst.ImportFrom)
        and not small.relative
        and small.module is not None
        and dotted_name(small.module) == "__future__"
    )

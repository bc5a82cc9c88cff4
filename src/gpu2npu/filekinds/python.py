"""Python source: migrated by gpu2npu.rewrite and analysed by gpu2npu.apis (the worker runs both).
A ``setup.py`` also declares the project's dependencies: they join the dependency plan. An
environment variable an EnvVarReportRule knows is reported where a string literal names it
(``os.environ['NCCL_SOCKET_IFNAME'] = ...``), as where a launcher exports it, and an attribute
an AttributeReportRule knows where it is read (``x.is_cuda``), a name a GateReportRule knows where
it decides a branch (``if torch.version.cuda:``), a literal a StringReportRule knows where it is
written (``'torch.cuda.FloatTensor'``). A command a CommandReportRule knows
is reported where the code runs it (``os.popen("nvidia-smi -L")``, ``subprocess.run(["nvidia-smi",
...])``), as where a launcher does."""

from __future__ import annotations

import ast
import shlex
from typing import List, Optional

from gpu2npu.filekinds import PYTHON, FileKind
from gpu2npu.filekinds.base import Reported
from gpu2npu.filekinds.packaging import setup_py_dependencies
from gpu2npu.filekinds.shell import reported_command, shell_tables
from gpu2npu.rules.index import ANY_RECEIVER
from gpu2npu.source.imports import file_imports, qualify
from gpu2npu.source.names import dotted
from gpu2npu.source.parse import module_nodes, parse_ast

SETUP_SCRIPT = "setup.py"
# the standard library's ways to run a command: its first argument is the command line
COMMAND_RUNNERS = frozenset(
    ["os.system", "os.popen"]
    + [
        f"subprocess.{name}"
        for name in ("run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput")
    ]
)


def declared_dependencies(data: bytes, rel: str, index, tree=None):
    """(plan rows, reported items) of the requirements a setup.py declares; none elsewhere."""
    if rel.rsplit("/", 1)[-1] != SETUP_SCRIPT or b"require" not in data:
        return [], []
    return setup_py_dependencies(data, index, tree)


def python_reports(data: bytes, index, tree=None, kept=()) -> List[Reported]:
    """What the reporting rules find in Python code: variables (EnvVarReportRule), literals
    (StringReportRule), attribute reads (AttributeReportRule) and names that decide a branch
    (GateReportRule); the file is parsed here only if a byte scan finds one of them and the run
    has not parsed it yet."""
    tables = shell_tables(index)
    words = list(tables.reported_names) + [prefix for prefix, _ in tables.reported_prefixes]
    literals = {text: rule for rule in index.rules_of("StringReportRule") for text in rule["texts"]}
    named = any(word.encode() in data for word in words + list(literals))
    commands = any(command.encode() in data for command in tables.commands)
    attributes = {rule["attribute"]: rule for rule in index.rules_of("AttributeReportRule")}
    attributes = {name: rule for name, rule in attributes.items() if f".{name}".encode() in data}
    gates = {rule["name"]: rule for rule in index.rules_of("GateReportRule") if _may_name(data, rule["name"])}
    if not (named or commands or attributes or gates):
        return []
    if tree is None and (tree := parse_ast(data)) is None:
        return []
    rows = _literals_reported(tree, tables, literals) if named else []
    rows += _commands_reported(tree, tables) if commands else []
    rows += _gates_reported(tree, gates) if gates else []
    return sorted(rows + (_attributes_reported(tree, attributes, kept) if attributes else []))


def _may_name(data: bytes, name: str) -> bool:
    """Whether the bytes hold every part of a qualified name (however the file imports it)."""
    return all(part.encode() in data for part in name.split("."))


def _literals_reported(tree, tables, literals) -> List[Reported]:
    """A row for each string literal that is a variable an EnvVarReportRule reports, or a text a
    StringReportRule does (whole literals only, docstrings aside); a variable an EnvVarRenameRule
    renames is renamed instead."""
    prose = {id(node.value) for node in module_nodes(tree) if isinstance(node, ast.Expr)}
    rows = set()
    for node in module_nodes(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            rule = literals.get(node.value) or _variable_rule(node.value, tables)
            if rule is not None:
                where = (node.lineno, node.end_lineno)
                rows.add(Reported(*where, node.value, rule["tip"], rule.id, rule["category"]))
    return list(rows)


def _variable_rule(text: str, tables):
    return None if text in tables.renames else tables.reported_variable(text)


def _commands_reported(tree, tables) -> List[Reported]:
    """A row for each command a CommandReportRule reports that the code runs through the standard
    library (COMMAND_RUNNERS), given as a literal command line or argument list."""
    imports = file_imports(tree)
    rows = set()
    for node in module_nodes(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        if qualify(dotted(node.func) or "", imports) not in COMMAND_RUNNERS:
            continue
        words = _command_words(node.args[0])
        if not words:
            continue
        found = reported_command(tables, words[0], words[1:])
        if found is not None:
            rule, subject = found
            where = (node.lineno, node.end_lineno or node.lineno)
            rows.add(Reported(*where, subject, rule["tip"], rule.id, rule["category"]))
    return list(rows)


def _command_words(node: ast.AST) -> Optional[List[str]]:
    """The words of a literal command line (``"nvidia-smi -L"``, the literal start of an f-string)
    or of a literal argument list (``["nvidia-smi", "-L"]``, as far as its items are literals)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        words = []
        for item in node.elts:
            if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
                break
            words.append(item.value)
        return words
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        node = node.values[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return shlex.split(node.value)
        except ValueError:  # an unclosed quote: the first word still names the command
            return node.value.split()
    return None


def _attributes_reported(tree, rules, kept) -> List[Reported]:
    """A row for each read of an attribute an AttributeReportRule reports, but where a rule keeps
    the read (a kept guard, reported by that rule) and in modules that assign the attribute (it is
    their own objects')."""
    uses = [node for node in module_nodes(tree) if isinstance(node, ast.Attribute) and node.attr in rules]
    assigned = {node.attr for node in uses if not isinstance(node.ctx, ast.Load)}
    kept_reads = {(k.line, k.key) for k in kept}
    made_by = {name: _made_by(tree, rule["used_with"]) for name, rule in rules.items() if rule["used_with"]}
    rows = set()
    for node in uses:
        if node.attr in assigned or (node.end_lineno, ANY_RECEIVER + node.attr) in kept_reads:
            continue
        if node.attr in made_by and not _receiver_made(node.value, made_by[node.attr]):
            continue
        rule = rules[node.attr]
        where = (node.lineno, node.end_lineno)
        rows.add(Reported(*where, ast.unparse(node), rule["tip"], rule.id, rule["category"]))
    return list(rows)


def _made_by(tree, names) -> tuple:
    """(calls, receivers) of the objects the calls of ``names`` make: the calls themselves, and the
    names bound to one (``with profile() as prof``, ``prof = profile()``, ``self.prof = ...``) or
    given one as the first parameter of a function of the file passed to such a call (a handler:
    ``on_trace_ready=trace_handler``), and the parameters annotated with one of ``names``
    (torchtune's ``def trace_handler(prof: torch.profiler.profile, ...)``, passed through partial)."""
    reads = _reads_of(tree, dict.fromkeys(names, True))
    if not reads:
        return set(), set()
    calls = {id(node) for node in module_nodes(tree) if isinstance(node, ast.Call) and id(node.func) in reads}
    receivers = {
        node.arg for node in module_nodes(tree) if isinstance(node, ast.arg) and id(node.annotation) in reads
    }
    handlers = set()
    for node in module_nodes(tree):
        if isinstance(node, ast.withitem) and id(node.context_expr) in calls and node.optional_vars:
            receivers.add(dotted(node.optional_vars))
        elif isinstance(node, ast.Assign) and id(node.value) in calls:
            receivers.update(dotted(target) for target in node.targets)
        elif isinstance(node, ast.Call) and id(node) in calls:
            given = [*node.args, *(keyword.value for keyword in node.keywords)]
            handlers.update(value.id for value in given if isinstance(value, ast.Name))
    for node in module_nodes(tree):
        if isinstance(node, ast.FunctionDef) and node.name in handlers and node.args.args:
            receivers.add(node.args.args[0].arg)
    return calls, receivers - {None}


def _receiver_made(receiver, made) -> bool:
    """Whether ``receiver`` is one of the objects ``_made_by`` found."""
    calls, receivers = made
    return id(receiver) in calls or dotted(receiver) in receivers


def _gates_reported(tree, rules) -> List[Reported]:
    """A row for each read of a name a GateReportRule reports where it decides a branch (the
    reads are found first: most files have none, and then no decision is looked at)."""
    reads = _reads_of(tree, rules)
    rows = set()
    for node in _deciding_reads(tree) if reads else ():
        rule = reads.get(id(node))
        if rule is not None:
            where = (node.lineno, node.end_lineno)
            rows.add(Reported(*where, rule["name"], rule["tip"], rule.id, rule["category"]))
    return list(rows)


def _reads_of(tree, rules) -> dict:
    """By node id, the rule of each name or attribute that reads one of the rules' names."""
    last_parts = {name.rsplit(".", 1)[-1] for name in rules}
    imports = None
    reads = {}
    for node in module_nodes(tree):
        last = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
        if last in last_parts and isinstance(node, (ast.Attribute, ast.Name)):
            imports = file_imports(tree) if imports is None else imports
            rule = rules.get(qualify(dotted(node) or "", imports))
            if rule is not None:
                reads[id(node)] = rule
    return reads


def _deciding_reads(tree) -> List[ast.AST]:
    """The names and attributes read in a test (if, while, assert, conditional expression,
    comprehension filter), an operand of and / or / not, or a comparison."""
    decisions: List[ast.AST] = []
    for node in module_nodes(tree):
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            decisions.append(node.test)
        elif isinstance(node, ast.comprehension):
            decisions.extend(node.ifs)
        elif isinstance(node, (ast.BoolOp, ast.Compare)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
        ):
            decisions.append(node)
    return [node for decision in decisions for node in ast.walk(decision)]


class PythonSource(FileKind):
    name = PYTHON
    order = 0
    max_bytes = None  # the Python reader has its own limits, reported per file
    holds_code = True

    def claims(self, rel, head):
        return rel.endswith(".py")

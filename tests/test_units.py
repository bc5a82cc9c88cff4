"""Small units: the progress line, `python -m gpu2npu`, version parsing, CSV guard."""

import ast
import io
import subprocess
import sys

import libcst as cst
import pytest
from helpers import migrate

from gpu2npu.errors import UserError
from gpu2npu.project import progress
from gpu2npu.report.csvfile import csv_text
from gpu2npu.source.arguments import append_keyword
from gpu2npu.source.modules import relative_spellings, requires_a_library
from gpu2npu.source.parse import MAX_DEPTH, allow_deep_syntax, syntax_depth
from gpu2npu.versions import compact_versions, parse_version_spec, resolve_version


def test_progress_line_appears_only_after_a_moment(monkeypatch):
    clock = iter([0.0, 0.1, 0.2, 0.9, 1.5, 1.6])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    stream = io.StringIO()
    bar = progress.Progress(4, enabled=True, stream=stream)  # starts at 0.0
    bar.advance()  # 0.1: too early
    bar.advance()  # 0.2: too early
    assert stream.getvalue() == ""
    bar.advance()  # 0.9: shown
    assert stream.getvalue() == "\r[######################........] 3/4 files"
    bar.advance()  # 1.5
    bar.finish()
    assert stream.getvalue().endswith("\r" + " " * 60 + "\r")


def test_progress_is_silent_when_disabled():
    stream = io.StringIO()
    bar = progress.Progress(3, enabled=False, stream=stream)
    for _ in range(3):
        bar.advance()
    bar.finish()
    assert stream.getvalue() == ""


def test_python_dash_m_runs_the_cli():
    result = subprocess.run([sys.executable, "-m", "gpu2npu", "--version"], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (0, "gpu2npu, version 0.1.0\n")


@pytest.mark.parametrize(
    "text,version", [("2.1", "2.1.0"), ("v2.7", "2.7.1"), ("2.8.0", "2.8.0"), ("1.11", "1.11.0")]
)
def test_short_versions(text, version):
    assert resolve_version(text) == version


def test_unknown_version_is_a_user_error():
    with pytest.raises(UserError, match=r"unknown torch version '2\.0'; choose one of 1\.11\.0, 2\.1\.0"):
        resolve_version("2.0")


def test_version_ranges_and_their_compact_spelling():
    assert sorted(parse_version_spec(">=2.6, <2.8")) == ["2.6.0", "2.7.1"]
    assert compact_versions(parse_version_spec("all")) == "all"
    assert compact_versions(["2.6.0", "2.7.1", "2.8.0"]) == ">=2.6.0"
    assert compact_versions(["1.11.0", "2.1.0"]) == "<=2.1.0"
    assert compact_versions(["2.1.0", "2.2.0"]) == ">=2.1.0, <=2.2.0"
    assert compact_versions(["1.11.0", "2.2.0"]) == ["1.11.0", "2.2.0"]


def test_csv_values_that_look_like_formulas_get_a_leading_space():
    assert csv_text(["File", "Message"], [("=cmd.py", "-x"), ("a.py", 'say "hi", then')]) == (
        'File,Message\n =cmd.py, -x\na.py,"say ""hi"", then"\n'
    )


def true_depth(tree) -> int:
    deepest, pending = 0, [(tree, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


DEEP_SHAPES = {
    "additions": lambda n: "x = 1" + "+1" * n,
    "attributes": lambda n: "x = a" + ".b" * n,
    "calls": lambda n: "x = f" + "()" * n,
    "subscripts": lambda n: "x = a" + "[0]" * n,
    "unary minus": lambda n: "x = " + "-" * n + "1",
    "not": lambda n: "x = " + "not " * n + "y",
    "lambdas": lambda n: "f = " + "lambda: " * n + "0",
    "elif chain": lambda n: "if a:\n    pass\n" + "elif a:\n    pass\n" * n,
    "multi-line additions": lambda n: "x = (1\n" + "+1\n" * n + ")",
}


@pytest.mark.parametrize("shape", sorted(DEEP_SHAPES))
def test_syntax_depth_decides_the_limit_exactly(shape):
    """The bound for one-line nodes never changes the decision at MAX_DEPTH."""
    allow_deep_syntax()
    for count in range(MAX_DEPTH // 3 - 20, MAX_DEPTH + 20, 7):
        tree = ast.parse(DEEP_SHAPES[shape](count))
        assert (syntax_depth(tree) > MAX_DEPTH) == (true_depth(tree) > MAX_DEPTH), count


def test_a_lone_carriage_return_counts_as_a_line_as_python_counts_it():
    """Found by the fuzzer: a backslash continuation ended by a lone CR shifted every later line
    of the rewrite pass by one against ast's numbers, so a capability read kept on CUDA (G2N091)
    was rewritten, and a second migration rewrote the next one."""
    source = (
        b"import torch\n"
        b"x = 1 + \\\r 2\n"
        b"s = '''a\rb'''\n"
        b"p = torch.cuda.get_device_properties(0).major\n"
        b"y = torch.zeros(2).cuda()\n"
    )
    migrated = migrate(source.decode(), dedent=False).encode()
    assert migrated == source.replace(b"import torch\n", b"import torch\nimport torch_npu\n").replace(
        b".cuda()", b".npu()"
    )
    assert migrate(migrated.decode(), dedent=False).encode() == migrated


@pytest.mark.parametrize(
    "call,expected",
    [
        ("f(a)", "f(a, k=v)"),
        ("f(a, b)", "f(a, b, k=v)"),
        ("f(a,)", "f(a, k=v,)"),
        ("f(\n    a,\n)", "f(\n    a,\n    k=v,\n)"),  # one argument per line: the new one too
        ("f(\n    a,\n    b,\n)", "f(\n    a,\n    b,\n    k=v,\n)"),
        ("f(\n    a, b\n)", "f(\n    a, b, k=v\n)"),  # the closing parenthesis keeps its line
        # each argument keeps its end-of-line comment
        ("f(\n    a,  # one\n    b,  # two\n)", "f(\n    a,  # one\n    b,  # two\n    k=v,\n)"),
        ("f(\n    a,\n    b,  # two\n)", "f(\n    a,\n    b,  # two\n    k=v,\n)"),
        ("f(\n    a,  # one\n    b,\n)", "f(\n    a,  # one\n    b,\n    k=v,\n)"),
        ("f(  # call\n    a,  # one\n)", "f(  # call\n    a,  # one\n    k=v,\n)"),
    ],
)
def test_append_keyword_keeps_the_layout_of_the_arguments(call, expected):
    new = append_keyword(cst.parse_expression(call), "k", cst.Name("v"))
    assert cst.Module([]).code_for_node(new) == expected


@pytest.mark.parametrize(
    "rel,target,spellings",
    [
        ("whisper/timing.py", "whisper/triton_ops.py", {".triton_ops", "whisper.triton_ops", "triton_ops"}),
        ("train.py", "kernels.py", {".kernels", "kernels"}),
        ("a/b/c.py", "a/ops/k.py", {"..ops.k", "a.ops.k", "ops.k"}),
        ("a/c.py", "a/ops/__init__.py", {".ops", "a.ops", "ops"}),
    ],
)
def test_the_spellings_of_a_project_module_in_an_import(rel, target, spellings):
    assert relative_spellings(rel, target) == spellings


@pytest.mark.parametrize(
    "code,required",
    [
        ("import triton.language as tl\n", True),
        ("try:\n    import triton\nexcept ImportError:\n    raise RuntimeError('no triton')\n", True),
        ("try:\n    import triton\nexcept ImportError:\n    triton = None\n", False),
        ("def f():\n    import triton\n", False),
        ("from triton import jit\n", True),
        ("import tritonclient\n", False),
    ],
)
def test_a_module_requires_a_library_it_cannot_be_imported_without(code, required):
    assert requires_a_library(ast.parse(code), ["triton"]) is required

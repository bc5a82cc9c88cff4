"""A rule kind is one unit: a module of gpu2npu.rules.kinds found by walking the package, or a
RuleKind subclass defined anywhere; no central list, and the rewrite pass dispatches through
the compiled index without knowing the kind."""

import ast
import csv
import os
import subprocess
import sys
from pathlib import Path

import tiny_kind  # noqa: F401  (registers AddKeywordRule)
from helpers import migrate, write

from gpu2npu.rules.index import compile_index
from gpu2npu.rules.kind import RuleKind, kind_named, kinds
from gpu2npu.rules.loader import load_builtin_rules, load_rule_files

KINDS_DIR = Path(__file__).resolve().parent.parent / "src" / "gpu2npu" / "rules" / "kinds"
TESTS = Path(__file__).resolve().parent
RULE_FILE = """\
rules:
  AddKeywordRule:
    - id: TINY1
      func_name: mylib.launch
      keyword: device
      value: "'npu'"
"""
PROJECT = "import mylib\n\nmylib.launch(x)  # start\nmylib.launch(x, device='cpu')\n"


def kinds_defined_in(path: Path):
    """The names the kind classes of a module give themselves (``name = "..."`` in a class body)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.Assign) and getattr(item.targets[0], "id", "") == "name":
                    names.append(item.value.value)
    return names


def test_every_module_of_the_kinds_package_is_registered_and_nothing_else_lists_them():
    modules = sorted(p for p in KINDS_DIR.glob("*.py") if not p.name.startswith("_"))
    declared = {name for path in modules for name in kinds_defined_in(path)}
    assert all(len(kinds_defined_in(path)) == 1 for path in modules)  # one kind per module
    assert declared <= set(kinds())
    assert set(kinds()) - declared == {"AddKeywordRule"}  # the kind of this test, defined outside
    package = ast.parse((KINDS_DIR / "__init__.py").read_text(encoding="utf-8"))
    assert not [node for node in ast.walk(package) if isinstance(node, (ast.Import, ast.ImportFrom))]


def test_the_rewrite_pass_never_names_a_kind():
    rewrite = KINDS_DIR.parent.parent / "rewrite"
    for path in rewrite.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "rules.kinds" not in text and "rules.kind " not in text, path.name
        assert not any(f'"{name}"' in text for name in kinds()), path.name


def test_a_kind_defined_outside_the_package_registers_itself_and_rewrites(tmp_path):
    rules = load_builtin_rules()
    rules.extend(load_rule_files([write(tmp_path / "tiny.yaml", RULE_FILE)]))
    index = compile_index(rules, "2.8.0")
    assert migrate(PROJECT, index=index) == (
        "import mylib\n\nmylib.launch(x, device='npu')  # start\nmylib.launch(x, device='cpu')\n"
    )
    assert (
        kind_named("AddKeywordRule").describe(index.rules_by_id["TINY1"])
        == "mylib.launch(...) gains device='npu'"
    )
    assert isinstance(kind_named("AddKeywordRule"), RuleKind)


def test_a_kind_defined_outside_the_package_works_through_the_command_line(tmp_path):
    project = tmp_path / "proj"
    write(project / "train.py", PROJECT)
    rule_file = write(tmp_path / "tiny.yaml", RULE_FILE)
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    entry = "import sys, tiny_kind; from gpu2npu.cli import main; sys.argv[0] = 'gpu2npu'; main()"
    command = [sys.executable, "-c", entry]
    run = subprocess.run(
        command + ["migrate", "-i", str(project), "-o", str(tmp_path / "out"), "-r", str(rule_file)],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stderr
    with open(
        tmp_path / "out" / "proj_msft" / "transplant_result_file" / "change_list.csv", newline=""
    ) as handle:
        rows = list(csv.reader(handle))
    assert rows[1:] == [
        ["train.py", "3", "3", "MODIFY", "add device='npu' to mylib.launch", "TINY1", "python", ""]
    ]
    listed = subprocess.run(
        command + ["rules", "list", "-r", str(rule_file)], env=env, capture_output=True, text=True
    )
    assert "| TINY1 " in listed.stdout and "mylib.launch(...) gains device='npu'" in listed.stdout

"""Helpers shared by the tests: migrating snippets with the built-in rules, running the CLI."""

from __future__ import annotations

import ast
import csv
import functools
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from gpu2npu.apis.context import analyse_source
from gpu2npu.filekinds import KindContext, classify, file_kind_named
from gpu2npu.project.scan import ProjectScan, analysis_context
from gpu2npu.rewrite.engine import migrate_source
from gpu2npu.rewrite.kept import file_kept
from gpu2npu.rewrite.transformer import ProjectFacts
from gpu2npu.rules.index import compile_index
from gpu2npu.rules.loader import OPTIMIZATIONS, load_builtin_rules, load_rule_files
from gpu2npu.source.modules import starts_a_program
from gpu2npu.source.parse import parse_ast
from gpu2npu.styles import style_named
from gpu2npu.targets import target_named

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
NEWEST = "2.8.0"
# Every file a migration writes into transplant_result_file/.
REPORT_FILES = sorted(
    [
        "api_performance_advice.csv",
        "api_precision_advice.csv",
        "change_list.csv",
        "cuda_op_list.csv",
        "dependency_plan.csv",
        "manual_work.csv",
        "msFmkTranspltlog.txt",
        "report.html",
        "report.json",
        "skipped_files.csv",
        "unknown_api.csv",
        "unsupported_api.csv",
    ]
)


@functools.lru_cache(maxsize=None)
def builtin_index(version: str = NEWEST, style: str = "full", target: str = "npu", optimize: bool = False):
    """The built-in rules of a mode and target; ``optimize``: with every rule of rules/optimize."""
    chosen = style_named(style)
    folders = tuple(target_named(target).rules_for(chosen)) + ((OPTIMIZATIONS,) if optimize else ())
    return compile_index(load_builtin_rules(folders), version, switches=chosen.switches)


def index_with(rule_files=(), version: str = NEWEST, disabled=()):
    rules = load_builtin_rules()
    rules.extend(load_rule_files(rule_files))
    return compile_index(rules, version, disabled)


def migrate(code: str, version: str = NEWEST, index=None, dedent: bool = True) -> str:
    """The migrated text of a snippet (the snippet itself when nothing changes); a snippet that
    starts a program is the project's entry script."""
    if dedent:
        code = textwrap.dedent(code)
    entry = frozenset({"<file>"}) if starts_a_program(ast.parse(code)) else frozenset()
    project = ProjectFacts(entries=entry)
    result = migrate_source(code.encode("utf-8"), index or builtin_index(version), project)
    assert not result.skipped, result.skipped
    return result.new_bytes.decode("utf-8") if result.new_bytes is not None else code


def changes(code: str, version: str = NEWEST, index=None):
    result = migrate_source(textwrap.dedent(code).encode("utf-8"), index or builtin_index(version))
    return [(c.start_line, c.end_line, c.operation, c.message, c.rule) for c in result.changes]


def kind_context(
    version: str = NEWEST, style: str = "full", index=None, analyse: bool = False
) -> KindContext:
    """What a file kind gets in a run with the built-in rules (or ``index``); ``analyse``: a run
    that wants the API reports (of a project without C++ extensions)."""
    index = index or builtin_index(version, style)

    def migrate_python(data: bytes, rel: str):
        result = migrate_source(data, index, ProjectFacts(), rel)
        return result.new_bytes, result.changes, result.skipped, result.kept if analyse else []

    if not analyse:
        return KindContext(index, migrate_python)
    analysis = analysis_context(index, ProjectScan(ProjectFacts(), [], []))

    def analyse_python(data: bytes, rel: str):
        tree = parse_ast(data)
        return analyse_source(data, rel, tree, analysis), file_kept(data, tree, index)

    return KindContext(index, migrate_python, analyse_python)


def migrate_file(
    name: str, data: bytes, version: str = NEWEST, style: str = "full", index=None, analyse: bool = False
):
    """The KindOutcome of the file kind that claims a file named ``name`` holding ``data``."""
    kind = classify(name, len(data), lambda: data[:256])
    assert kind is not None and kind != "python", f"no file kind other than python claims {name}"
    return file_kind_named(kind).migrate(data, name, kind_context(version, style, index, analyse))


def gpu2npu_command():
    """The installed console script (tests exercise the real entry point)."""
    found = shutil.which(
        "gpu2npu", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    )
    assert found, "the gpu2npu command is not installed (pip install .)"
    return [found]


def as_unprivileged_user():
    """A command prefix under which file permissions apply: none for a normal user; for root, a
    user namespace without mappings (root there owns nothing here). None when that is refused."""
    if os.geteuid() != 0:
        return ()
    unshare = shutil.which("unshare")
    probe = unshare and subprocess.run([unshare, "-U", "true"], capture_output=True, timeout=60)
    return (unshare, "-U") if probe and probe.returncode == 0 else None


def run_cli(
    *args, cwd=None, input_text=None, env=None, command=None, timeout=300
) -> subprocess.CompletedProcess:
    return subprocess.run(
        (command or gpu2npu_command()) + [str(a) for a in args],
        cwd=cwd,
        env=env,
        input=input_text,
        stdin=None if input_text is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_cli_without(module: str, *args, cwd=None) -> subprocess.CompletedProcess:
    """The CLI in an interpreter where ``import <module>`` fails, as if it were not installed."""
    code = (
        f"import sys; sys.modules[{module!r}] = None; "
        "from gpu2npu.cli import main; sys.argv[0] = 'gpu2npu'; main()"
    )
    return run_cli(*args, cwd=cwd, command=[sys.executable, "-c", code])


def tree_files(root: Path) -> dict:
    """{relative path: bytes} of every regular file under root (links as 'LINK -> target')."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            files[rel] = f"LINK -> {os.readlink(path)}".encode()
        elif path.is_file():
            files[rel] = path.read_bytes()
    return files


def write(path: Path, data, mode=None) -> Path:
    """Write text or bytes (creating folders), optionally with a permission mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    if mode is not None:
        path.chmod(mode)
    return path


def rows(path: Path) -> list:
    """The rows of a CSV report, header first."""
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def python_change_rows(path: Path) -> list:
    """The rows of a change_list.csv of Python files only, header first, without the columns
    File Kind and Cell (checked here: python, and no cell)."""
    table = rows(path)
    assert table[0][6:] == ["File Kind", "Cell"]
    assert all(row[6:] == ["python", ""] for row in table[1:]), table
    return [row[:6] for row in table]

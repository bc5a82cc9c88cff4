"""The layout holds: imports point one way (commands -> modes -> project service -> rewrite and
API analysis -> rules -> API support -> source reading), no module is part of an import cycle,
nothing imports a command, and every module imports on its own in a fresh interpreter."""

import ast
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "gpu2npu"
RUNTIME = PACKAGE / "modes" / "dynamic_shape" / "runtime"  # copied into user projects, imports no gpu2npu
STANDIN = PACKAGE / "standin"
STANDIN_SITE = STANDIN / "site"  # the torch_npu stand-in: importable as torch_npu, not a gpu2npu module
# The top-level units, from the top down; an import may only go to a lower rank or stay inside its unit.
RANKS = {
    "__main__": -1,
    "cli": 0,
    "commands": 1,
    "modes": 2,
    "project": 3,
    "report": 3,
    "filekinds": 3.5,  # read by the project service; built on rewrite (changes) and rules
    "rewrite": 4,
    "apis": 4,
    "styles": 4,
    "targets": 4,  # what the tree runs on: a rule set, read like the styles
    "rules": 5,
    "api_support": 6,
    "source": 7,
    "versions": 7,
    "options": 7,
    "standin": 7,
    "registry": 7.5,  # units found by registration (styles, targets)
    "errors": 8,
    "__init__": 8,
}


def module_name(path: Path) -> str:
    parts = ["gpu2npu", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> Dict[str, Path]:
    return {
        module_name(p): p
        for p in sorted(PACKAGE.rglob("*.py"))
        if RUNTIME not in p.parents and STANDIN_SITE not in p.parents
    }


def imported(path: Path, name: str, known: Set[str]) -> Set[str]:
    """The gpu2npu modules a module imports anywhere (functions included): the module named by
    ``import``/``from``, or ``from package import module`` when that names a module."""
    found = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {target for target in found if target in known and target != name}


def import_graph() -> Dict[str, Set[str]]:
    known = modules()
    return {name: imported(path, name, set(known)) for name, path in known.items()}


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def cycle_in(graph: Dict[str, Set[str]]) -> List[str]:
    """One import cycle, as the list of modules on it, or []."""
    state: Dict[str, int] = {}
    stack: List[str] = []

    def visit(node: str) -> List[str]:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return stack[stack.index(target) :] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_no_import_cycle_anywhere():
    assert cycle_in(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]


def test_every_unit_has_a_rank():
    assert {unit(name) for name in modules()} <= set(RANKS)


def test_imports_point_down_the_layers():
    wrong = [
        f"{source} -> {target}"
        for source, targets in import_graph().items()
        for target in targets
        if unit(source) != unit(target) and RANKS[unit(target)] <= RANKS[unit(source)]
    ]
    assert wrong == []


def test_only_the_command_line_imports_a_command():
    importers = {
        source for source, targets in import_graph().items() if any(unit(t) == "commands" for t in targets)
    }
    assert {unit(source) for source in importers} <= {"cli", "commands"}
    commands = [name for name in modules() if unit(name) == "commands" and name.count(".") == 2]
    for name in commands:  # and no command imports another
        others = {t.split(".")[2] for t in import_graph()[name] if unit(t) == "commands"}
        assert others <= {name.split(".")[2]}, name


def test_source_reading_imports_nothing_of_gpu2npu_but_errors():
    for name, targets in import_graph().items():
        if unit(name) == "source":
            assert {unit(t) for t in targets} <= {"source", "errors"}, name


def test_the_dynamic_shape_runtime_imports_nothing_of_gpu2npu():
    for path in RUNTIME.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level]
        assert not [n for n in names if n.split(".")[0] == "gpu2npu"], path


def test_the_torch_npu_standin_imports_nothing_of_gpu2npu():
    """The stand-in runs in the user's environment as torch_npu, and migrating never needs it:
    neither its site/ package nor gpu2npu.standin itself imports gpu2npu (nor climbs out of its
    package with a relative import)."""
    paths = sorted(STANDIN.rglob("*.py"))
    assert STANDIN / "__init__.py" in paths and STANDIN_SITE / "torch_npu" / "__init__.py" in paths
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level]
        assert not [n for n in names if n.split(".")[0] == "gpu2npu"], path
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 1], path


def test_only_the_run_command_uses_the_standin_and_it_needs_no_migration_code():
    graph = import_graph()
    users = {source for source, targets in graph.items() if any(unit(t) == "standin" for t in targets)}
    assert users <= {"gpu2npu.commands.run"}
    assert graph["gpu2npu.commands.run"] <= {"gpu2npu.standin", "gpu2npu.errors"}


def test_every_module_imports_first_in_a_fresh_interpreter():
    """Each module imported as the first gpu2npu module of the process: an import cycle that
    only bites from some entry points fails here."""
    script = (
        "import importlib, sys\n"
        f"for name in {sorted(modules())!r}:\n"
        "    for loaded in [m for m in sys.modules if m == 'gpu2npu' or m.startswith('gpu2npu.')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr

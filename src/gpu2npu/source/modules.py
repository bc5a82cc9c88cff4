"""The dotted module names of a project's files, as its own imports spell them."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from gpu2npu.source.names import within


def package_prefix(root: Path) -> str:
    """The dotted package the input root is part of ('' unless it holds an __init__.py), so
    that ``-i repo/pkg`` names its modules 'pkg.x' as the project's own imports do."""
    names: List[str] = []
    directory = root.resolve()
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        names.append(directory.name)
        directory = directory.parent
    return ".".join(reversed(names))


def own_packages(rels: Iterable[str], prefix: str = "") -> FrozenSet[str]:
    """The top-level packages the project's files make importable: a folder holding an
    __init__.py at the root or in ``src/`` (the src layout), and the root's own package
    (``prefix``, package_prefix) where the input is one."""
    inits = [rel.split("/") for rel in rels if rel.endswith("/__init__.py")]
    found = {parts[0] for parts in inits if len(parts) == 2}
    found |= {parts[1] for parts in inits if len(parts) == 3 and parts[0] == "src"}
    if prefix:
        found.add(prefix.split(".", 1)[0])
    return frozenset(found)


def module_name(rel: str, prefix: str = "") -> Tuple[str, bool]:
    """'models/layers.py' -> ('models.layers', False); 'models/__init__.py' -> ('models', True)."""
    parts = rel[: -len(".py")].split("/") if rel.endswith(".py") else rel.split("/")
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(part for part in (prefix, *parts) if part), is_package


def import_root_depth(rel: str, packages: Set[str]) -> int:
    """How many leading folders of ``rel`` lie above its import root (the highest folder
    without __init__.py on the way down to it)."""
    directories = rel.split("/")[:-1]
    depth = len(directories)
    while depth > 0 and "/".join(directories[:depth]) in packages:
        depth -= 1
    return depth


def module_names(files: Iterable[str], packages: Set[str], prefix: str = "") -> Dict[str, str]:
    """rel path -> module name, starting below each file's import root; ``packages``: folders
    (rel POSIX, '' for the root) holding an __init__.py; ``prefix``: the root's own package
    name when the root is a package."""
    names = {}
    for rel in files:
        depth = import_root_depth(rel, packages)
        module = ([prefix] if prefix and depth == 0 else []) + rel[:-3].split("/")[depth:]
        if module[-1] == "__init__":
            module = module[:-1]
        names[rel] = ".".join(module) if module else "__init__"
    return names


def builds_a_package(rel: str, data: bytes) -> bool:
    """A packaging script (``setup.py``, or one importing setuptools): pip runs it in an isolated
    build environment that has torch but no torch_npu, so it is no program of the project
    (fairseq's ``setup.py`` ends in a ``__main__`` guard)."""
    return rel.rsplit("/", 1)[-1] == "setup.py" or _SETUPTOOLS.search(data) is not None


def initialises_a_package(rel: str) -> bool:
    """A package's ``__init__.py``: imported, never run (``python -m pkg`` runs ``__main__.py``),
    though a loop at its top level imports plugins (fairseq's ``optim/__init__.py``)."""
    return rel.rsplit("/", 1)[-1] == "__init__.py"


_SETUPTOOLS = re.compile(rb"^[ \t]*(?:import|from)[ \t]+setuptools\b", re.MULTILINE)


def is_script(tree: ast.AST) -> bool:
    """The file runs as a program: ``if __name__ == "__main__":`` at module level."""
    return main_guard(tree) is not None


def main_guard(tree: ast.AST) -> Optional[ast.If]:
    """The module-level ``if __name__ == "__main__":``, None where there is none (``!=`` guards
    what runs on import: open_clip's tests/util_test.py)."""
    for node in getattr(tree, "body", []):
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and len(node.test.comparators) == 1
            and isinstance(node.test.ops[0], ast.Eq)
        ):
            sides = [node.test.left, node.test.comparators[0]]
            named = any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
            if named and any(isinstance(side, ast.Constant) and side.value == "__main__" for side in sides):
                return node
    return None


MAIN_GUARD, MAIN_CALL, TOP_LEVEL = "__main__ guard", "main() call", "top-level script"
# Calls at the top level that run the program: a web demo (gradio's ``demo.queue().launch()``),
# Lightning's ``trainer.fit(model)``, a server (``app.run()``, ``uvicorn.run(app)``).
PROGRAM_CALLS = frozenset({"launch", "fit", "run", "serve_forever"})


def program_start(tree: ast.AST, package_main: bool = False) -> str:
    """How the file shows that it starts a program when run, or '': ``if __name__ ==
    "__main__":``, a module-level ``main()`` call (any module-level call in a package's
    ``__main__.py``, which ``python -m package`` runs: whisper's ``cli()``), or a script whose work
    runs at the top level: command-line arguments parsed there (``args = parser.parse_args()``) or a
    loop there (``while True:``, ``for epoch in ...``, also inside a top-level ``with`` or ``if``), or a
    call that runs the program there (PROGRAM_CALLS: ChatGLM's ``demo.queue().launch()``)."""
    if is_script(tree):
        return MAIN_GUARD
    body = getattr(tree, "body", [])
    calls = [_called_name(node) for node in body]
    if "main" in calls or (package_main and any(calls)):
        return MAIN_CALL
    if "parse_args" in calls or PROGRAM_CALLS.intersection(calls) or any(_is_loop(node) for node in body):
        return TOP_LEVEL
    return ""


def _is_loop(node: ast.stmt) -> bool:
    """A loop, also inside a top-level ``with`` or ``if`` (nanoGPT's bench.py: ``if profile:``
    one loop, ``else:`` another)."""
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return any(_is_loop(child) for child in node.body)
    if isinstance(node, ast.If):
        return any(_is_loop(child) for child in node.body + node.orelse)
    return isinstance(node, (ast.For, ast.AsyncFor, ast.While))


def starts_a_program(tree: ast.AST) -> bool:
    return bool(program_start(tree))


def _called_name(node: ast.stmt) -> str:
    """The name or method called by a module-level ``f()`` or ``x = obj.f()`` statement."""
    value = node.value if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
    if not isinstance(value, ast.Call):
        return ""
    function = value.func
    return function.id if isinstance(function, ast.Name) else getattr(function, "attr", "")


def requires_a_library(tree: ast.Module, libraries: Iterable[str]) -> bool:
    """Whether importing the module needs one of ``libraries``: its body imports one, directly or
    in a ``try`` whose handlers all raise (whisper's triton_ops: ``except ImportError: raise
    RuntimeError(...)``); an import with a fallback does not count."""
    libraries = tuple(libraries)
    for statement in tree.body:
        block = [statement]
        if isinstance(statement, ast.Try) and statement.handlers:
            if not all(
                handler.body and isinstance(handler.body[-1], ast.Raise) for handler in statement.handlers
            ):
                continue
            block = statement.body
        if any(imports_one_of(inner, libraries) for inner in block):
            return True
    return False


def imports_one_of(statement: ast.stmt, libraries: Iterable[str]) -> bool:
    """Whether ``statement`` is an absolute import of one of ``libraries`` or of a submodule."""
    if isinstance(statement, ast.Import):
        names = [alias.name for alias in statement.names]
    elif isinstance(statement, ast.ImportFrom) and not statement.level and statement.module:
        names = [statement.module] + [f"{statement.module}.{alias.name}" for alias in statement.names]
    else:
        return False
    return any(within(name, library) for name in names for library in libraries)


def relative_spellings(rel: str, target: str) -> Set[str]:
    """How the file at ``rel`` may spell the module of the file at ``target`` in an import:
    relatively (``.triton_ops``, ``..ops.kernels``), by its dotted path and that path's tails
    of two or more parts (a ``src/`` layout), and by its bare name beside it or at the root."""
    here = rel.split("/")[:-1]
    name, _ = module_name(target)
    parts = name.split(".") if name else []
    common = 0
    while common < min(len(here), len(parts) - 1) and here[common] == parts[common]:
        common += 1
    spellings = {"." * (len(here) - common + 1) + ".".join(parts[common:])}
    spellings |= {".".join(parts[start:]) for start in range(len(parts) - 1)}
    if parts and (len(parts) == 1 or parts[:-1] == here):
        spellings.add(parts[-1])
    return spellings

"""Python source: migrated by gpu2npu.rewrite and analysed by gpu2npu.apis (the worker runs both).
A ``setup.py`` also declares the project's dependencies: they join the dependency plan."""

from __future__ import annotations

from gpu2npu.filekinds import PYTHON, FileKind
from gpu2npu.filekinds.packaging import setup_py_dependencies

SETUP_SCRIPT = "setup.py"


def declared_dependencies(data: bytes, rel: str, index, tree=None):
    """(plan rows, reported items) of the requirements a setup.py declares; none elsewhere."""
    if rel.rsplit("/", 1)[-1] != SETUP_SCRIPT or b"require" not in data:
        return [], []
    return setup_py_dependencies(data, index, tree)


class PythonSource(FileKind):
    name = PYTHON
    order = 0
    max_bytes = None  # the Python reader has its own limits, reported per file
    holds_code = True

    def claims(self, rel, head):
        return rel.endswith(".py")

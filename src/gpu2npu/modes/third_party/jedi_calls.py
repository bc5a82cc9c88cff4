"""jedi for the calls the ast could not place (``model.step()`` on an object whose class only
inference can tell). jedi is optional: without it these calls stay unfollowed and the run says
so. Unlike msFmkTransplt, jedi keeps the interpreter's own search path (installed packages
resolve) plus the library's source roots and the -env paths, and its cache lives in a
temporary folder that is always removed."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Tuple

from gpu2npu.modes.third_party.callgraph import CallGraph, OpenCall

# Searching every call site of a function to guess its parameters' types costs seconds per
# lookup on a large library; parameters are typed by annotations and defaults instead.
FAST_SETTINGS = {"dynamic_params": False, "dynamic_params_for_other_modules": False, "cache_directory": None}


@dataclass
class JediOutcome:
    available: bool
    asked: int = 0  # open calls looked up
    placed: int = 0  # of which jedi found a library function
    failed: int = 0  # lookups jedi raised on (kept as unplaced)


def place_open_calls(
    graph: CallGraph, root: Path, sources: Dict[str, str], search_paths: Iterable[Path]
) -> JediOutcome:
    """Add the edges jedi finds for ``graph.open_calls``; ``sources``: rel path -> text."""
    try:
        import jedi
    except ImportError:
        return JediOutcome(available=False)
    outcome = JediOutcome(available=True)
    definitions = _definitions_by_position(graph)
    saved = {name: getattr(jedi.settings, name) for name in FAST_SETTINGS}
    with tempfile.TemporaryDirectory(prefix="gpu2npu-jedi-") as cache:
        for name, value in FAST_SETTINGS.items():
            setattr(jedi.settings, name, value)
        jedi.settings.cache_directory = cache
        try:
            project = jedi.Project(
                path=str(root), added_sys_path=[str(p) for p in search_paths], smart_sys_path=True
            )
            scripts: Dict[str, object] = {}
            for call in graph.open_calls:
                outcome.asked += 1
                try:
                    callees = _callees(jedi, project, scripts, call, root, sources, definitions)
                except Exception:  # jedi raises on code it cannot infer; the call stays unplaced
                    outcome.failed += 1
                    continue
                for callee in callees:
                    graph.add_edge(call.caller, callee)
                outcome.placed += bool(callees)
        finally:
            for name, value in saved.items():
                setattr(jedi.settings, name, value)
    return outcome


def _definitions_by_position(graph: CallGraph) -> Dict[Tuple[str, int], str]:
    """(file, line of the def/class statement) -> the function a call of it runs."""
    found = {(f.file, f.start): f.name for f in graph.functions.values()}
    for cls in graph.classes.values():
        constructor = graph.constructor(cls.name)
        if constructor is not None:
            found[(cls.file, cls.line)] = constructor
    return found


def _callees(jedi, project, scripts, call: OpenCall, root: Path, sources, definitions) -> List[str]:
    """Every library function the call may run: jedi names one definition per class the receiver
    may be (``(Fast if fast else Slow)()``), in an order that varies between runs, so all of them
    are kept, sorted."""
    if call.file not in scripts:  # one jedi script and one split into lines per file
        script = jedi.Script(sources[call.file], path=str(root / call.file), project=project)
        scripts[call.file] = (script, sources[call.file].splitlines())
    script, lines = scripts[call.file]
    line_text = lines[call.line - 1]
    column = len(line_text.encode("utf-8")[: call.column].decode("utf-8", "replace"))  # ast counts bytes
    found = set()
    for name in script.goto(call.line, column, follow_imports=True):
        if name.module_path is None or name.line is None:
            continue
        try:
            rel = Path(name.module_path).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            continue  # defined outside the library
        found.add(definitions.get((rel, name.line)))
    return sorted(found - {None, call.caller})

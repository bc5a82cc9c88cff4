"""``gpu2npu analyse``: pre-migration analysis, written to ``OUTPUT/<name>_analysis/``.

The mode (gpu2npu.modes) writes its files into a temporary tree; this module checks the
paths, adds the log ``pytorch_analysis.txt`` and ``report.json``, and puts the tree in place
atomically. The input is only read.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpu2npu import __version__
from gpu2npu.errors import UserError, shown
from gpu2npu.modes import (
    ANALYSIS_SUFFIX,
    API_FILES,
    ENV_PATHS,
    LOG_FILE,
    SUMMARY_FILE,
    AnalyseRequest,
    ModeResult,
    mode_named,
    modes_taking,
)
from gpu2npu.options import OutputOptions
from gpu2npu.project.output import AtomicTree
from gpu2npu.project.paths import destination


def run_analysis(request: AnalyseRequest, output: OutputOptions, mode_name: str):
    mode = mode_named(mode_name)
    _check_inputs_are_used(request, mode)
    for path in request.env_paths:
        if not path.is_dir():
            raise UserError(
                f"-env path '{path}' is not a directory", "pass existing directories to search for imports"
            )
    options = request.options
    target = destination(options.input, output, ANALYSIS_SUFFIX)
    with AtomicTree.building(target, output.force) as tree:
        result: ModeResult = mode.run(request, tree)
        summary = {
            "tool": "gpu2npu",
            "tool_version": __version__,
            "command": "analyse",
            "mode": mode.name,
            "torch_version": options.version,
            "input": options.input.name,
            "api_files": [Path(p).name for p in request.api_files],
            "env_paths": [str(p) for p in request.env_paths],
            "report_rows": dict(result.reports),
            "skipped_files": [{"file": rel, "reason": reason} for rel, reason in result.skipped],
            **result.summary,
        }
        _write_new(tree, SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
        _write_new(tree, LOG_FILE, _log(summary, result))
    return target, summary, result


def _check_inputs_are_used(request: AnalyseRequest, mode) -> None:
    """-api and -env given to a mode that does not read them would be silently unused."""
    if request.api_files and API_FILES not in mode.takes:
        users = " and -m ".join(modes_taking(API_FILES))
        raise UserError(
            f"-api is used by -m {users}, not by -m {mode.name}", "drop -api or choose one of those modes"
        )
    if request.env_paths and ENV_PATHS not in mode.takes:
        users = " and -m ".join(modes_taking(ENV_PATHS))
        raise UserError(
            f"-env is used by -m {users} only, not by -m {mode.name}", f"drop -env or use -m {users}"
        )


def _write_new(tree: AtomicTree, name: str, text: str) -> None:
    """Write a file of ours; a mode that copies the project (dynamic_shape) may not have
    left one of that name (it refuses such projects up front)."""
    path = tree.path(name)
    assert not path.exists(), f"{name} written twice"
    path.write_text(shown(text), encoding="utf-8")


def _log(summary: dict, result: ModeResult) -> str:
    lines = [
        f"gpu2npu {__version__} analyse -m {summary['mode']}: "
        f"input {summary['input']}, torch {summary['torch_version']}",
        f"-api files: {', '.join(summary['api_files']) or '(none)'}",
    ]
    if summary["env_paths"]:
        lines.append(f"-env paths: {', '.join(summary['env_paths'])}")
    lines += [f"{name}: {count} row(s)" for name, count in summary["report_rows"].items()]
    lines += [f"{rel}: skipped: {reason}" for rel, reason in result.skipped]
    lines += result.log
    return "\n".join(lines) + "\n"

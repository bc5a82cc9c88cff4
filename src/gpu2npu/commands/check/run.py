"""One `gpu2npu check` run: analyse the paths (reading only), filter, rank, decide the exit code."""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from gpu2npu.apis.judge import file_verdicts
from gpu2npu.commands.check.baseline import new_findings, read_baseline, write_baseline
from gpu2npu.commands.check.findings import FAIL_ON, Finding, findings_of
from gpu2npu.commands.check.suppress import is_suppressed
from gpu2npu.options import ProjectOptions
from gpu2npu.project.service import analyse_project
from gpu2npu.source.git_changes import changed_since
from gpu2npu.source.selection import Selection


@dataclass
class CheckResult:
    findings: List[Finding]  # what is shown: not suppressed, not in the baseline
    summary: dict
    fail_rank: int

    def failing(self, finding: Finding) -> bool:
        return finding.rank >= self.fail_rank

    @property
    def exit_code(self) -> int:
        return 1 if any(self.failing(f) for f in self.findings) else 0


def run_check(
    paths: Sequence[Path],
    version: str,
    rule_files: Sequence[str] = (),
    fail_on: str = "unsupported",
    baseline: Optional[Path] = None,
    update_baseline: bool = False,
    selected: tuple = ((), (), True),  # (includes, excludes, default excludes)
    jobs: int = 0,
    progress: bool = False,
    style: str = "full",
    entries: Sequence[Path] = (),
    target: str = "npu",
    changed_since_ref: Optional[str] = None,
    cache_dir: Optional[Path] = None,
    optimize: Tuple[str, ...] = (),
) -> CheckResult:
    findings: List[Finding] = []
    python_files = converted = 0
    for path in paths:
        root = path if path.is_dir() else path.parent
        prefix = _display_prefix(root)
        only = changed_since(root, changed_since_ref) if changed_since_ref is not None else None
        options = ProjectOptions(
            path,
            version,
            tuple(rule_files),
            (),
            jobs,
            progress=progress,
            style=style,
            target=target,
            entries=tuple(entries),
            selection=Selection(*selected, prefix, only),
            cache_dir=cache_dir,
            optimize=optimize,
        )
        run = analyse_project(options, other_kinds=True)
        lines = SourceLines(run.plan.root)
        verdicts = file_verdicts(run.code_results, run.apis)
        python_files += len(verdicts)
        converted += sum(1 for v in verdicts.values() if v["status"] in ("fully migrated", "needs testing"))
        for finding in findings_of(run, lines):
            if not _suppressed(finding, lines):
                findings.append(replace(finding, file=prefix + finding.file))
    findings.sort()
    summary = {
        "torch_version": version,
        "python_files": python_files,
        "readiness": converted / python_files if python_files else 1.0,
    }
    if update_baseline:
        write_baseline(baseline, findings)
    elif baseline is not None:
        findings = new_findings(findings, read_baseline(baseline))
    return CheckResult(findings, summary, FAIL_ON[fail_on])


def _display_prefix(root: Path) -> str:
    """Paths are shown relative to the working directory (what SARIF and annotations expect)."""
    rel = os.path.relpath(root.resolve(), Path.cwd().resolve())
    return "" if rel == "." else Path(rel).as_posix() + "/"


class SourceLines:
    """Line texts of the project's files, read on first use: only files with findings are read,
    and only the last few read are kept (findings come file by file; all of Megatron-LM's lines
    held at once were a fifth of check's memory)."""

    KEPT = 16

    def __init__(self, root: Path):
        self.root = root
        self._cache: "OrderedDict[str, List[str]]" = OrderedDict()

    def get(self, rel: str, default=None) -> List[str]:
        if rel in self._cache:
            self._cache.move_to_end(rel)
        else:
            try:
                self._cache[rel] = (self.root / rel).read_bytes().decode("utf-8", "replace").splitlines()
            except OSError:
                self._cache[rel] = []
            if len(self._cache) > self.KEPT:
                self._cache.popitem(last=False)
        return self._cache[rel] or (default if default is not None else [])


def _suppressed(finding: Finding, lines: SourceLines) -> bool:
    text = lines.get(finding.file, [])
    return 0 < finding.line <= len(text) and is_suppressed(finding, text[finding.line - 1])

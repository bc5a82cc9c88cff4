"""Walk the input once and decide what becomes of each path.

Paths are visited in sorted order, so reports are the same on every machine. Symbolic links
are recorded and recreated as links, never followed; a link leading outside the input is
noted in the report.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

PYTHON, COPY, LINK, DIRECTORY = "python", "copy", "link", "directory"
REPORT_DIR = "transplant_result_file"


@dataclass(frozen=True)
class Entry:
    rel: str  # POSIX path relative to the input root
    kind: str
    size: int = 0
    link_target: str = ""


@dataclass
class Plan:
    root: Path  # the input directory (for a single file: its parent)
    entries: List[Entry] = field(default_factory=list)
    notes: List[tuple] = field(default_factory=list)  # (rel, what happened) for the report

    def of_kind(self, kind: str) -> List[Entry]:
        return [entry for entry in self.entries if entry.kind == kind]

    def python_largest_first(self) -> List[Entry]:
        """The Python files, biggest first: workers then finish at about the same time."""
        return sorted(self.of_kind(PYTHON), key=lambda entry: -entry.size)


def plan_input(input_path: Path) -> Plan:
    if input_path.is_file():
        plan = Plan(root=input_path.parent)
        plan.entries.append(Entry(input_path.name, PYTHON, input_path.stat().st_size))
        return plan
    plan = Plan(root=input_path)
    _walk(plan, input_path, "")
    return plan


def _walk(plan: Plan, directory: Path, prefix: str) -> None:
    try:
        children = sorted(os.scandir(directory), key=lambda item: item.name)
    except OSError as exc:
        plan.notes.append((prefix or ".", f"directory cannot be read ({exc.strerror}); not copied"))
        return
    for child in children:
        rel = prefix + child.name
        if rel == REPORT_DIR:
            plan.notes.append((rel, _report_dir_note(child)))
        elif child.is_symlink():
            plan.entries.append(_link_entry(plan, child, rel))
        elif child.is_dir():
            plan.entries.append(Entry(rel, DIRECTORY))
            _walk(plan, Path(child.path), rel + "/")
        elif child.is_file():
            kind = PYTHON if child.name.endswith(".py") else COPY
            plan.entries.append(Entry(rel, kind, child.stat().st_size))
        else:
            mode = stat.filemode(child.stat(follow_symlinks=False).st_mode)
            plan.notes.append((rel, f"special file ({mode}); not copied"))


def _report_dir_note(child: os.DirEntry) -> str:
    """The output's report folder has this name: the input's entry of that name is left out
    (never written through, if it is a link)."""
    if child.is_dir(follow_symlinks=False):
        return "reports of an earlier migration; not copied (new reports are written)"
    kind = "a symbolic link" if child.is_symlink() else "a file"
    return f"{kind} named like the report folder; not copied (the reports are written there)"


def _link_entry(plan: Plan, child: os.DirEntry, rel: str) -> Entry:
    target = os.readlink(child.path)
    try:
        resolved = Path(child.path).parent.joinpath(target).resolve(strict=False)
        resolved.relative_to(plan.root.resolve())
    except RuntimeError:  # a loop of links
        plan.notes.append((rel, f"symbolic link to {target}, a loop of links; recreated as a link"))
    except ValueError:
        plan.notes.append(
            (rel, f"symbolic link to {target}, outside the input; recreated as a link, not migrated")
        )
    return Entry(rel, LINK, link_target=target)

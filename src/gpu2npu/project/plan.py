"""Walk the input once and decide what becomes of each path.

Paths are visited in sorted order, so reports are the same on every machine. Symbolic links
are recorded and recreated as links, never followed; a link leading outside the input is
noted in the report. Each file gets its file kind (gpu2npu.filekinds); files no kind claims,
and those the user excludes, are copied as they are. Version-control folders, virtual
environments and build output are left out of the output unless the user asks for them.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from gpu2npu.filekinds import PYTHON, classify, read_head
from gpu2npu.source.selection import DEFAULT_SELECTION, Selection

COPY, LINK, DIRECTORY = "copy", "link", "directory"
REPORT_DIR = "transplant_result_file"


@dataclass(frozen=True)
class Entry:
    rel: str  # POSIX path relative to the input root
    kind: str
    size: int = 0
    link_target: str = ""
    file_kind: Optional[str] = None  # COPY entries: the kind that migrates it (None: copied as it is)
    excluded: bool = False  # the user's --exclude / --include leave it alone (copied as it is)


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

    def other_kinds(self) -> List[Entry]:
        """The files another file kind migrates (shell, configs, notebooks...)."""
        return [entry for entry in self.entries if entry.file_kind is not None]


def plan_input(input_path: Path, selection: Optional[Selection] = None) -> Plan:
    selection = selection or DEFAULT_SELECTION
    if input_path.is_file():
        plan = Plan(root=input_path.parent)
        size = input_path.stat().st_size
        file_kind = classify(input_path.name, size, _head_of(input_path)) or PYTHON
        plan.entries.append(_file_entry(input_path.name, size, file_kind))
        return plan
    plan = Plan(root=input_path)
    _walk(plan, input_path, "", selection)
    return plan


def _file_entry(rel: str, size: int, file_kind: Optional[str]) -> Entry:
    if file_kind == PYTHON:
        return Entry(rel, PYTHON, size)
    return Entry(rel, COPY, size, file_kind=file_kind)


def _head_of(path: Path):
    """The first bytes of a file, read once and only when a kind asks."""
    read: List[bytes] = []

    def head() -> bytes:
        if not read:
            read.append(read_head(path))
        return read[0]

    return head


def _walk(plan: Plan, directory: Path, prefix: str, selection: Selection) -> None:
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
            left_out = selection.left_out_folder(rel, Path(child.path))
            if left_out:
                plan.notes.append((rel, left_out))
                continue
            plan.entries.append(Entry(rel, DIRECTORY))
            _walk(plan, Path(child.path), rel + "/", selection)
        elif child.is_file():
            size = child.stat().st_size
            if selection.excluded(rel):
                plan.entries.append(Entry(rel, COPY, size, excluded=True))
            else:
                plan.entries.append(_file_entry(rel, size, classify(rel, size, _head_of(Path(child.path)))))
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

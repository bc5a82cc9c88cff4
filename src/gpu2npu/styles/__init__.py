"""Migration modes (``migrate --mode``): each is the folders of rules/ it applies, the
msFmkTransplt feature switches its rules answer to (``feature_switch`` in a rule file), and
whether its rules work on the project's entry scripts. One module per mode in this package,
found by registration (its ``STYLE``); the engine knows no mode by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, List, Tuple

from gpu2npu.registry import named, registered

DEFAULT = "full"


@dataclass(frozen=True)
class Style:
    name: str
    help: str  # one line for --help
    rule_folders: Tuple[str, ...]  # folders of rules/, "" being rules/ itself
    switches: FrozenSet[str]  # feature_switch values whose entries apply
    order: int = 0  # place in the help
    entry_scripts: bool = False  # its rules insert into the entry scripts, which must be found
    one_entry: bool = False  # exactly one entry script, named by the user (distributed: -m MAIN)
    output_suffix: str = "_msft"  # of the migrated tree: <name><suffix>
    # a script written at the output root ({main}: the main script's path, {how}, {start}, {script})
    launcher: str = ""
    launcher_name: str = ""
    # the launcher's {how}: for a script the mode made multi-card, for one that distributes itself ({setup})
    launcher_headers: Tuple[str, str] = ("", "")
    # the launcher's {start} for a script run from its own folder ({folder}, {path}: a path of it)
    launcher_start: str = ""

    def launcher_header(self, distributes_itself: str) -> str:
        """What the launcher says of the script; ``distributes_itself``: its own set-up ("" none)."""
        made, itself = self.launcher_headers
        return itself.format(setup=distributes_itself) if distributes_itself else made


_STYLES: List[Style] = []


def styles() -> List[Style]:
    """Every mode, in help order (imported once, on first use)."""
    if not _STYLES:
        _STYLES.extend(registered(__name__, __path__, "STYLE"))
    return _STYLES


def style_named(name: str) -> Style:
    return named(styles(), name, "migration mode")

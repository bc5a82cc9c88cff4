"""DependencyRule: a CUDA-only (or CUDA-specific) package a project may require, and what to do
with it on the NPU: its ``status`` (``drop-in``: an NPU build or package takes its place; ``works
as is``; ``no NPU equivalent``; ``not needed``: CUDA runtime pieces that CANN replaces), the NPU
route, the action, the step of the install order it belongs to (0: not installed on the NPU;
1 torch, 2 torch_npu, 3 packages that only need torch, 4 packages built against torch_npu) and
the known conflicts. With ``npu_since`` (transformers: 4.32.0) the package works as is from that
release on and gets no row then; a requirement that allows only older releases (SimCSE's
``transformers==4.2.1``, whose Trainer refuses ``--fp16`` off CUDA) is kept and reported with
``action``. ``package`` and ``aliases`` are pip or conda names, compared normalised
(``flash_attn`` is ``flash-attn``); a ``*`` matches any run of characters (``cupy-cuda*``).

Dependency files never drop such a requirement (the code that imports it still needs it until it
is ported): each becomes a row of the dependency plan and, unless it works as is, a reported item.
Generated from kb/cuda_only_dependencies.csv by tools/gen_rules.py.
"""

from __future__ import annotations

import re

from gpu2npu.rules.kind import FileRuleKind
from gpu2npu.rules.model import Field

STATUSES = ("drop-in", "works as is", "no NPU equivalent", "not needed")
# A pip or conda package name, possibly with '*' wildcards.
PACKAGE_PATTERN = re.compile(r"^[A-Za-z0-9*]([A-Za-z0-9._*-]*[A-Za-z0-9*])?$")


class Dependency(FileRuleKind):
    name = "DependencyRule"
    file_kind = "requirements"
    example_file = "requirements.txt"
    fields = {
        "package": Field(str, required=True, help="pip or conda name, e.g. flash-attn or cupy-cuda*"),
        "aliases": Field(list, default=[], help="other names of the same package"),
        "status": Field(str, required=True, help="drop-in, works as is, no NPU equivalent or not needed"),
        "npu_route": Field(str, required=True, help="what to install or use on the NPU"),
        "action": Field(str, required=True, help="what to do, as one sentence"),
        "install_order": Field(int, required=True, help="0 not installed, 3 needs torch, 4 needs torch_npu"),
        "conflicts": Field(str, default="", help="what must not be installed with it"),
        "source": Field(str, required=True, help="where the facts come from (kb/README.md ids)"),
        "npu_since": Field(
            str, default="", help="the first release that knows the NPU (older ones are reported)"
        ),
    }

    def validate(self, fields):
        for name in [fields["package"], *fields["aliases"]]:
            if not isinstance(name, str) or not PACKAGE_PATTERN.match(name):
                return f"{name!r} is not a package name (letters, digits, '.', '_', '-', '*')"
        if fields["status"] not in STATUSES:
            return f"'status' must be one of {', '.join(STATUSES)}, not {fields['status']!r}"
        if fields["npu_since"] and not re.fullmatch(r"[0-9]+(\.[0-9]+)*", fields["npu_since"]):
            return f"'npu_since' must be a release such as 4.32.0, not {fields['npu_since']!r}"
        if not 0 <= fields["install_order"] <= 9:
            return f"'install_order' must be a step from 0 to 9, not {fields['install_order']}"
        return None

    def describe(self, rule):
        return f"{rule['package']}: {rule['status']} ({rule['npu_route']})"

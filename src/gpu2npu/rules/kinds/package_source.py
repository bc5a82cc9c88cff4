"""PackageSourceRule: a place packages come from that serves CUDA builds, found in dependency
files and reported (never rewritten: which index to use on the NPU machine depends on its CPU
architecture). ``where`` says what ``pattern`` (a regular expression, searched) is matched
against: ``index`` an index or find-links URL (``--extra-index-url .../whl/cu118``, a poetry or
uv source), ``local_version`` the local label of a pinned version (``cu118`` of
``torchvision==0.16.0+cu118``), ``conda_channel`` a conda channel name (``nvidia``).
"""

from __future__ import annotations

import re

from gpu2npu.rules.kind import FileRuleKind
from gpu2npu.rules.model import Field

PLACES = ("index", "local_version", "conda_channel")


class PackageSource(FileRuleKind):
    name = "PackageSourceRule"
    file_kind = "requirements"
    example_file = "requirements.txt"
    fields = {
        "where": Field(str, required=True, help="index, local_version or conda_channel"),
        "pattern": Field(str, required=True, help="regular expression searched in the URL, label or channel"),
        "tip": Field(str, required=True, help="what to do instead"),
    }

    def validate(self, fields):
        if fields["where"] not in PLACES:
            return f"'where' must be one of {', '.join(PLACES)}, not {fields['where']!r}"
        try:
            re.compile(fields["pattern"])
        except re.error as exc:
            return f"'pattern' is not a regular expression ({exc})"
        return None

    def describe(self, rule):
        return f"{rule['where']} matching {rule['pattern']}: reported"

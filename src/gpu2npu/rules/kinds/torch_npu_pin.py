"""TorchNpuPinRule: the torch_npu release to install for one target torch version (``versions``),
the CANN version it needs, and the torchvision / torchaudio / torchtext releases that pair with that
torch (torchtext ``none``: no release pairs with it, torchtext's development stopped at torch 2.3).

The dependency files (requirements, conda environments, pyproject.toml, setup.cfg) pin torch to
the target version and add ``torch_npu==<torch_npu>`` next to it. Generated from
kb/torch_npu_release_matrix.csv (the newest release, by CANN version, for each torch) and
kb/torch_companion_versions.csv by tools/gen_rules.py.
"""

from __future__ import annotations

import re

from gpu2npu.rules.kind import FileRuleKind
from gpu2npu.rules.model import Field

# A release as PyPI spells it: 2.1.0, 2.1.0.post17, 2.7.1rc1.
RELEASE = re.compile(r"^[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$")
NO_RELEASE = "none"  # a companion no release of which pairs with the torch version (torchtext)
# A CANN version: 8.0.RC3, 8.1.RC1, 8.5.0, 6.3.RC3.1.
CANN = re.compile(r"^[0-9]+\.[0-9]+\.(RC[0-9]+|[0-9]+)(\.[0-9]+)?$")


class TorchNpuPin(FileRuleKind):
    name = "TorchNpuPinRule"
    file_kind = "requirements"
    example_file = "requirements.txt"
    fields = {
        "torch_npu": Field(str, required=True, help="the torch_npu release to pin, e.g. 2.1.0.post17"),
        "cann": Field(str, required=True, help="the CANN version that release needs, e.g. 8.3.RC1"),
        "torchvision": Field(str, default="", help="the torchvision release for this torch, e.g. 0.16.0"),
        "torchaudio": Field(str, default="", help="the torchaudio release for this torch, e.g. 2.1.0"),
        "torchtext": Field(str, default="", help="the torchtext release for this torch, or none"),
        "no_release_tip": Field(str, default="", help="what to do with a companion that has none"),
    }

    def validate(self, fields):
        for key in ("torch_npu", "torchvision", "torchaudio", "torchtext"):
            if fields[key] not in ("", NO_RELEASE) and not RELEASE.match(fields[key]):
                return f"'{key}' must be a release such as 2.1.0.post17, not {fields[key]!r}"
        if not CANN.match(fields["cann"]):
            return f"'cann' must be a CANN version such as 8.3.RC1, not {fields['cann']!r}"
        return None

    def describe(self, rule):
        torch = ", ".join(sorted(rule.versions))
        return f"torch {torch} -> torch_npu=={rule['torch_npu']} (CANN {rule['cann']})"

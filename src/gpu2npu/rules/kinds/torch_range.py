"""TorchRangeRule: the target torch version a tree is written for must be one its dependency
files allow. The portable target writes ``torch.accelerator`` for torch 2.6 and later (a fallback
header before): a project that pins an older torch (LLaVA's ``torch==2.1.2``) would fail at
import with the default ``-v``. The portable tree runs on CUDA as well, so nothing is pinned or
added (unlike TorchNpuPinRule): a requirement that excludes the target is reported with ``tip``,
whose ``{requirement}``, ``{target}`` and ``{instead}`` (what to migrate with instead) are filled in.

    rules:
      TorchRangeRule:
        - {id: G2N965, tip: "{requirement} excludes torch {target}: {instead}"}
"""

from gpu2npu.rules.kind import FileRuleKind
from gpu2npu.rules.model import Field

PLACES = ("requirement", "target", "instead")


class TorchRange(FileRuleKind):
    name = "TorchRangeRule"
    file_kind = "requirements"
    example_file = "requirements.txt"
    fields = {
        "tip": Field(
            str, required=True, help="what to do; {requirement}, {target} and {instead} are filled in"
        ),
    }

    def validate(self, fields):
        try:
            fields["tip"].format(**{place: "" for place in PLACES})
        except (KeyError, IndexError, ValueError) as error:
            return f"'tip' may only name {{{'}, {'.join(PLACES)}}}: {error}"
        return None

    def describe(self, rule):
        return "report a torch requirement that excludes the target version"

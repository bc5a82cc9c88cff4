"""The full migration (the default): every CUDA use rewritten for torch_npu, the rules of rules/."""

from gpu2npu.rules.loader import FULL_MIGRATION
from gpu2npu.rules.model import NORMAL_SWITCHES
from gpu2npu.styles import Style

STYLE = Style(
    name="full",
    help="rewrite every CUDA use for torch_npu (msFmkTransplt's migration)",
    rule_folders=FULL_MIGRATION,
    switches=NORMAL_SWITCHES,
    order=0,
)

"""Automatic migration (the Ascend documents' "automatic migration"): the entry scripts import
torch_npu and ``torch_npu.contrib.transfer_to_npu``, which redirects CUDA to the NPU at run
time; every other line stays, except the documented restrictions of the patcher (rules/auto/),
the APIs the target torch removed, and the CUDA environment variables (the patcher sets none)."""

from gpu2npu.styles import Style

STYLE = Style(
    name="auto",
    help="only import transfer_to_npu in the entry scripts, plus the fixes it needs (rules/auto/)",
    rule_folders=("auto", "every_mode", "removed_apis.yaml", "env.yaml"),
    switches=frozenset({"auto"}),
    order=1,
    entry_scripts=True,
)

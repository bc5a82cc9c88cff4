"""The full migration with the device index from the environment (msFmkTransplt's ``-s``):
``DEVICE_ID`` selects the card (rules/specify_device/), for launchers that start one process per
card and say which in the environment."""

from gpu2npu.rules.model import NORMAL_SWITCHES
from gpu2npu.styles import Style

STYLE = Style(
    name="specify-device",
    help="the full migration, the device index taken from $DEVICE_ID (msFmkTransplt -s)",
    rule_folders=("", "every_mode", "device_index", "specify_device"),
    switches=NORMAL_SWITCHES | {"specify_device"},
    order=2,
    entry_scripts=True,
)

"""DeviceIdStringRule: a device string with a fixed index names the index from the environment
(msFmkTransplt's ``-s``): ``'cuda:0'`` -> ``f'npu:{DEVICE_ID}'``, the name and device type of the
InsertDeviceIdRule. Only whole literals (``'cuda'`` alone already means the current device, which
the inserted statements select); docstrings, bytes and literals a rule keeps stay. A file that
names several cards (``'cuda:0'`` and ``'cuda:1'``: a model split over cards) keeps the numbers,
reported with ``tip``; so does a branch that names its card beside one that takes it from a rank
or the environment (``else: device = 'cuda:0'`` for one visible card per process), with
``choice_tip``; and so does a file that sets the visible cards in Python (ijepa's per-process
``CUDA_VISIBLE_DEVICES``, yolov7's ``--device``), where ``'cuda:0'`` is the first card the mask
leaves, with ``mask_tip``.

    rules:
      DeviceIdStringRule:
        - {id: G2N721, device_type: cuda, tip: "..."}
"""

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import is_identifier
from gpu2npu.rules.model import Field


class DeviceIdString(RuleKind):
    name = "DeviceIdStringRule"
    fields = {
        "device_type": Field(str, required=True, help="device type of the literals (cuda)"),
        "tip": Field(str, required=True, help="what to do where a file names several cards"),
        "choice_tip": Field(str, default="", help="what to do where a branch beside a rank's names a card"),
        "mask_tip": Field(str, default="", help="what to do where the file sets the visible cards"),
    }

    def validate(self, fields):
        if not is_identifier(fields["device_type"]):
            return f"'device_type' must be a device type name such as cuda, not {fields['device_type']!r}"
        return None

    def compile(self, rule, index):
        index.indexed_device_strings[rule["device_type"]] = rule.id
        index.device_string_tips[rule.id] = {
            "choice": rule["choice_tip"] or rule["tip"],
            "mask": rule["mask_tip"] or rule["tip"],
        }

    def trigger_words(self, rule):
        return {rule["device_type"] + ":"}

    def describe(self, rule):
        return f"'{rule['device_type']}:N' -> the device of the index from the environment"

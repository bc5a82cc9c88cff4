"""ApiStatusRule: your own verdict on a torch API (or any dotted name) for some torch versions,
e.g. after testing it on your NPU. It rewrites nothing; ``gpu2npu.kb`` prefers it over the
built-in lists (source ``user:<rule id>``) wherever an API status is reported or explained.

    rules:
      ApiStatusRule:
        - {api: torch.cdist, status: supported, versions: ">=2.7.1", tip: "tested on our 910B"}
"""

from gpu2npu.kb import STATUSES, normalise_api
from gpu2npu.rewrite.kinds._common import check_names
from gpu2npu.rules.model import Field

NAME = "ApiStatusRule"
FIELDS = {
    "api": Field(str, required=True, dotted=True, help="fully qualified name, e.g. torch.cdist"),
    "status": Field(str, required=True, help="one of " + ", ".join(STATUSES)),
    "tip": Field(str, help="what to tell the user, e.g. 'use torch_npu.npu_xxx'"),
}


def validate(fields):
    if fields["status"] not in STATUSES:
        return f"'status' must be one of {', '.join(STATUSES)}, not {fields['status']!r}"
    return check_names(api=fields["api"])


def compile(rule, index):
    # Keyed like lookups are (a trailing .__init__ names the class); later files win.
    index.api_status.setdefault(normalise_api(rule["api"]), []).append(rule)


def trigger_words(rule):
    return set()  # a status changes reports, never the code

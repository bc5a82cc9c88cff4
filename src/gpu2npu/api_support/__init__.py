"""The versioned NPU API knowledge base: for a torch API and a target torch version, is it
supported on Ascend NPU, supported with limits, unsupported, or unknown -- with the facts
behind the answer and a tip.

The answers are precomputed by tools/gen_kb.py from the facts under the repository's kb/ into
api_support.csv (beside this module, shipped in the wheel); this package reads that table::

    from gpu2npu.api_support import KnowledgeBase
    answer = KnowledgeBase.load().lookup("torch.cdist", "2.7.1")
    answer.status, answer.source, answer.tip, answer.chain
"""

from gpu2npu.api_support.lookup import (
    ApiStatus,
    KnowledgeBase,
    StatusOverride,
    explanation,
    is_torch_name,
    normalise_api,
)
from gpu2npu.api_support.namespaces import Namespaces
from gpu2npu.api_support.table import (
    INFERRED,
    LIMITED,
    LISTED,
    NONE,
    STATUSES,
    SUPPORTED,
    UNKNOWN,
    UNSUPPORTED,
)

__all__ = [
    "INFERRED",
    "LIMITED",
    "LISTED",
    "NONE",
    "STATUSES",
    "SUPPORTED",
    "UNKNOWN",
    "UNSUPPORTED",
    "ApiStatus",
    "KnowledgeBase",
    "Namespaces",
    "StatusOverride",
    "explanation",
    "is_torch_name",
    "normalise_api",
]

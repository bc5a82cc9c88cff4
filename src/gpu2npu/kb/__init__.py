"""The versioned NPU API knowledge base: for a torch API and a target torch version, is it
supported on Ascend NPU, supported with limits, unsupported, or unknown -- with the facts
behind the answer and a tip.

The answers are precomputed by tools/gen_kb.py from the facts under kb/ into
rules/api_support.csv (shipped in the wheel); this package reads that table::

    from gpu2npu.kb import KnowledgeBase
    answer = KnowledgeBase.load().lookup("torch.cdist", "2.7.1")
    answer.status, answer.source, answer.tip, answer.chain
"""

from gpu2npu.kb.lookup import (
    ApiStatus,
    KnowledgeBase,
    explanation,
    is_torch_name,
    normalise_api,
)
from gpu2npu.kb.table import (
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
    "explanation",
    "is_torch_name",
    "normalise_api",
]

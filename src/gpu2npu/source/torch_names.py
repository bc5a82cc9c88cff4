"""Names of torch that readers of source text need to recognise without importing torch."""

import re

DTYPE_NAMES = frozenset(
    "float16 float32 float64 bfloat16 half float double complex32 complex64 complex128 cfloat cdouble chalf "
    "uint8 uint16 uint32 uint64 int8 int16 int32 int64 short int long bool "
    "qint8 quint8 qint32 quint4x2 quint2x4 float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz "
    "float8_e8m0fnu".split()
)  # torch's dtype names (torch.<name>): a .to(<name>) casts, it never moves


def names_several_cards(source: str, device_types=("cuda", "npu")) -> bool:
    """Whether the file names more than one card by number (``'cuda:0'`` and ``'cuda:1'``: a
    model split over cards), in string literals or ``.to(N)`` / ``.cuda(N)`` calls."""
    kinds = "|".join(re.escape(kind) for kind in device_types)
    numbers = set(re.findall(rf"[\'\"](?:{kinds}):([0-9]+)[\'\"]", source))
    numbers |= set(re.findall(r"\.(?:to|cuda|npu)\(\s*([0-9]+)\s*[,)]", source))
    return len(numbers) > 1


# A value read from the environment or naming a rank (LOCAL_RANK, args.local_rank, ddp_rank,
# Accelerate's self.local_process_index).
FROM_ENVIRONMENT = re.compile(r"environ|getenv|rank\b|process_index\b", re.IGNORECASE)

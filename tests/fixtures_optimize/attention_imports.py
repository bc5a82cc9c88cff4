"""Imports of flash-attn that the rewrite leaves unused go; the others stay."""
import torch

try:
    from flash_attn import flash_attn_func  # the fast path
    HAS_FLASH = True
except ImportError:
    HAS_FLASH = False
from flash_attn.flash_attn_interface import flash_attn_func as fa, flash_attn_varlen_func
if HAS_FLASH: from flash_attn import flash_attn_func as inline


def attention(q, k, v, cu, max_len):
    a = flash_attn_func(q, k, v, causal=True) if HAS_FLASH else None
    b = fa(q, k, v)
    c = flash_attn_varlen_func(q, k, v, cu, cu, max_len, max_len)
    return a, b, c, inline(q, k, v)

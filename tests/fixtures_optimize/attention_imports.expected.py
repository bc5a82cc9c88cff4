"""Imports of flash-attn that the rewrite leaves unused go; the others stay."""
import torch
import torch_npu

try:
    pass  # the fast path
    HAS_FLASH = True
except ImportError:
    HAS_FLASH = False
from flash_attn.flash_attn_interface import flash_attn_varlen_func
if HAS_FLASH: pass


def attention(q, k, v, cu, max_len):
    a = torch_npu.npu_fusion_attention(
        q,
        k,
        v,
        q.shape[2],
        'BSND',
        atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device=q.device), diagonal=1),
        scale=q.shape[-1] ** -0.5,
        sparse_mode=3,
    )[0] if HAS_FLASH else None
    b = torch_npu.npu_fusion_attention(q, k, v, q.shape[2], 'BSND', scale=q.shape[-1] ** -0.5)[0]
    c = flash_attn_varlen_func(q, k, v, cu, cu, max_len, max_len)
    return a, b, c, torch_npu.npu_fusion_attention(q, k, v, q.shape[2], 'BSND', scale=q.shape[-1] ** -0.5)[0]

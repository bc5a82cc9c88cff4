import torch
import torch_npu
import torch.nn as nn
import os

try:
    from flash_attn import flash_attn_func  # the fast path
    from flash_attn.flash_attn_interface import flash_attn_func as fa_func, flash_attn_varlen_func
    from flash_attn import flash_attn_qkvpacked_func
    HAS_FLASH = True
except ImportError:
    HAS_FLASH = False


class Attention(nn.Module):
    def __init__(self, dropout=0.1, causal=True, scale=None):
        super().__init__()
        self.dropout_p, self.causal, self.scale = dropout, causal, scale

    def forward(self, q, k, v):
        if HAS_FLASH:
            return torch_npu.npu_fusion_attention(
                q,
                k,
                v,
                q.shape[2],
                'BSND',
                atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device=q.device), diagonal=1) if self.causal else None,
                scale=self.scale if self.scale is not None else q.shape[-1] ** -0.5,
                keep_prob=1 - (self.dropout_p if self.training else 0.0),
                sparse_mode=3 if self.causal else 0,
            )[0]
        return None

    def causal_forward(self, q, k, v, bsz, q_len):
        return torch_npu.npu_fusion_attention(
            q,
            k,
            v,
            q.shape[2],
            'BSND',
            atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device=q.device), diagonal=1),
            scale=q.shape[-1] ** -0.5,
            sparse_mode=3,
        )[0].view(bsz, q_len, -1)

    def packed(self, q, k, v):
        out = torch_npu.npu_fusion_attention(
            q,
            k,
            v,
            q.shape[2],
            'BSND',
            scale=q.shape[-1] ** -0.5,
        )[0]
        return out

    def module_call(self, q, k, v):
        return torch_npu.npu_fusion_attention(q, k, v, q.shape[2], 'BSND', scale=q.shape[-1] ** -0.5)[0]

    def packed_calls(self, qkv, q, kv):
        return torch_npu.npu_fusion_attention(
            qkv[:, :, 0],
            qkv[:, :, 1],
            qkv[:, :, 2],
            qkv.shape[3],
            'BSND',
            atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device=qkv.device), diagonal=1),
            scale=qkv.shape[-1] ** -0.5,
            sparse_mode=3,
        )[0], torch_npu.npu_fusion_attention(
            q,
            kv[:, :, 0],
            kv[:, :, 1],
            q.shape[2],
            'BSND',
            scale=q.shape[-1] ** -0.5,
            keep_prob=1 - self.dropout_p,
        )[0]


def kept(q, k, v, cu, max_len, **kwargs):
    a = flash_attn_func(q, k, v, window_size=(128, 0))  # a sliding window: no mapping here
    b = flash_attn_func(q.contiguous(), k, v)  # q is read twice by the mapping
    c = flash_attn_func(q, k, v, **kwargs)
    d = flash_attn_func(
        q, k, v,  # the heads
        causal=True,
    )
    e = fa_func(q, k, v, 0.0, None, False, (-1, -1))
    f = flash_attn_varlen_func(q, k, v, cu, cu, max_len, max_len)
    g = flash_attn_qkvpacked_func(torch.stack([q, k, v], dim=2))  # qkv is read five times
    return a, b, c, d, e, f, g

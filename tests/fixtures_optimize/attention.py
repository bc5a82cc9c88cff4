import torch
import torch.nn as nn
import os, flash_attn

try:
    from flash_attn import flash_attn_func  # the fast path
    from flash_attn.flash_attn_interface import flash_attn_func as fa_func, flash_attn_varlen_func
    from flash_attn import flash_attn_qkvpacked_func, flash_attn_kvpacked_func as fa_kv
    HAS_FLASH = True
except ImportError:
    HAS_FLASH = False


class Attention(nn.Module):
    def __init__(self, dropout=0.1, causal=True, scale=None):
        super().__init__()
        self.dropout_p, self.causal, self.scale = dropout, causal, scale

    def forward(self, q, k, v):
        if HAS_FLASH:
            return flash_attn_func(q, k, v, self.dropout_p if self.training else 0.0, self.scale, causal=self.causal)
        return None

    def causal_forward(self, q, k, v, bsz, q_len):
        return flash_attn_func(q, k, v, 0.0, softmax_scale=None, causal=True).view(bsz, q_len, -1)

    def packed(self, q, k, v):
        out = fa_func(
            q,
            k,
            v,
            dropout_p=0.0,
            window_size=(-1, -1),
            return_attn_probs=False,
        )
        return out

    def module_call(self, q, k, v):
        return flash_attn.flash_attn_func(q, k, v)

    def packed_calls(self, qkv, q, kv):
        return flash_attn_qkvpacked_func(qkv, causal=True), fa_kv(q, kv, self.dropout_p)


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

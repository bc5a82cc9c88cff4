"""Reference implementations of torch_npu's fused operators in plain torch (on the CPU), with
torch_npu's signatures and return conventions, written from the public torch_npu documentation.
They are written for agreement, not speed, and are differentiable through autograd. Every other
``torch_npu.npu_*`` name is a callable that raises NotImplementedError (see ``missing``)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

FORMAT_ND = 2  # ACL_FORMAT_ND: the only memory format there is on the CPU
ALL_TOKENS = 2147483647
LAYOUTS = ("BSH", "SBH", "BSND", "BNSD")


def npu_rms_norm(self, gamma, epsilon=1e-06):
    """(y, rstd): y = x * rstd * gamma with rstd = 1/sqrt(mean(x^2) + epsilon) over gamma's
    trailing dimensions; rstd is float32 and keeps those dimensions with size 1."""
    dims = tuple(range(self.dim() - gamma.dim(), self.dim()))
    x = self.float()
    rstd = torch.rsqrt(x.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    return (x * rstd * gamma.float()).to(self.dtype), rstd


def _rotate(x, rotary_mode):
    if rotary_mode == "half":
        first, second = x.chunk(2, dim=-1)
        return torch.cat((-second, first), dim=-1)
    if rotary_mode == "interleave":
        even, odd = x[..., ::2], x[..., 1::2]
        return torch.stack((-odd, even), dim=-1).flatten(-2)
    raise ValueError(f"npu_rotary_mul: rotary_mode must be 'half' or 'interleave', not {rotary_mode!r}")


def npu_rotary_mul(input, r1, r2, rotary_mode="half"):
    """input * r1 + rotate(input) * r2 (r1: cos, r2: sin)."""
    return input * r1 + _rotate(input, rotary_mode) * r2


def npu_swiglu(input, dim=-1):
    """silu(A) * B, A and B the two halves of input along dim."""
    first, second = input.chunk(2, dim=dim)
    return F.silu(first) * second


def npu_silu(self):
    return F.silu(self)


def npu_silu_(self):
    return F.silu(self, inplace=True)


def npu_gelu(self, *, approximate="none"):
    return F.gelu(self, approximate=approximate)


def npu_mish(self):
    return F.mish(self)


def npu_confusion_transpose(self, perm, shape, transpose_first):
    """permute then reshape (transpose_first), or reshape then permute."""
    if transpose_first:
        return self.permute(*perm).reshape(shape)
    return self.reshape(shape).permute(*perm)


def npu_transpose(self, perm, require_contiguous=True):
    moved = self.permute(*perm)
    return moved.contiguous() if require_contiguous else moved


def npu_format_cast(self, acl_format, *args, **kwargs):
    """Identity: NPU memory formats do not exist on the CPU."""
    return self


def npu_format_cast_(self, src, *args, **kwargs):
    return self


def get_npu_format(self):
    return FORMAT_ND


def npu_dtype_cast(self, dtype):
    return self.to(dtype)


# -- npu_fusion_attention --------------------------------------------------------------------------


def _to_bnsd(x, layout, head_dim):
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(1, 2)
    if layout == "BSH":
        batch, seq, hidden = x.shape
        return x.view(batch, seq, hidden // head_dim, head_dim).transpose(1, 2)
    seq, batch, hidden = x.shape  # SBH
    return x.view(seq, batch, hidden // head_dim, head_dim).permute(1, 2, 0, 3)


def _from_bnsd(x, layout):
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(1, 2)
    batch, heads, seq, head_dim = x.shape
    if layout == "BSH":
        return x.transpose(1, 2).reshape(batch, seq, heads * head_dim)
    return x.permute(2, 0, 1, 3).reshape(seq, batch, heads * head_dim)  # SBH


def _head_dim(query, head_num, layout):
    return query.shape[-1] if layout in ("BSND", "BNSD") else query.shape[-1] // head_num


COMPRESSED_MASK_SIZE = 2048


def _check_compressed_mask(atten_mask, sparse_mode):
    """The causal modes take the documented compressed mask: a 2048 x 2048 bool matrix, True
    (not computed) above the diagonal."""
    size = COMPRESSED_MASK_SIZE
    if (
        atten_mask is None
        or tuple(atten_mask.shape) != (size, size)
        or atten_mask.dtype != torch.bool
        or not torch.equal(
            atten_mask, torch.ones(size, size, dtype=torch.bool, device=atten_mask.device).triu(1)
        )
    ):
        raise ValueError(
            f"npu_fusion_attention: sparse_mode={sparse_mode} takes atten_mask, the compressed causal mask: "
            f"torch.triu(torch.ones({size}, {size}, dtype=torch.bool), diagonal=1)"
        )


def _mask(atten_mask, sparse_mode, pre_tockens, next_tockens, q_len, kv_len, device):
    """True where a score is masked out."""
    if sparse_mode in (0, 1):
        if (pre_tockens, next_tockens) != (ALL_TOKENS, ALL_TOKENS):
            raise NotImplementedError(
                "npu_fusion_attention in the gpu2npu stand-in: pre_tockens/next_tockens bands are not "
                "emulated (sparse_mode 2 and 3 give the causal masks)"
            )
        return None if atten_mask is None else atten_mask.bool()
    if sparse_mode in (2, 3):
        _check_compressed_mask(atten_mask, sparse_mode)
    rows = torch.arange(q_len, device=device).unsqueeze(1)
    cols = torch.arange(kv_len, device=device).unsqueeze(0)
    if sparse_mode == 2:  # leftUpCausal
        return cols > rows
    if sparse_mode == 3:  # rightDownCausal
        return cols > rows + (kv_len - q_len)
    raise NotImplementedError(
        f"npu_fusion_attention in the gpu2npu stand-in: sparse_mode={sparse_mode} is not emulated (0-3 are)"
    )


def npu_fusion_attention(
    query,
    key,
    value,
    head_num,
    input_layout,
    pse=None,
    padding_mask=None,
    atten_mask=None,
    scale=1.0,
    keep_prob=1.0,
    pre_tockens=ALL_TOKENS,
    next_tockens=ALL_TOKENS,
    inner_precise=0,
    prefix=None,
    actual_seq_qlen=None,
    actual_seq_kvlen=None,
    sparse_mode=0,
    gen_mask_parallel=True,
    sync=False,
    **kwargs,
):
    """softmax(mask(scale * (pse + Q K^T))) V with dropout keep_prob, in float32, returned as
    (attention_out in input_layout, softmax_max [B,N,Sq,8], softmax_sum [B,N,Sq,8], an empty
    softmax_out, seed 0, offset 0, numels 0). Layouts BSH, SBH, BSND, BNSD (not TND/varlen);
    key/value may have fewer heads (GQA); sparse_mode 0 and 1 (atten_mask as given, True masks
    out), 2 (left-up causal) and 3 (right-down causal), which take the compressed mask."""
    if input_layout not in LAYOUTS:
        raise NotImplementedError(
            f"npu_fusion_attention in the gpu2npu stand-in: input_layout {input_layout!r} is not emulated "
            f"({', '.join(LAYOUTS)} are)"
        )
    head_dim = _head_dim(query, head_num, input_layout)
    q, k, v = (_to_bnsd(t, input_layout, head_dim) for t in (query, key, value))
    if k.shape[1] != q.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    scores = q.float() @ k.float().transpose(-2, -1)
    if pse is not None:
        scores = scores + pse.float()
    scores = scores * scale
    mask = _mask(atten_mask, sparse_mode, pre_tockens, next_tockens, q.shape[2], k.shape[2], q.device)
    if mask is not None:
        scores = scores.masked_fill(mask, -math.inf)
    row_max = scores.amax(dim=-1, keepdim=True)
    safe_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max)
    exp = torch.exp(scores - safe_max)
    row_sum = exp.sum(dim=-1, keepdim=True)
    probs = exp / torch.where(row_sum > 0, row_sum, torch.ones_like(row_sum))  # a fully masked row gives 0
    if keep_prob < 1.0:
        probs = F.dropout(probs, p=1.0 - keep_prob, training=True)
    out = (probs @ v.float()).to(query.dtype)
    statistics_shape = (*row_max.shape[:-1], 8)
    return (
        _from_bnsd(out, input_layout),
        row_max.expand(statistics_shape).contiguous(),
        row_sum.expand(statistics_shape).contiguous(),
        torch.empty(0, dtype=query.dtype, device=query.device),
        0,
        0,
        0,
    )


REFERENCE = {
    function.__name__: function
    for function in (
        npu_rms_norm,
        npu_rotary_mul,
        npu_swiglu,
        npu_fusion_attention,
        npu_silu,
        npu_silu_,
        npu_gelu,
        npu_mish,
        npu_confusion_transpose,
        npu_transpose,
        npu_format_cast,
        npu_format_cast_,
        npu_dtype_cast,
        get_npu_format,
    )
}


def missing(name: str):
    """A stand-in for an operator that only an NPU has: raises when called, not when named, so a
    program that never calls it still runs."""

    def not_implemented(*args, **kwargs):
        raise NotImplementedError(
            f"torch_npu.{name} has no reference implementation in the gpu2npu stand-in; it runs only on "
            f"an Ascend NPU (the stand-in implements {', '.join(sorted(REFERENCE))})"
        )

    not_implemented.__name__ = name
    not_implemented.__qualname__ = name
    return not_implemented

import math

import pytest
import torch
from kernel_cases import DEVICE, DTYPES

from optiforge.kernels import attention as attn

TOL = {torch.float32: 2e-5, torch.float16: 3e-3, torch.bfloat16: 3e-2}


def _qkv(b, h, n, d, dtype, seed=0, nk=None):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, n, d, generator=g)
    k = torch.randn(b, h, nk or n, d, generator=g)
    v = torch.randn(b, h, nk or n, d, generator=g)
    return (t.to(DEVICE, dtype) for t in (q, k, v))


def _naive(q, k, v, causal, scale=None):
    """Second method: per-query loop in float64."""
    q, k, v = q.double(), k.double(), v.double()
    scale = scale or 1 / math.sqrt(q.shape[-1])
    out = torch.empty_like(q)
    for i in range(q.shape[2]):
        s = (q[:, :, i : i + 1] @ k.transpose(-1, -2)) * scale
        if causal:
            s[..., i + 1 :] = float("-inf")
        out[:, :, i : i + 1] = torch.softmax(s, -1) @ v
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("b,h,n,d", [(1, 2, 32, 16), (2, 1, 45, 32), (1, 1, 20, 64)])
def test_attention_matches_naive(dtype, causal, b, h, n, d):
    q, k, v = _qkv(b, h, n, d, dtype)
    out = attn.attention(q, k, v, causal=causal, BLOCK_M=16, BLOCK_N=16)
    assert out.shape == q.shape and out.dtype == dtype
    torch.testing.assert_close(
        out.double(), _naive(q, k, v, causal), atol=TOL[dtype], rtol=TOL[dtype]
    )
    ref = attn.reference_attention(q, k, v, causal=causal)
    torch.testing.assert_close(out, ref, atol=TOL[dtype], rtol=TOL[dtype])


def test_rectangular_scale_and_strides():
    q, k, v = _qkv(1, 2, 19, 32, torch.float32, nk=37)
    out = attn.attention(q, k, v, sm_scale=0.3, BLOCK_M=16, BLOCK_N=32)
    torch.testing.assert_close(out.double(), _naive(q, k, v, False, 0.3), atol=2e-5, rtol=2e-5)
    # `B x N x H x D` storage viewed as `B x H x N x D`: non-contiguous q/k/v.
    qs, ks, vs = (
        t.transpose(1, 2).contiguous().transpose(1, 2) for t in _qkv(2, 3, 24, 16, torch.float32)
    )
    assert not qs.is_contiguous()
    out = attn.attention(qs, ks, vs, causal=True, BLOCK_M=16, BLOCK_N=16)
    torch.testing.assert_close(out.double(), _naive(qs, ks, vs, True), atol=2e-5, rtol=2e-5)


def test_bad_inputs():
    q, k, v = _qkv(1, 1, 16, 16, torch.float32, nk=32)
    with pytest.raises(ValueError, match="causal"):
        attn.attention(q, k, v, causal=True)
    q2, k2, v2 = _qkv(1, 1, 16, 24, torch.float32)
    with pytest.raises(ValueError, match="head dim"):
        attn.attention(q2, k2, v2)
    with pytest.raises(ValueError, match="4-D"):
        attn.attention(q[0], k[0], v[0])

import pytest
import torch
from kernel_cases import DEVICE, DTYPES

from optiforge.kernels import norms

TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}


def _data(m, n, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, n, generator=g) * 3 + 1
    w = torch.randn(n, generator=g)
    b = torch.randn(n, generator=g)
    return x.to(DEVICE, dtype), w.to(DEVICE, dtype), b.to(DEVICE, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,block", [((6, 96), None), ((3, 130), 32), ((4, 17), 16)])
def test_rmsnorm_matches_manual(dtype, shape, block):
    x, w, _ = _data(*shape, dtype)
    out = norms.rmsnorm(x, w, eps=1e-6, BLOCK_N=block)
    xd = x.double()
    manual = xd / torch.sqrt((xd * xd).mean(-1, keepdim=True) + 1e-6) * w.double()
    torch.testing.assert_close(out.double(), manual, atol=TOL[dtype], rtol=TOL[dtype])
    torch.testing.assert_close(
        out, norms.reference_rmsnorm(x, w, eps=1e-6), atol=TOL[dtype], rtol=TOL[dtype]
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,block", [((6, 96), None), ((3, 130), 32)])
def test_layernorm_matches_manual(dtype, shape, block):
    x, w, b = _data(*shape, dtype)
    out = norms.layernorm(x, w, b, eps=1e-5, BLOCK_N=block)
    xd = x.double()
    mu = xd.mean(-1, keepdim=True)
    var = ((xd - mu) ** 2).mean(-1, keepdim=True)
    manual = (xd - mu) / torch.sqrt(var + 1e-5) * w.double() + b.double()
    torch.testing.assert_close(out.double(), manual, atol=TOL[dtype], rtol=TOL[dtype])


def test_non_contiguous_and_optional_params():
    x, w, b = _data(50, 8, torch.float32)
    xt = x.t()  # `8 x 50` with stride (1, 8)
    ref = torch.nn.functional.layer_norm(xt, (50,))
    torch.testing.assert_close(norms.layernorm(xt, BLOCK_N=16), ref, atol=2e-5, rtol=2e-5)
    ref = torch.nn.functional.rms_norm(xt, (50,), eps=1e-6)
    torch.testing.assert_close(norms.rmsnorm(xt), ref, atol=2e-5, rtol=2e-5)


def test_bad_inputs():
    x, w, _ = _data(4, 8, torch.float32)
    with pytest.raises(ValueError, match="shape"):
        norms.rmsnorm(x, w[:4])
    with pytest.raises(ValueError, match="eps"):
        norms.layernorm(x, eps=0.0)
    with pytest.raises(ValueError, match="2-D"):
        norms.rmsnorm(x[0])

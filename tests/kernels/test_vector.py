import math

import pytest
import torch
from kernel_cases import DEVICE, DTYPES

from optiforge.kernels import vector

TOL = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 1e-2}


def _pair(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(shape, generator=g).to(DEVICE, dtype),
        torch.randn(shape, generator=g).to(DEVICE, dtype),
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7, 100), (1000,), (2, 3, 5)])
def test_binary_ops_match_reference(dtype, shape):
    x, y = _pair(shape, dtype)
    torch.testing.assert_close(
        vector.add(x, y, BLOCK_N=64), x + y, atol=TOL[dtype], rtol=TOL[dtype]
    )
    torch.testing.assert_close(
        vector.mul(x, y, BLOCK_N=64), x * y, atol=TOL[dtype], rtol=TOL[dtype]
    )
    out = vector.axpby(1.5, x, -0.25, y, BLOCK_N=128)
    torch.testing.assert_close(
        out, vector.reference_axpby(1.5, x, -0.25, y), atol=TOL[dtype], rtol=TOL[dtype]
    )


def test_non_contiguous_inputs():
    x, y = _pair((37, 10), torch.float32)
    xt, yt = x.t(), y[:, ::1].t()  # `10 x 37` views with column-major strides
    assert not xt.is_contiguous()
    torch.testing.assert_close(vector.axpby(2.0, xt, 3.0, yt, BLOCK_N=16), 2 * xt + 3 * yt)
    torch.testing.assert_close(vector.relu(x[:, ::2], BLOCK_N=16), torch.relu(x[:, ::2]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_ops(dtype):
    (x, _) = _pair((5, 77), dtype)
    torch.testing.assert_close(vector.relu(x, BLOCK_N=32), torch.relu(x))
    # Independent check of GELU: the erf formula evaluated in float64 with math.erf.
    ref = torch.tensor(
        [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.double().flatten().tolist()],
        dtype=torch.float64,
    )
    out = vector.gelu(x, BLOCK_N=32)
    torch.testing.assert_close(
        out.double().flatten().cpu(), ref, atol=2 * TOL[dtype], rtol=2 * TOL[dtype]
    )


def test_bad_inputs_raise():
    x, y = _pair((4, 4), torch.float32)
    with pytest.raises(ValueError, match="shape mismatch"):
        vector.add(x, y[:3])
    with pytest.raises(ValueError, match="dtype mismatch"):
        vector.add(x, y.half())
    with pytest.raises(ValueError, match="power of two"):
        vector.add(x, y, BLOCK_N=100)
    with pytest.raises(ValueError, match="dtype"):
        vector.relu(torch.ones(4, dtype=torch.int32))
    with pytest.raises(ValueError, match="finite"):
        vector.axpby(float("nan"), x, 1.0, y)

import pytest
import torch
from kernel_cases import DEVICE, DTYPES

from optiforge.kernels import softmax as sm

TOL = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}


def _manual(x: torch.Tensor) -> torch.Tensor:
    """Second method: exp(x - max) / sum in float64."""
    x = x.double()
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant,block", [("one_block", None), ("looped", 16), ("looped", 64)])
@pytest.mark.parametrize("shape", [(5, 77), (3, 300), (1, 16)])
def test_softmax_matches(dtype, variant, block, shape):
    x = (4 * torch.randn(shape, generator=torch.Generator().manual_seed(1))).to(DEVICE, dtype)
    out = sm.softmax(x, variant=variant, BLOCK_N=block)
    assert out.dtype == dtype and out.shape == x.shape
    tol = TOL[dtype]
    torch.testing.assert_close(out.double(), _manual(x), atol=tol, rtol=tol)
    torch.testing.assert_close(out, sm.reference_softmax(x), atol=tol, rtol=tol)


def test_non_contiguous_and_large_values():
    x = torch.randn(40, 6, generator=torch.Generator().manual_seed(2)).to(DEVICE) * 50 + 1000
    xt = x.t()  # `6 x 40`, stride (1, 6)
    for variant in ("one_block", "looped"):
        out = sm.softmax(xt, variant=variant, BLOCK_N=64 if variant == "one_block" else 16)
        torch.testing.assert_close(out.double(), _manual(xt), atol=1e-6, rtol=1e-5)
        assert torch.isfinite(out).all()


def test_masked_entries_and_errors():
    x = torch.tensor([[0.0, float("-inf"), 1.0] * 7], device=DEVICE)  # 1 x 21
    for variant in ("one_block", "looped"):
        out = sm.softmax(x, variant=variant, BLOCK_N=32 if variant == "one_block" else 16)
        torch.testing.assert_close(out, torch.softmax(x, -1))
    with pytest.raises(ValueError, match="BLOCK_N >= N"):
        sm.softmax(torch.zeros(2, 100, device=DEVICE), variant="one_block", BLOCK_N=64)
    with pytest.raises(ValueError, match="2-D"):
        sm.softmax(torch.zeros(2, 3, 4, device=DEVICE))

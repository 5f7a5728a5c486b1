import pytest
import torch
from kernel_cases import DEVICE, DTYPES

from optiforge.kernels import matmul as mm

TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (2e-2, 1e-2), torch.bfloat16: (1e-1, 2e-2)}
SMALL = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}


def _ab(m, k, n, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, generator=g).to(DEVICE, dtype), torch.randn(k, n, generator=g).to(
        DEVICE, dtype
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", [(64, 40, 48), (33, 70, 17), (1, 16, 5)])
def test_matmul_matches_fp64(dtype, m, k, n):
    a, b = _ab(m, k, n, dtype)
    out = mm.matmul(a, b, BLOCK_M=32, BLOCK_N=16, BLOCK_K=16)
    atol, rtol = TOL[dtype]
    assert out.dtype == dtype and out.shape == (m, n)
    torch.testing.assert_close(out.double(), a.double() @ b.double(), atol=atol, rtol=rtol)


@pytest.mark.parametrize("split_k", [2, 3, 5])
@pytest.mark.parametrize("dtype", DTYPES)
def test_split_k(split_k, dtype):
    a, b = _ab(40, 90, 24, dtype, seed=split_k)
    atol, rtol = TOL[dtype]
    out = mm.matmul(a, b, SPLIT_K=split_k, **SMALL)
    torch.testing.assert_close(out.double(), a.double() @ b.double(), atol=atol, rtol=rtol)
    # SPLIT_K larger than the number of K tiles leaves some programs idle; still correct.
    out = mm.matmul(a[:, :20], b[:20], SPLIT_K=8, **SMALL)
    torch.testing.assert_close(
        out.double(), a[:, :20].double() @ b[:20].double(), atol=atol, rtol=rtol
    )


def test_arbitrary_strides_and_grouping():
    a, b = _ab(48, 32, 40, torch.float32)
    at = a.t().contiguous().t()  # same values, column-major strides
    bt = b.t().contiguous().t()
    assert not at.is_contiguous() and not bt.is_contiguous()
    ref = a.double() @ b.double()
    for group_m in (1, 2, 8):
        out = mm.matmul(at, bt, GROUP_M=group_m, **SMALL)
        torch.testing.assert_close(out.double(), ref, atol=1e-4, rtol=1e-4)
    sliced = mm.matmul(a[::2, ::2], b[::2, ::2], **SMALL)
    torch.testing.assert_close(
        sliced.double(), a[::2, ::2].double() @ b[::2, ::2].double(), atol=1e-4, rtol=1e-4
    )


def test_bad_inputs():
    a, b = _ab(8, 8, 8, torch.float32)
    with pytest.raises(ValueError, match="inner dims"):
        mm.matmul(a, b[:4])
    with pytest.raises(ValueError, match="power of two"):
        mm.matmul(a, b, BLOCK_K=8)
    with pytest.raises(ValueError, match="SPLIT_K"):
        mm.matmul(a, b, SPLIT_K=0)
    with pytest.raises(ValueError, match="dtype mismatch"):
        mm.matmul(a, b.half())

import importlib
import subprocess
import sys

import pytest
import torch
from kernel_cases import DEVICE

from optiforge.errors import InvalidCandidate
from optiforge.kernels import registry

EXPECTED = {
    "add",
    "mul",
    "axpby",
    "relu",
    "gelu",
    "softmax",
    "rmsnorm",
    "layernorm",
    "matmul",
    "attention",
    "inquant",
}

# Small meta-parameters so interpreter runs stay quick.
FAST_META = {"matmul": {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "SPLIT_K": 2},
             "attention": {"BLOCK_M": 16, "BLOCK_N": 16}}  # fmt: skip


def test_registry_lists_all_kernels_with_valid_tunables():
    assert set(registry.KERNELS) == EXPECTED
    for info in registry.KERNELS.values():
        assert info.dev_shapes and info.tolerances
        for shape in info.dev_shapes:
            assert set(info.shape_keys) <= set(shape)
        for name, values in info.tunables.items():
            assert values, name
        for key in FAST_META.get(info.name, {}):
            assert FAST_META[info.name][key] in info.tunables[key]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_kernel_passes_its_reference_on_dev_shapes(name):
    info = registry.get_kernel(name)
    for shape in info.dev_shapes[:1]:
        for dtype in (torch.float32, torch.float16):
            out = registry.run_check(name, shape, dtype, device=DEVICE, **FAST_META.get(name, {}))
            assert out.dtype == dtype


def test_check_output_rejects_zero_and_wrong_outputs():
    info = registry.get_kernel("add")
    (x, y), _ = info.make_inputs({"M": 4, "N": 32}, torch.float32, 0, DEVICE)
    ref = info.reference(x, y)
    registry.check_output(info, ref.clone(), ref)
    with pytest.raises(InvalidCandidate, match="constant"):
        registry.check_output(info, torch.zeros_like(ref), ref)
    with pytest.raises(InvalidCandidate, match="elements off"):
        registry.check_output(info, ref + 1e-2, ref)
    with pytest.raises(InvalidCandidate, match="shape"):
        registry.check_output(info, ref[:2], ref)


def test_bad_lookups_and_meta():
    with pytest.raises(ValueError, match="unknown kernel"):
        registry.get_kernel("conv9d")
    with pytest.raises(ValueError, match="unknown meta"):
        registry.run_check("add", {"M": 2, "N": 16}, BLOCK_Q=4)
    with pytest.raises(InvalidCandidate, match="power of two"):
        registry.run_check("add", {"M": 2, "N": 16}, device=DEVICE, BLOCK_N=100)
    with pytest.raises(ValueError, match="missing"):
        registry.run_check("matmul", {"M": 2, "N": 16})


def test_optiforge_import_does_not_import_triton():
    code = "import sys, optiforge, optiforge.kernels; assert 'triton' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert importlib.import_module("optiforge.kernels") is not None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_bf16_on_gpu():
    for name in ("softmax", "rmsnorm", "matmul", "attention"):
        info = registry.get_kernel(name)
        registry.run_check(name, info.dev_shapes[0], torch.bfloat16, device="cuda")

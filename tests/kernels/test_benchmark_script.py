"""The GPU benchmark script: clean exit without CUDA, baselines equal the references."""

import importlib.util
from pathlib import Path

import pytest
import torch

from optiforge.kernels import registry

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "kernels_gpu.py"


def _load():
    spec = importlib.util.spec_from_file_location("kernels_gpu", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA path")
def test_exits_cleanly_without_cuda(capsys):
    assert _load().main([]) == 0
    assert "CUDA is not available" in capsys.readouterr().out


def test_baselines_compute_the_same_function_as_references():
    baselines = _load()._baselines()
    assert set(baselines) == set(registry.KERNELS)
    for name, info in registry.KERNELS.items():
        if name == "inquant":  # its baseline is the reference itself
            continue
        args, kwargs = info.make_inputs(info.dev_shapes[-1], torch.float32, 1, "cpu")
        registry.check_output(
            info, baselines[name](*args, **kwargs), info.reference(*args, **kwargs)
        )

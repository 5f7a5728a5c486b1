"""Pick Triton's execution mode before triton is imported, and shared launcher checks."""

from __future__ import annotations

import os
import sys

import torch


def configure_triton_backend() -> bool:
    """Set ``TRITON_INTERPRET=1`` when CUDA is unavailable; return True in interpreter mode.

    Triton reads the variable once at import, so this is a no-op (apart from the
    return value) once triton is imported; a user's explicit setting always wins.
    """
    if "triton" not in sys.modules and not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def interpreter_mode() -> bool:
    """True when Triton runs kernels on CPU through its numpy interpreter."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def check_float(name: str, t: torch.Tensor) -> None:
    """Raise ValueError unless ``t`` is a tensor of a dtype the kernels support."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"{name} has dtype {t.dtype}; supported: fp16, bf16, fp32")
    if t.dtype == torch.bfloat16 and interpreter_mode():
        raise ValueError(f"{name} is bf16, which the Triton CPU interpreter does not support")
    if t.numel() == 0:
        raise ValueError(f"{name} is empty")


def check_device(*named: tuple[str, torch.Tensor]) -> None:
    """Raise ValueError if tensors live on different devices or on a device Triton cannot use."""
    devices = {t.device for _, t in named}
    if len(devices) > 1:
        listing = ", ".join(f"{n}@{t.device}" for n, t in named)
        raise ValueError(f"tensors are on different devices: {listing}")
    (device,) = devices
    if interpreter_mode():
        if device.type != "cpu":
            raise ValueError(f"interpreter mode needs CPU tensors, got {device}")
    elif device.type != "cuda":
        raise ValueError(f"Triton on GPU needs CUDA tensors, got {device}")


def check_pow2(name: str, value: int, minimum: int = 1) -> None:
    """Raise ValueError unless ``value`` is a power of two >= ``minimum`` (Triton tile sizes)."""
    if value < minimum or value & (value - 1):
        raise ValueError(f"{name}={value} must be a power of two >= {minimum}")

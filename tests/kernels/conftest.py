"""Kernel tests run Triton on CPU through its interpreter when CUDA is absent.

TRITON_INTERPRET must be set before triton is imported, hence at the top of conftest.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

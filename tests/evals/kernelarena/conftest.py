"""TRITON_INTERPRET must be set before anything imports triton (even indirectly, e.g. through
transformers in the memory store): set it at collection time, as tests/kernels does."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

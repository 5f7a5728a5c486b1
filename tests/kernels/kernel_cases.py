"""Device and dtypes shared by the kernel tests (imported by name; conftest sets the backend)."""

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# bf16 is unsupported by Triton's CPU interpreter; test it only on a GPU.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if torch.cuda.is_available() else [])

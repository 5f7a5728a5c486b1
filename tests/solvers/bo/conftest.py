"""One thread for torch and BLAS: on the shared 2-core CI box, threading made small GP solves ~50x slower."""

import torch
from threadpoolctl import threadpool_limits

torch.set_num_threads(1)
threadpool_limits(1)

"""Sandboxed step 2 of scoring kernel source: the Gram matrix on the training inputs.

Runs as ``python kernel_gram.py`` in a fresh sandbox work dir holding ``request.json``
(``source``, ``X`` `n x d`, ``shapes``, ``params``: the hyperparameters step 1 fitted) and
the shipped ``optiforge.errors`` / ``optiforge.solvers.gp``. It never sees the
observations ``y``. Saves ``K = k(X, X; params)`` (`n x n` float64) with numpy to
``gram.npy``; the harness checks it and computes the LOO-CRPS itself.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    import numpy as np
    import torch

    torch.set_num_threads(1)
    from optiforge.solvers.gp.validation import kernel_from_source

    with open("request.json") as fh:
        req = json.load(fh)
    spec = kernel_from_source(req["source"])
    X = torch.tensor(req["X"], dtype=torch.float64)
    params = {
        k: torch.tensor(v, dtype=torch.float64)
        if req["shapes"][k] == "ard"
        else torch.tensor(v[0], dtype=torch.float64)
        for k, v in req["params"].items()
    }
    with torch.no_grad():
        K = spec.fn(X, X, params)
    np.save("gram.npy", np.asarray(K.detach().to(torch.float64).numpy(), dtype=np.float64))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Sandboxed step 2 of scoring kernel source: the Gram matrix on the training inputs.

Runs as ``python kernel_gram.py`` in a fresh sandbox work dir holding ``request.json``
(``source``, ``X`` `n x d`, ``shapes``, ``params``: the hyperparameters step 1 fitted) and
the shipped ``optiforge.errors`` / ``optiforge.solvers.gp``. It never sees the
observations ``y``. Saves ``K = k(X, X; params)`` (`n x n` float64) with numpy to
``gram.npy``; the harness checks it and computes the LOO-CRPS itself. With ``fold_params``
(one hyperparameter set per held-out fold) it saves the stack ``[K(params), K(fold 1),
...]`` (`(F+1) x n x n`).
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

    def tensors(raw: dict) -> dict:
        return {
            k: torch.tensor(v, dtype=torch.float64)
            if req["shapes"][k] == "ard"
            else torch.tensor(v[0], dtype=torch.float64)
            for k, v in raw.items()
        }

    def gram(raw: dict) -> np.ndarray:
        with torch.no_grad():
            K = spec.fn(X, X, tensors(raw))
        return np.asarray(K.detach().to(torch.float64).numpy(), dtype=np.float64)

    if "fold_params" in req:
        out = np.stack([gram(req["params"])] + [gram(p) for p in req["fold_params"]])
    else:
        out = gram(req["params"])
    np.save("gram.npy", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

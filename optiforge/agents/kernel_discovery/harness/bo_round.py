"""One BO round with an LLM-written kernel, run inside a sandbox: fit the GP, optimise qLogEI.

Runs as ``python bo_round.py`` in a sandbox work dir holding ``request.json``
(``source``, ``X`` `n x D` unit cube, ``target`` `n` (maximise, standardised),
``fit_seed``, ``round_seed``, ``gp_restarts``, ``q``, ``acq``: AcqConfig fields) and the
shipped ``optiforge.errors`` / ``optiforge.solvers.gp`` / ``optiforge.solvers.bo``. Saves
the proposed `q x D` points with numpy to ``candidate.npy``. Same seeding as the
in-process resumable loop (torch seeded with ``round_seed`` before the fit and
``round_seed + 1`` before the acquisition), so a round gives the same points either way.
The caller checks the points (shape, finite, in the cube) and evaluates the objective
itself; nothing else from this process is read.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    import numpy as np
    import torch

    torch.set_num_threads(1)
    from optiforge.solvers.bo.loop import AcqConfig, ExactGPModel, optimize_qlogei
    from optiforge.solvers.gp.exact import ExactGP
    from optiforge.solvers.gp.validation import kernel_from_source

    with open("request.json") as fh:
        req = json.load(fh)
    spec = kernel_from_source(req["source"])
    X = torch.tensor(req["X"], dtype=torch.float64)
    target = torch.tensor(req["target"], dtype=torch.float64)
    torch.manual_seed(int(req["round_seed"]))
    gp = ExactGP(spec, n_restarts=int(req["gp_restarts"]), seed=int(req["fit_seed"])).fit(X, target)
    torch.manual_seed(int(req["round_seed"]) + 1)
    cand = optimize_qlogei(
        ExactGPModel(gp), target, int(req["q"]), X.shape[1], AcqConfig(**req["acq"]), X_baseline=X
    )
    np.save("candidate.npy", cand.numpy().astype(np.float64))
    return 0


if __name__ == "__main__":
    sys.exit(main())

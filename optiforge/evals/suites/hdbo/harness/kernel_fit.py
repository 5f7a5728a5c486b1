"""Sandboxed step 1 of scoring kernel source: validate it and fit its hyperparameters.

Runs as ``python kernel_fit.py`` in a sandbox work dir holding ``request.json``
(``source``, ``d``, ``X``, ``y``, ``seed``, ``n_restarts``, ``max_hyperparameters``) and
the shipped ``optiforge.errors`` / ``optiforge.solvers.gp``. Writes ``fit.json``:
``{"ok", "reason", "warnings", "shapes": {name: "scalar"|"ard"}, "params": {name:
[floats]}}``; with ``heldout`` (test-index sets) in the request, also ``fold_params``: one
such dict per set, fitted on the rows *outside* that set only. The candidate's code runs in this process, so everything here is untrusted
by the caller: it only hands the kernel hyperparameters on (checked) to the Gram step,
which never sees ``y``; no score is computed or read from here.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    import torch

    torch.set_num_threads(1)
    from optiforge.errors import InvalidCandidate, SolverError
    from optiforge.solvers.gp.exact import ExactGP
    from optiforge.solvers.gp.validation import kernel_from_source, validate_kernel

    with open("request.json") as fh:
        req = json.load(fh)
    out: dict[str, object] = {"ok": False}
    try:
        spec = kernel_from_source(req["source"])
        rep = validate_kernel(
            spec,
            int(req["d"]),
            max_hyperparameters=int(req["max_hyperparameters"]),
            seed=int(req["seed"]),
        )
        out.update(ok=rep.ok, reason=rep.reason, warnings=rep.warnings)
        if rep.ok:
            X = torch.tensor(req["X"], dtype=torch.float64)
            y = torch.tensor(req["y"], dtype=torch.float64)
            gp = ExactGP(spec, n_restarts=int(req["n_restarts"]), seed=int(req["seed"])).fit(X, y)
            assert gp.params is not None
            out["shapes"] = {k: h.shape for k, h in spec.hyperparameters.items()}
            out["params"] = {
                k: v.detach().reshape(-1).tolist() for k, v in gp.params.kernel.items()
            }
            folds = []
            for test in req.get("heldout") or []:
                keep = torch.ones(X.shape[0], dtype=torch.bool)
                keep[torch.tensor(test, dtype=torch.long)] = False
                starts = int(req.get("fold_restarts", req["n_restarts"]))
                g = ExactGP(spec, n_restarts=starts, seed=int(req["seed"]))
                g.fit(X[keep], y[keep])
                assert g.params is not None
                folds.append(
                    {k: v.detach().reshape(-1).tolist() for k, v in g.params.kernel.items()}
                )
            if "heldout" in req:
                out["fold_params"] = folds
    except (InvalidCandidate, SolverError) as e:
        out = {"ok": False, "reason": str(e)}
    except Exception as e:  # any crash of candidate code is a rejection, reported verbatim
        out = {"ok": False, "reason": f"kernel raised {type(e).__name__}: {e}"}
    with open("fit.json", "w") as fh:
        json.dump(out, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())

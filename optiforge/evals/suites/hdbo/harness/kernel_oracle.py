"""Sandboxed Gram oracle for scoring kernel source: inputs in, kernel matrices out.

Runs as ``python kernel_oracle.py`` in a sandbox work dir holding ``request.json`` and the
shipped ``optiforge.errors`` / ``optiforge.solvers.gp``. The request holds ``source``,
``d``, ``X`` (`n x d`), ``seed``, ``max_hyperparameters`` and ``thetas`` (`m x p`: log
hyperparameter vectors, the declared names in order, each ``"ard"`` one taking ``d``
slots); never the observations ``y`` (the harness fits the hyperparameters itself, from
these matrices). With ``validate`` it first runs ``validate_kernel`` and reports the
declarations. Writes ``oracle.json`` (``{"ok", "reason", "warnings", "hyperparameters":
{name: {"shape", "init", "bounds"}}}``), ``gram.npy`` (`m x n x n`: ``k(X, X; exp(theta))``)
and ``jac.npy`` (`m x p x n x n`: the derivative of each matrix wrt each log value, by
central differences).
The candidate's code runs in this process, so everything here is untrusted by the
caller, which checks every array it reads.
"""

from __future__ import annotations

import json
import sys

FD_STEP = 1e-5
"""Central-difference step in log hyperparameter space (~eps^(1/3): error ~1e-10 relative)."""


def main() -> int:
    import numpy as np
    import torch

    torch.set_num_threads(1)
    from optiforge.errors import InvalidCandidate
    from optiforge.solvers.gp.validation import kernel_from_source, validate_kernel

    with open("request.json") as fh:
        req = json.load(fh)
    out: dict[str, object] = {"ok": False}
    try:
        spec = kernel_from_source(req["source"])
        d = int(req["d"])
        if req.get("validate"):
            rep = validate_kernel(
                spec, d, max_hyperparameters=int(req["max_hyperparameters"]), seed=int(req["seed"])
            )
            out.update(ok=rep.ok, reason=rep.reason, warnings=rep.warnings)
            out["hyperparameters"] = {
                k: {"shape": h.shape, "init": h.init, "bounds": list(h.bounds)}
                for k, h in spec.hyperparameters.items()
            }
            if not rep.ok:
                raise InvalidCandidate(rep.reason or "rejected")
        out["ok"] = True
        X = torch.tensor(req["X"], dtype=torch.float64)
        layout = [(k, h.shape, h.size(d)) for k, h in spec.hyperparameters.items()]

        def gram(u: torch.Tensor) -> torch.Tensor:
            params, i = {}, 0
            for name, shape, size in layout:
                seg = u[i : i + size].exp()
                params[name] = seg if shape == "ard" else seg[0]
                i += size
            return spec.fn(X, X, params).to(torch.float64)

        grams, jacs = [], []
        for theta in req.get("thetas") or []:
            u = torch.tensor(theta, dtype=torch.float64)
            with torch.no_grad():
                grams.append(gram(u).numpy())
            # Central differences, not autograd: any kernel code works, and forward-mode AD
            # would import torch._dynamo (~3 s a run) for many ops.
            J = []
            with torch.no_grad():
                for j in range(u.shape[0]):
                    e = torch.zeros_like(u)
                    e[j] = FD_STEP
                    J.append((gram(u + e) - gram(u - e)) / (2.0 * FD_STEP))
            n = X.shape[0]
            jacs.append(torch.stack(J).numpy() if J else np.zeros((0, n, n)))
        if grams:
            np.save("gram.npy", np.stack(grams).astype(np.float64))
            np.save("jac.npy", np.stack(jacs).astype(np.float64))
    except InvalidCandidate as e:
        out.update(ok=False, reason=str(e))
    except Exception as e:  # any crash of candidate code is a rejection, reported verbatim
        out.update(ok=False, reason=f"kernel raised {type(e).__name__}: {e}")
    with open("oracle.json", "w") as fh:
        json.dump(out, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())

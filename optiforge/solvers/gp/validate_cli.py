"""Validate (and optionally score) kernel source in a fresh process; meant to run inside a sandbox.

Usage: ``python -m optiforge.solvers.gp.validate_cli < request.json``. The request is
``{"source": str, "d": int, "n_probe"?: int, "max_hyperparameters"?: int,
"jitter_max"?: float, "seed"?: int, "X"?: [[...]], "y"?: [...], "n_restarts"?: int}``.
Prints one JSON object: the ``ValidationReport`` fields, plus ``loo_crps``, ``nll``,
``bic`` and ``params`` when ``X``/``y`` were given and the kernel is valid. Exit code 0
whenever a report was printed (a rejected kernel is a result, not a crash); 2 on a
malformed request.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, ValidationError

from optiforge.errors import InvalidCandidate, SolverError
from optiforge.solvers.gp.exact import ExactGP
from optiforge.solvers.gp.validation import kernel_from_source, validate_kernel


class ValidateRequest(BaseModel):
    """One validation request."""

    model_config = ConfigDict(extra="forbid")

    source: str
    d: int
    n_probe: int = 32
    max_hyperparameters: int = 64
    jitter_max: float = 1e-4
    seed: int = 0
    X: list[list[float]] | None = None
    y: list[float] | None = None
    n_restarts: int = 2
    n_fingerprint: int = 16
    """Size of the fingerprint: the fitted normalised Gram matrix on the first inputs of X."""


def handle(req: ValidateRequest) -> dict[str, Any]:
    """Validate the request's kernel; fit and score it on X/y if given."""
    try:
        spec = kernel_from_source(req.source)
    except InvalidCandidate as e:
        return {"ok": False, "reason": str(e)}
    rep = validate_kernel(
        spec,
        req.d,
        n_probe=req.n_probe,
        max_hyperparameters=req.max_hyperparameters,
        jitter_max=req.jitter_max,
        seed=req.seed,
    )
    out: dict[str, Any] = rep.model_dump()
    if rep.ok and req.X is not None and req.y is not None:
        try:
            gp = ExactGP(spec, n_restarts=req.n_restarts, seed=req.seed).fit(
                torch.tensor(req.X, dtype=torch.float64), torch.tensor(req.y, dtype=torch.float64)
            )
            assert gp.params is not None
            with torch.no_grad():
                P = torch.tensor(req.X[: req.n_fingerprint], dtype=torch.float64)
                K = spec.fn(P, P, gp.params.kernel).to(torch.float64)
                dg = torch.diagonal(K).clamp_min(1e-300).sqrt()
                fingerprint = (K / (dg.unsqueeze(-1) * dg.unsqueeze(0))).tolist()
            out.update(
                loo_crps=gp.loo_crps(),
                nll=gp.nll_,
                bic=gp.bic(),
                params=gp.params.as_floats(),
                fingerprint=fingerprint,
            )
        except SolverError as e:
            out.update(ok=False, reason=f"fit failed: {e}")
    return out


def main() -> int:
    """Read a request from stdin, print the JSON report."""
    try:
        req = ValidateRequest.model_validate_json(sys.stdin.read())
    except ValidationError as e:
        print(json.dumps({"ok": False, "reason": f"malformed request: {e.errors()[0]['msg']}"}))
        return 2
    print(json.dumps(handle(req)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

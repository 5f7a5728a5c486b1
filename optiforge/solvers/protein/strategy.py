"""Score a pool of sequence variants with a strategy of expertise blocks.

A block is Python source defining ``score(variant, ctx) -> float`` (higher: the variant is
predicted better), with a docstring that states the mechanism it encodes and module-level
constants an edit may change (``THRESHOLD = 0.5``, ``SCALE = "kd"``). It sees ``props``
(``optiforge.solvers.protein.properties``) and ``math``. A strategy is
``{"blocks": {name: source}, "weights": {name: float}}``: each block's outputs over the
pool are z-normalized (so weights compare), the weighted sum is the strategy's score, and
the pool is ranked by it (ties keep pool order).

``variant``: ``{"id": int, "mutations": [[position, wild_type_aa, new_aa], ...],
"sequence": str}`` (0-based positions). ``ctx``: ``{"wt": str, "burial": [float] (predicted,
0 exposed .. 1 buried), "ss": str (predicted, H helix / E strand / C coil), "property":
"thermostability" | "solubility"}``.

This module runs inside the sandbox (``run_request``): block code is untrusted.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from typing import Any

from optiforge.solvers.protein import properties

Variant = dict[str, Any]


def load_block(source: str, name: str) -> Callable[[Variant, dict[str, Any]], float]:
    """The ``score`` function of a block's source; ``ValueError`` when it defines none."""
    ns: dict[str, Any] = {"props": properties, "math": math, "__name__": f"block_{name}"}
    exec(compile(source, f"<block {name}>", "exec"), ns)  # noqa: S102  # trusted: runs inside the sandbox (shipped by package_files); the parent never calls it on candidate code
    fn = ns.get("score")
    if not callable(fn):
        raise ValueError(f"block {name!r} defines no score(variant, ctx)")
    return fn  # type: ignore[no-any-return]


def _z(xs: list[float]) -> list[float]:
    m = statistics.fmean(xs)
    sd = statistics.pstdev(xs)
    return [0.0 if sd < 1e-12 else (x - m) / sd for x in xs]


def score_pool(
    strategy: dict[str, Any], pool: list[Variant], ctx: dict[str, Any]
) -> dict[str, Any]:
    """``{"scores": [...], "blocks": {name: [z-scores]}, "errors": {name: why}}`` in pool
    order. A block that fails (or returns a non-finite number) is reported and contributes
    nothing."""
    blocks: dict[str, list[float]] = {}
    errors: dict[str, str] = {}
    weights = {k: float(v) for k, v in (strategy.get("weights") or {}).items()}
    for name, source in (strategy.get("blocks") or {}).items():
        try:
            fn = load_block(str(source), name)
            raw = [float(fn(v, ctx)) for v in pool]
            if not all(math.isfinite(x) for x in raw):
                raise ValueError("returned a non-finite value")
            blocks[name] = [round(z, 5) for z in _z(raw)]
        except Exception as e:  # noqa: BLE001 - any failure of untrusted code is reported
            errors[name] = f"{type(e).__name__}: {e}"[:300]
    scores = [
        round(sum(weights.get(name, 1.0) * zs[i] for name, zs in blocks.items()), 6)
        for i in range(len(pool))
    ]
    return {"scores": scores, "blocks": blocks, "errors": errors}


def run_request(path: str = "request.json") -> None:
    """Sandbox entry: score every strategy of the request on its pool; print JSON."""
    with open(path) as f:
        req = json.load(f)
    out = [score_pool(s, req["pool"], req["ctx"]) for s in req["strategies"]]
    print(json.dumps(out))

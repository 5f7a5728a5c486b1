"""The claims of CV-ZOD and SZO-kappa (issue 24, items 4-5), as printed tables.

    python benchmarks/zo_claims_cvzod_szo.py --quick          # a few CPU-minutes
    python benchmarks/zo_claims_cvzod_szo.py --part cvzod     # one half, full size

CV-ZOD: quadratic (condition number 10 and 100, d = 30) and the chained Rosenbrock
function (d = 20); hints of quality ``q`` (``cos(hint, gradient) = q``, fresh noise each
step; ``q = 0`` misses the gradient) and a *biased* hint (the gradient of a shifted
surrogate); CV-ZOD against gradient descent (first order), pure Gaussian-smoothing ZO and
the guided method (hint subspace only). Reported: ``f / f0`` after ``N`` evaluations
(median over seeds) and evaluations to reach ``1e-4 f0``.

SZO-kappa: sklearn digits (256 images), a ``64-32-10`` tanh MLP and a one-conv CNN,
full batch; SZO against weight perturbation (orthogonalized Gaussian) and SPSA
(Rademacher) at the same forward-pass count, and backprop. Reported: mean cosine of each
gradient estimate with the backprop gradient (at init and along a backprop trajectory),
and training loss after ``N`` forward passes at a shared learning rate and at each
method's best learning rate from a grid. Nothing is timed: the cost unit is the
evaluation (forward pass).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from optiforge.solvers.asktell import make  # noqa: E402
from optiforge.solvers.zo.cvzod import CVZOD  # noqa: E402
from optiforge.solvers.zo.szo import SZO, TorchObjective  # noqa: E402

Fn = Callable[[np.ndarray], float]
Grad = Callable[[np.ndarray], np.ndarray]

# -- CV-ZOD -----------------------------------------------------------------------------------


def quadratic(d: int, cond: float) -> tuple[Fn, Grad, np.ndarray, float]:
    lam = np.logspace(0, np.log10(cond), d)
    return (
        lambda x: 0.5 * float(np.sum(lam * x * x)),
        lambda x: lam * x,
        np.ones(d),
        float(lam.max()),
    )


def rosenbrock(d: int) -> tuple[Fn, Grad, np.ndarray, float]:
    def f(x: np.ndarray) -> float:
        return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))

    def g(x: np.ndarray) -> np.ndarray:
        out = np.zeros_like(x)
        r = x[1:] - x[:-1] ** 2
        out[:-1] += -400 * x[:-1] * r - 2 * (1 - x[:-1])
        out[1:] += 200 * r
        return out

    return f, g, np.zeros(d), 1000.0  # L over the region the runs visit (GD stable at 1e-3)


def quality_hint(grad: Grad, q: float, seed: int) -> Callable[[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(1000 + seed)

    def hint(x: np.ndarray) -> np.ndarray:
        g = grad(x)
        g = g / (np.linalg.norm(g) + 1e-300)
        z = rng.standard_normal(x.size)
        z -= (z @ g) * g
        return q * g + np.sqrt(1 - q * q) * z / np.linalg.norm(z)

    return hint


def biased_hint(grad: Grad, x0: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    shift = np.random.default_rng(7).standard_normal(x0.size)
    shift *= 0.3 * np.sqrt(x0.size) / np.linalg.norm(shift)
    return lambda x: grad(x - shift)


def run_cvzod(
    f: Fn, x0: np.ndarray, lr: float, budget: int, seed: int, **kw: Any
) -> tuple[np.ndarray, np.ndarray]:
    opt = make("cvzod", x0.size, seed=seed, x0=x0, lr=lr, **kw)
    assert isinstance(opt, CVZOD)
    evals, vals, n = [], [], 0
    while n < budget:
        X = opt.ask()
        opt.tell(X, np.array([f(x) for x in X]))
        n += len(X)
        if opt._f0 is None:
            evals.append(n)
            vals.append(f(opt.recommend()))
    return np.array(evals), np.array(vals)


def at(evals: np.ndarray, vals: np.ndarray, n: int) -> float:
    ok = evals <= n
    return float(vals[ok][-1]) if ok.any() else float("nan")


def to_target(evals: np.ndarray, vals: np.ndarray, target: float) -> float:
    hit = np.flatnonzero(vals <= target)
    return float(evals[hit[0]]) if hit.size else float("inf")


def cvzod_tables(quick: bool) -> None:
    seeds = range(2 if quick else 5)
    problems = {
        "quadratic d=30 cond=10": (quadratic(30, 10.0), 3000 if quick else 6000, 1e-4),
        "quadratic d=30 cond=100": (quadratic(30, 100.0), 6000 if quick else 20000, 1e-4),
        "rosenbrock d=20": (rosenbrock(20), 6000 if quick else 20000, 0.1),
    }
    for title, ((f, grad, x0, L), budget, rel) in problems.items():
        f0, lr, target = f(x0), 1.0 / L, rel * f(x0)
        x, gd_steps, gd_vals = x0.copy(), None, []
        for t in range(budget):
            x = x - lr * grad(x)
            gd_vals.append(f(x))
            if gd_steps is None and gd_vals[-1] <= target:
                gd_steps = t + 1
        print(f"\n## CV-ZOD on {title}: f0 = {f0:.4g}, N = {budget} evaluations, lr = 1/L")
        print(
            f"{'method':<10}{'hint':<10}{'f/f0 @ N/4':>12}{'f/f0 @ N':>12}"
            f"{f'evals to {rel:g} f0':>20}{f'steps to {rel:g} f0':>20}"
        )
        gq, gn = gd_vals[budget // 4 - 1] / f0, gd_vals[-1] / f0
        print(f"{'GD':<10}{'(grad)':<10}{gq:>12.3g}{gn:>12.3g}{'-':>20}{gd_steps or 'inf':>20}")
        print("  (GD row: per gradient, i.e. N/4 and N gradient steps)")
        rows: list[tuple[str, str, dict[str, Any]]] = []
        for name in ("exact", "q=0.9", "q=0.5", "q=0.0", "biased"):
            for mode in ("cv", "guided"):
                rows.append((mode, name, {"mode": mode}))
        rows.append(("zo", "-", {"mode": "zo"}))
        for mode, name, kw in rows:
            quarter, full, tt, st = [], [], [], []
            for s in seeds:
                if name == "exact":
                    hint = grad
                elif name == "biased":
                    hint = biased_hint(grad, x0)
                elif name.startswith("q="):
                    hint = quality_hint(grad, float(name[2:]), s)
                else:
                    hint = None
                ev, vals = run_cvzod(f, x0, lr, budget, s, hint_fn=hint, **kw)
                quarter.append(at(ev, vals, budget // 4) / f0)
                full.append(at(ev, vals, budget) / f0)
                tt.append(to_target(ev, vals, target))
                hit = np.flatnonzero(vals <= target)
                st.append(float(hit[0] + 1) if hit.size else float("inf"))
            print(
                f"{mode:<10}{name:<10}{np.median(quarter):>12.3g}{np.median(full):>12.3g}"
                f"{np.median(tt):>20.6g}{np.median(st):>20.6g}"
            )


# -- SZO-kappa --------------------------------------------------------------------------------


def digits(n: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(X))[:n]
    return torch.tensor(X[idx] / 16.0), torch.tensor(y[idx])


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10))


def cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(128, 10),
    )


METHODS: dict[str, dict[str, Any]] = {
    "SZO": {},
    "SZO-k8-plain": {"kappa": 8, "whiten": 0.0},
    "weight-pert": {"directions": "random"},
    "SPSA": {"directions": "random", "orthogonalize": False, "rademacher": True},
}


def szo_step(opt: SZO, obj: TorchObjective) -> int:
    n = 0
    if opt.phase == "base":
        X = opt.ask()
        opt.tell(X, np.array([obj(X[0])]), [obj.feedback(X[0])])
        n += 1
    X = opt.ask()
    opt.tell(X, np.array([obj(x) for x in X]))
    return n + len(X)


def make_szo(obj: TorchObjective, x0: np.ndarray, seed: int, **kw: Any) -> SZO:
    opt = make("szo", obj.dim, seed=seed, layers=obj.specs, x0=x0, **kw)
    assert isinstance(opt, SZO)
    return opt


def cosines(obj: TorchObjective, x: np.ndarray, draws: int, **kw: Any) -> float:
    g = obj.grad(x)
    out = []
    for s in range(draws):
        opt = make_szo(obj, x, s, **kw)
        szo_step(opt, obj)
        assert opt.last_grad is not None
        out.append(opt.last_grad @ g / (np.linalg.norm(opt.last_grad) * np.linalg.norm(g)))
    return float(np.mean(out))


def train(obj: TorchObjective, x0: np.ndarray, passes: int, seed: int, **kw: Any) -> float:
    opt = make_szo(obj, x0, seed, **kw)
    n = 0
    while n < passes - 2 * opt.n_probes - 1:
        n += szo_step(opt, obj)
    return obj(opt.recommend())


def backprop(obj: TorchObjective, x0: np.ndarray, passes: int, lr: float) -> float:
    x = x0.copy()
    for _ in range(passes // 2):  # a backprop step: one forward and one backward pass
        x = x - lr * obj.grad(x)
    return obj(x)


def szo_tables(quick: bool) -> None:
    X, y = digits()
    passes = 1000 if quick else 3000
    seeds = range(1 if quick else 3)
    draws = 10 if quick else 30
    nets = {"MLP 64-32-10": mlp, "CNN conv3x3x8-pool-fc": cnn}
    grids = {
        "MLP 64-32-10": (1.0, 10.0, 30.0, 100.0, 200.0, 300.0),
        "CNN conv3x3x8-pool-fc": (1.0, 3.0, 10.0, 30.0, 100.0),
    }
    for title, build in nets.items():
        obj = TorchObjective(build(), nn.functional.cross_entropy, X, y)
        x0 = obj.x0()
        f0 = obj(x0)
        # points along a backprop trajectory for the alignment
        pts, x = [("init", x0)], x0.copy()
        for t in range(1, 201):
            x = x - 0.5 * obj.grad(x)
            if t % 100 == 0:
                pts.append((f"bp step {t}", x.copy()))
        print(f"\n## SZO-kappa on digits, {title}: {obj.dim} parameters, loss0 {f0:.3f}")
        print("mean cosine of the estimate with the backprop gradient (4 probe pairs):")
        print(f"{'point':<14}" + "".join(f"{m:>14}" for m in METHODS) + f"{'SZO / SPSA':>12}")
        # SZO-k8-plain: the top-8 subspace without whitening (best aligned, see szo.py)
        for name, xp in pts:
            cs = {m: cosines(obj, xp, draws, **kw) for m, kw in METHODS.items()}
            print(
                f"{name:<14}"
                + "".join(f"{cs[m]:>14.3f}" for m in METHODS)
                + f"{cs['SZO'] / cs['SPSA']:>12.2f}"
            )
        print(f"training loss after {passes} forward passes (mean over seeds), by lr:")
        print(f"{'lr':<8}" + "".join(f"{m:>14}" for m in METHODS) + f"{'backprop':>12}")
        best: dict[str, tuple[float, float]] = {}
        for lr in grids[title]:
            row = {
                m: float(np.mean([train(obj, x0, passes, s, lr=lr, **kw) for s in seeds]))
                for m, kw in METHODS.items()
            }
            row["backprop"] = backprop(obj, x0, passes, lr)
            for m, v in row.items():
                v = v if np.isfinite(v) else float("inf")
                if m not in best or v < best[m][0]:
                    best[m] = (v, lr)
            print(
                f"{lr:<8g}"
                + "".join(f"{row[m]:>14.4g}" for m in METHODS)
                + f"{row['backprop']:>12.4g}"
            )
        print("best lr:  " + ", ".join(f"{m} {v:.3f} (lr {lr:g})" for m, (v, lr) in best.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer seeds and evaluations")
    ap.add_argument("--part", choices=("cvzod", "szo", "all"), default="all")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.part in ("cvzod", "all"):
        cvzod_tables(args.quick)
    if args.part in ("szo", "all"):
        szo_tables(args.quick)


if __name__ == "__main__":
    main()

"""Jacobian descent / IWRM claims at full size (optiforge/solvers/train/jacobian_descent.py).

(a) Pareto: JD on ``ConflictingQuadratics`` (3 quadratics in R^8, scales 10/1/0.1, minimizers
    apart, start next to the smallest-scale minimizer) with UPGrad (ours: tight projector),
    UPGrad with torchjd's default projector, MGDA and Mean; same steps and step size.
(b) IWRM vs ERM on scikit-learn's bundled digits: an MLP, SGD with momentum, same data
    order, initialization and steps; test accuracy/loss, full-train mean and worst-example
    loss; paired 95% t-intervals over seeds.
(c) Memory: peak tensor bytes (``PeakTensorBytes``, deterministic) of one JD step via the
    Gramian (autogram) and via the full Jacobian (autojac), MLPs of growing depth; and the
    largest difference between the two updates.

    /work/wt/heavy python benchmarks/jd_claims.py [--quick] [--out runs/]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from scipy import stats
from sklearn.datasets import load_digits
from torch import nn

from optiforge.solvers.train.jacobian_descent import (
    ConflictingQuadratics,
    PeakTensorBytes,
    descend,
    fit_jd,
    jd_step,
    make_aggregator,
    upgrad,
)


def t_interval(xs: list[float]) -> tuple[float, float]:
    """Mean and half-width of the 95% t-interval."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, float("nan")
    return m, float(stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / len(xs) ** 0.5)


def fmt(xs: list[float], digits: int = 4) -> str:
    m, h = t_interval(xs)
    return f"{m:.{digits}f} +- {h:.{digits}f}"


class Digits:
    """scikit-learn's bundled digits (1797 8x8 images, features scaled to [0, 1]) as a
    ``classify`` ModelProblem: a fixed train/test split, an MLP, minibatches drawn with
    the method's generator."""

    name = "digits-jd"
    kind = "classify"
    description = "8x8 handwritten digits, 10 classes, an MLP"

    def __init__(self, n_train: int = 1000, batch_size: int = 32, hidden: int = 64) -> None:
        x, y = load_digits(return_X_y=True)
        g = torch.Generator().manual_seed(1234)
        perm = torch.randperm(len(y), generator=g)
        xt = torch.as_tensor(x, dtype=torch.float32)[perm] / 16.0
        yt = torch.as_tensor(y)[perm]
        self.x_train, self.y_train = xt[:n_train], yt[:n_train]
        self.x_test, self.y_test = xt[n_train:], yt[n_train:]
        self.batch_size = batch_size
        self.hidden = hidden

    def make_model(self, seed: int) -> nn.Module:
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(64, self.hidden), nn.ReLU(), nn.Linear(self.hidden, 10))

    def batch(self, step: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
        idx = torch.randint(0, len(self.y_train), (self.batch_size,), generator=gen)
        return self.x_train[idx], self.y_train[idx]

    def losses(self, model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        x, y = batch
        return F.cross_entropy(model(x), y, reduction="none")

    def evaluate(self, model: nn.Module) -> float:
        with torch.no_grad():
            return float(F.cross_entropy(model(self.x_test), self.y_test))

    def scores(self, model: nn.Module) -> dict[str, float]:
        with torch.no_grad():
            test_logits = model(self.x_test)
            train_l = F.cross_entropy(model(self.x_train), self.y_train, reduction="none")
            return {
                "test_acc": float((test_logits.argmax(1) == self.y_test).float().mean()),
                "test_loss": float(F.cross_entropy(test_logits, self.y_test)),
                "train_loss": float(train_l.mean()),
                "train_worst": float(train_l.max()),
                "train_p99": float(torch.quantile(train_l, 0.99)),
            }


def part_a(seeds: list[int], steps: int) -> list[str]:
    rows = ["## (a) Pareto stationarity on ConflictingQuadratics (scales 10/1/0.1, R^8)", ""]
    rows.append(f"{steps} steps, lr = 0.2 / L, seeds {seeds}; stationarity = min-norm element of the convex hull of the gradients, end / start; worst = max_i f_i(x_T)/f_i(x0)")  # fmt: skip
    rows.append("")
    rows.append("| aggregator | stationarity (geo-mean over seeds) | max over seeds | worst f_i ratio (mean +- 95%) | end dominates start |")  # fmt: skip
    rows.append("|---|---|---|---|---|")
    runs = [(n, steps, 0.2) for n in ("upgrad", "upgrad-torchjd", "mgda", "mean")]
    runs.append(("upgrad", 16 * steps, 0.0125))  # small steps: the first-order guarantee
    for name, n_steps, lr_factor in runs:
        res = []
        for seed in seeds:
            p = ConflictingQuadratics.make(seed)
            res.append(descend(p, make_aggregator(name), n_steps, lr_factor / p.smoothness))
        st = [r["stationarity"] for r in res]
        geo = float(torch.tensor(st).log().mean().exp())
        dom = sum(r["dominates_start"] for r in res)
        label = name if lr_factor == 0.2 else f"{name} (lr {lr_factor}/L, {n_steps} steps)"
        rows.append(f"| {label} | {geo:.2e} | {max(st):.2e} | {fmt([r['worst_ratio'] for r in res], 2)} (max {max(r['worst_ratio'] for r in res):.2f}) | {dom:.0f}/{len(seeds)} |")  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def part_b(seeds: list[int], steps: int, lr: float, momentum: float) -> list[str]:
    """ERM, IWRM (UPGrad) and a control: ERM at ``lr`` times IWRM's mean update-length
    ratio for the same seed (UPGrad adds back what the mean cancels: longer steps)."""
    prob = Digits()
    keys = ["test_acc", "test_loss", "train_loss", "train_worst", "train_p99"]
    methods = ("erm", "iwrm", "erm-lr-scaled")
    per: dict[str, dict[str, list[float]]] = {m: {k: [] for k in keys} for m in methods}
    secs = dict.fromkeys(methods, 0.0)
    wsums: list[float] = []
    for seed in seeds:
        for method in methods:
            t0 = time.perf_counter()
            if method == "iwrm":
                res = fit_jd(prob, upgrad(), lr, momentum, steps, seed)
                wsums.append(float(res.extra["mean_length_ratio"]))
            else:
                scale = wsums[-1] if method == "erm-lr-scaled" else 1.0
                res = fit_jd(prob, None, lr * scale, momentum, steps, seed)
            secs[method] += time.perf_counter() - t0
            for k, v in prob.scores(res.model).items():
                per[method][k].append(v)
        print(f"seed {seed}: " + ", ".join(f"{m} acc {per[m]['test_acc'][-1]:.4f}" for m in per) + f", length ratio {wsums[-1]:.2f}", flush=True)  # fmt: skip
    rows = ["", f"## (b) IWRM (UPGrad over the batch's examples) vs ERM on digits ({len(seeds)} seeds, {steps} steps, batch 32, SGD lr {lr} momentum {momentum}, MLP 64-64-10, 1000 train / 797 test)", ""]  # fmt: skip
    rows.append(f"IWRM's mean update length over the mean gradient's on the same batch: {fmt(wsums, 2)}; erm-lr-scaled = ERM at lr x that ratio (same seed), a control for step length")  # fmt: skip
    rows.append("")
    rows.append("| metric | ERM | IWRM | ERM lr-scaled | IWRM - ERM (paired, 95%) | IWRM - ERM lr-scaled (paired, 95%) |")  # fmt: skip
    rows.append("|---|---|---|---|---|---|")
    for k in keys:
        d1 = [a - b for a, b in zip(per["iwrm"][k], per["erm"][k], strict=True)]
        d2 = [a - b for a, b in zip(per["iwrm"][k], per["erm-lr-scaled"][k], strict=True)]
        rows.append(f"| {k} | {fmt(per['erm'][k])} | {fmt(per['iwrm'][k])} | {fmt(per['erm-lr-scaled'][k])} | {fmt(d1)} | {fmt(d2)} |")  # fmt: skip
    rows.append(f"| wall s per run | {secs['erm'] / len(seeds):.2f} | {secs['iwrm'] / len(seeds):.2f} | {secs['erm-lr-scaled'] / len(seeds):.2f} | | |")  # fmt: skip
    for r in rows:
        print(r)
    return rows


def mlp(depth: int, width: int) -> nn.Module:
    layers: list[nn.Module] = [nn.Linear(64, width), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.ReLU()]
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


def step_peak(depth: int, width: int, batch: int, gramian: bool) -> tuple[int, int, list[torch.Tensor]]:  # fmt: skip
    torch.manual_seed(0)
    model = mlp(depth, width)
    x = torch.randn(batch, 64, generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, 10, (batch,), generator=torch.Generator().manual_seed(2))
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    if gramian:  # the engine's hooks are made once, outside the measured step
        from optiforge.solvers.train.jacobian_descent import engine_for

        engine_for(model, 0)
    with PeakTensorBytes() as acct:
        jd_step(model, lambda: F.cross_entropy(model(x), y, reduction="none"), upgrad(), opt, gramian=gramian)  # fmt: skip
    grads = [p.grad.detach().clone() for p in model.parameters() if p.grad is not None]
    return acct.peak, acct.largest, grads


def part_c(configs: list[tuple[int, int, int]]) -> list[str]:
    rows = ["", "## (c) peak tensor bytes of one UPGrad step: Gramian (autogram) vs full Jacobian (autojac)", ""]  # fmt: skip
    rows.append("| depth x width, batch | params | B x n_params x 4 B | Jacobian peak | Gramian peak | ratio | largest tensor J / G | max abs update diff |")  # fmt: skip
    rows.append("|---|---|---|---|---|---|---|---|")
    for depth, width, batch in configs:
        pj, lj, gj = step_peak(depth, width, batch, gramian=False)
        pg, lg, gg = step_peak(depth, width, batch, gramian=True)
        n = sum(p.numel() for p in mlp(depth, width).parameters())
        diff = max(float((a - b).abs().max()) for a, b in zip(gj, gg, strict=True))
        rows.append(f"| {depth} x {width}, {batch} | {n} | {batch * n * 4 / 1e6:.2f} MB | {pj / 1e6:.2f} MB | {pg / 1e6:.2f} MB | {pj / pg:.2f} | {lj / 1e6:.2f} / {lg / 1e6:.2f} MB | {diff:.1e} |")  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="runs")
    ap.add_argument("--parts", default="abc")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows: list[str] = []
    if "a" in args.parts:
        rows += part_a(list(range(3 if args.quick else 10)), 200 if args.quick else 1000)
    if "b" in args.parts:
        rows += part_b(list(range(2 if args.quick else 8)), 60 if args.quick else 400, 0.05, 0.9)
    if "c" in args.parts:
        cfgs = (
            [(2, 64, 32)] if args.quick else [(2, 64, 64), (4, 64, 64), (8, 64, 64), (8, 128, 128)]
        )
        rows += part_c(cfgs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "jd_claims.md").write_text("\n".join(rows) + "\n")
    print(f"wrote {out / 'jd_claims.md'}")


if __name__ == "__main__":
    main()

"""Plain torch optimizers as catalogue entries (the ``train`` suite's references):
``adamw`` (its defaults are the suite's fixed default) and ``sgd`` with momentum. The
optimizers are torch's; the loops are ``fit_model`` and, on a bilevel problem,
``fit_erm``: plain empirical risk minimization of the inner loss with the outer weights
``lam`` left as ``make`` returns them (no cleaning, no reweighting: the reference a
bilevel method must beat)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from optiforge.solvers.train.api import (
    BilevelProblem,
    HParam,
    ModelProblem,
    TrainMethod,
    TrainResult,
)


def fit_model(
    problem: ModelProblem,
    make_opt: Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer],
    steps: int,
    seed: int,
) -> TrainResult:
    """The plain loop: fresh model from ``seed``, ``steps`` steps of mean loss."""
    torch.manual_seed(seed)
    model = problem.make_model(seed)
    opt = make_opt([p for p in model.parameters() if p.requires_grad])
    gen = torch.Generator().manual_seed(seed + 1)
    curve = []
    for step in range(steps):
        loss = problem.losses(model, problem.batch(step, gen)).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        curve.append(float(loss.detach()))
    return TrainResult(model=model, curve=curve)


def fit_erm(
    problem: BilevelProblem,
    make_opt: Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer],
    steps: int,
    seed: int,
) -> TrainResult:
    """The inner level alone: ``steps`` steps on ``inner_loss`` with ``lam`` fixed at its
    starting value (``make(seed)``); never reads the outer data."""
    torch.manual_seed(seed)
    model, lam = problem.make(seed)
    lam = lam.detach()
    opt = make_opt([p for p in model.parameters() if p.requires_grad])
    gen = torch.Generator().manual_seed(seed + 1)
    curve = []
    for step in range(steps):
        loss = problem.inner_loss(model, lam, problem.inner_batch(step, gen))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        curve.append(float(loss.detach()))
    return TrainResult(model=model, curve=curve, lam=lam)


def _fit(
    problem: ModelProblem | BilevelProblem,
    make_opt: Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer],
    steps: int,
    seed: int,
) -> TrainResult:
    if problem.kind == "bilevel":
        assert isinstance(problem, BilevelProblem)
        return fit_erm(problem, make_opt, steps, seed)
    assert isinstance(problem, ModelProblem)
    return fit_model(problem, make_opt, steps, seed)


def _adamw(problem: ModelProblem, hp: dict[str, float], steps: int, seed: int) -> TrainResult:
    return _fit(problem, lambda ps: torch.optim.AdamW(ps, lr=hp["lr"], weight_decay=hp["weight_decay"]), steps, seed)  # fmt: skip


def _sgd(problem: ModelProblem, hp: dict[str, float], steps: int, seed: int) -> TrainResult:
    return _fit(problem, lambda ps: torch.optim.SGD(ps, lr=hp["lr"], momentum=hp["momentum"]), steps, seed)  # fmt: skip


ADAMW = TrainMethod(
    name="adamw",
    description="torch AdamW (decoupled weight decay); its defaults are the suite's fixed "
    "default; on a bilevel problem plain ERM of the inner loss, lam fixed (no cleaning)",
    kinds=frozenset({"classify", "lm", "lowrank", "bilevel"}),
    hparams={"lr": HParam(1e-4, 1e-1, 1e-3), "weight_decay": HParam(1e-6, 1e-1, 1e-2)},
    run=_adamw,
)
SGD = TrainMethod(
    name="sgd",
    description="torch SGD with heavy-ball momentum (on a bilevel problem: ERM, lam fixed)",
    kinds=frozenset({"classify", "lm", "lowrank", "bilevel"}),
    hparams={"lr": HParam(1e-3, 1.0, 0.05), "momentum": HParam(0.0, 0.99, 0.9, log=False)},
    run=_sgd,
)

"""The contract between training problems and training methods (the ``train`` suite's
back end): a *problem* says what is trained and how it is scored; a *method* (an
optimizer, or a training loop where the method is a loop) trains it for a step budget.

Problem kinds (``TrainProblem.kind``) and what a method may call:

- ``classify`` / ``lm`` (``ModelProblem``): ``make_model(seed)`` builds a fresh
  ``nn.Module``; ``batch(step, gen)`` draws a training batch; ``losses(model, batch)`` is
  the per-example loss, shape ``(B,)`` (its mean is the training loss; Jacobian descent
  and IWRM use the rows); ``evaluate(model)`` is the held-out score (lower is better).
- ``lowrank`` (``LowRankProblem``, also a ``ModelProblem`` whose model holds factors ``L``
  ``(m, r)`` and ``R`` ``(n, r)`` with ``W = L @ R.T``): ``matrix_losses(W, batch)`` and
  ``evaluate_matrix(W)`` score a matrix directly, so a method may keep its own point on the
  fixed-rank manifold (``shape``, ``rank``).
- ``bilevel`` (``BilevelProblem``): an inner model trained on a weighted training loss and
  outer weights ``lam`` (one per training example, or per group) scored on clean
  validation data: ``make(seed) -> (model, lam)``, ``inner_loss(model, lam, batch)``,
  ``outer_loss(model, batch)``, ``inner_batch``/``outer_batch``, ``evaluate(model, lam)``.

Candidate code never sees what it is scored on: ``evaluate`` reads held-out data the
methods are not given; the suite calls it after the method returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import torch
from torch import nn

Kind = Literal["classify", "lm", "lowrank", "bilevel"]
Batch = tuple[torch.Tensor, ...]


@runtime_checkable
class TrainProblem(Protocol):
    name: str
    kind: Kind
    description: str
    """What is trained, in words (what the formulator reads)."""


@runtime_checkable
class ModelProblem(TrainProblem, Protocol):
    def make_model(self, seed: int) -> nn.Module: ...

    def batch(self, step: int, gen: torch.Generator) -> Batch: ...

    def losses(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """Per-example training losses, shape ``(B,)``."""
        ...

    def evaluate(self, model: nn.Module) -> float:
        """Held-out score, lower is better (not given to methods)."""
        ...


@runtime_checkable
class LowRankProblem(ModelProblem, Protocol):
    shape: tuple[int, int]
    rank: int

    def matrix_losses(self, w: torch.Tensor, batch: Batch) -> torch.Tensor:
        """Per-measurement losses of the matrix ``w`` ``(m, n)``, shape ``(B,)``."""
        ...

    def evaluate_matrix(self, w: torch.Tensor) -> float: ...


@runtime_checkable
class BilevelProblem(TrainProblem, Protocol):
    def make(self, seed: int) -> tuple[nn.Module, torch.Tensor]:
        """A fresh inner model and outer weights ``lam`` (``(N,)``, one per example)."""
        ...

    def inner_batch(self, step: int, gen: torch.Generator) -> Batch:
        """A training batch; its last tensor holds the examples' indices into ``lam``."""
        ...

    def outer_batch(self, step: int, gen: torch.Generator) -> Batch: ...

    def inner_loss(self, model: nn.Module, lam: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The lam-weighted training loss (scalar)."""
        ...

    def outer_loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """The clean validation loss the outer level minimizes (scalar)."""
        ...

    def evaluate(self, model: nn.Module, lam: torch.Tensor) -> float: ...


@dataclass(frozen=True)
class HParam:
    """One hyperparameter of a method: its range (``log``: searched on a log scale) and
    the default a user gets without tuning."""

    low: float
    high: float
    default: float
    log: bool = True
    kind: Literal["float", "int"] = "float"

    def clip(self, v: float) -> float:
        v = min(max(float(v), self.low), self.high)
        return float(round(v)) if self.kind == "int" else v


@dataclass
class TrainResult:
    """What a method returns: the trained model (and ``lam`` for bilevel), the training
    loss per step (``curve``) and anything the method measures (``extra``: peak memory,
    bytes communicated, ...). The suite scores it with the problem's ``evaluate``."""

    model: nn.Module
    curve: list[float] = field(default_factory=list)
    lam: torch.Tensor | None = None
    extra: dict[str, Any] = field(default_factory=dict)


RunFn = Callable[[Any, dict[str, float], int, int], TrainResult]
"""``run(problem, hparams, steps, seed) -> TrainResult``."""


@dataclass(frozen=True)
class TrainMethod:
    """A catalogue entry: ``run`` trains ``problem`` for ``steps`` steps with ``hparams``
    (every key of ``self.hparams``; ``defaults()`` fills the rest)."""

    name: str
    description: str
    kinds: frozenset[str]
    hparams: dict[str, HParam]
    run: RunFn

    def defaults(self, given: dict[str, float] | None = None) -> dict[str, float]:
        """Every hyperparameter: ``given`` (clipped to its range; unknown keys are an
        error naming them) over the defaults."""
        given = dict(given or {})
        unknown = sorted(set(given) - set(self.hparams))
        if unknown:
            raise ValueError(f"{self.name}: unknown hyperparameter(s) {', '.join(unknown)} "
                             f"(it has {', '.join(sorted(self.hparams)) or 'none'})")  # fmt: skip
        return {k: h.clip(given.get(k, h.default)) for k, h in self.hparams.items()}

    def applies(self, problem: TrainProblem) -> bool:
        return problem.kind in self.kinds

"""Two small bilevel problems on scikit-learn's bundled digits (``load_digits``, 1797
8x8 images), for the BROS / MA-SOBA tests and ``benchmarks/bros_claims.py``. Both satisfy
``api.BilevelProblem``: the inner model is a linear classifier or a one-hidden-layer MLP
trained on ``mean_i sigmoid(lam_i) * CE_i``; the outer loss is the clean validation
cross-entropy; ``evaluate`` is the test error (lower is better).

- ``DigitsCleaning`` (hyper-data cleaning): a fraction ``corrupt`` of the training labels is
  replaced by a uniformly drawn *other* class (``corrupted`` marks them). ``detection_f1``
  scores flagging an example as corrupted when its weight fell below one half (``lam < 0``;
  ``lam`` starts at 0).
- ``DigitsImbalance`` (data reweighting): the training set keeps ``minority_frac`` of the
  examples of classes 5-9; validation and test are balanced.

The data split is fixed (``data_seed``); ``make(seed)`` only draws the model's init.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from optiforge.solvers.train.api import Batch, Kind


def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    d = load_digits()
    return torch.tensor(d.data, dtype=torch.float32) / 16.0, torch.tensor(
        d.target, dtype=torch.long
    )


class SigmoidWeightedCE:
    """The two levels' losses of a classification bilevel problem (shared with the
    ``train`` suite's ``DigitsCleaning``): inner ``mean_i sigmoid(lam_i) * CE_i`` over a
    batch ``(x, y, idx)``, outer the plain cross-entropy of a clean batch ``(x, y)``."""

    def inner_loss(self, model: nn.Module, lam: torch.Tensor, batch: Batch) -> torch.Tensor:
        x, y, idx = batch
        ce = F.cross_entropy(model(x), y, reduction="none")
        return (torch.sigmoid(lam[idx]) * ce).mean()

    def outer_loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        x, y = batch
        return F.cross_entropy(model(x), y)


@dataclass
class _DigitsBilevel(SigmoidWeightedCE):
    name: str = "digits-bilevel"
    kind: Kind = "bilevel"
    description: str = ""
    hidden: int = 0
    depth: int = 1
    """Hidden layers of width ``hidden`` (``hidden = 0``: a linear classifier)."""
    batch: int = 64
    val_batch: int = 128
    x_tr: torch.Tensor = field(default_factory=lambda: torch.empty(0))
    y_tr: torch.Tensor = field(default_factory=lambda: torch.empty(0))
    x_va: torch.Tensor = field(default_factory=lambda: torch.empty(0))
    y_va: torch.Tensor = field(default_factory=lambda: torch.empty(0))
    x_te: torch.Tensor = field(default_factory=lambda: torch.empty(0))
    y_te: torch.Tensor = field(default_factory=lambda: torch.empty(0))

    def make(self, seed: int) -> tuple[nn.Module, torch.Tensor]:
        torch.manual_seed(seed)
        model: nn.Module
        if self.hidden:
            layers: list[nn.Module] = []
            width = 64
            for _ in range(self.depth):
                layers += [nn.Linear(width, self.hidden), nn.ReLU()]
                width = self.hidden
            model = nn.Sequential(*layers, nn.Linear(width, 10))
        else:
            model = nn.Linear(64, 10)
        return model, torch.zeros(len(self.y_tr))

    def inner_batch(self, step: int, gen: torch.Generator) -> Batch:
        idx = torch.randint(len(self.y_tr), (self.batch,), generator=gen)
        return self.x_tr[idx], self.y_tr[idx], idx

    def outer_batch(self, step: int, gen: torch.Generator) -> Batch:
        idx = torch.randint(len(self.y_va), (self.val_batch,), generator=gen)
        return self.x_va[idx], self.y_va[idx]

    def test_accuracy(self, model: nn.Module) -> float:
        with torch.no_grad():
            return float((model(self.x_te).argmax(1) == self.y_te).float().mean())

    def evaluate(self, model: nn.Module, lam: torch.Tensor) -> float:
        return 1.0 - self.test_accuracy(model)


def _split(n: int, data_seed: int) -> torch.Tensor:
    return torch.randperm(n, generator=torch.Generator().manual_seed(data_seed))


@dataclass
class DigitsCleaning(_DigitsBilevel):
    """Hyper-data cleaning: ``n_train`` examples with a fraction ``corrupt`` of wrong labels,
    ``n_val`` clean validation examples, the rest of the 1797 for test."""

    n_train: int = 1000
    n_val: int = 200
    corrupt: float = 0.4
    data_seed: int = 0
    corrupted: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.bool))

    def __post_init__(self) -> None:
        x, y = _digits()
        perm = _split(len(y), self.data_seed)
        tr, va, te = perm[: self.n_train], perm[self.n_train : self.n_train + self.n_val], perm[self.n_train + self.n_val :]  # fmt: skip
        g = torch.Generator().manual_seed(self.data_seed + 1)
        y_tr = y[tr].clone()
        bad = torch.rand(self.n_train, generator=g) < self.corrupt
        shift = torch.randint(1, 10, (self.n_train,), generator=g)
        y_tr[bad] = (y_tr[bad] + shift[bad]) % 10
        self.x_tr, self.y_tr, self.corrupted = x[tr], y_tr, bad
        self.x_va, self.y_va, self.x_te, self.y_te = x[va], y[va], x[te], y[te]
        self.name = f"digits-cleaning-{int(100 * self.corrupt)}"
        self.description = (
            f"digits, {self.n_train} training labels of which {self.corrupt:.0%} corrupted; learn "
            "one weight per training example so the model trained on the weighted loss fits "
            f"{self.n_val} clean validation examples"
        )

    def detection_f1(self, lam: torch.Tensor) -> float:
        """F1 of flagging ``lam < 0`` (weight below 1/2) as corrupted."""
        flag = lam < 0
        tp = float((flag & self.corrupted).sum())
        fp, fn = float((flag & ~self.corrupted).sum()), float((~flag & self.corrupted).sum())
        return 2 * tp / max(2 * tp + fp + fn, 1.0)


@dataclass
class DigitsImbalance(_DigitsBilevel):
    """Data reweighting: classes 5-9 keep ``minority_frac`` of their training examples;
    balanced validation (``n_val``) and test sets."""

    n_val: int = 200
    n_test: int = 500
    minority_frac: float = 0.1
    data_seed: int = 0

    def __post_init__(self) -> None:
        x, y = _digits()
        perm = _split(len(y), self.data_seed)
        va, te, rest = perm[: self.n_val], perm[self.n_val : self.n_val + self.n_test], perm[self.n_val + self.n_test :]  # fmt: skip
        g = torch.Generator().manual_seed(self.data_seed + 1)
        keep = (y[rest] < 5) | (torch.rand(len(rest), generator=g) < self.minority_frac)
        tr = rest[keep]
        self.x_tr, self.y_tr = x[tr], y[tr]
        self.x_va, self.y_va, self.x_te, self.y_te = x[va], y[va], x[te], y[te]
        self.name = f"digits-imbalance-{int(100 * self.minority_frac)}"
        self.description = (
            f"digits, classes 5-9 kept at {self.minority_frac:.0%} in training ({len(tr)} "
            "examples); learn one weight per example so the weighted model fits a balanced "
            "validation set"
        )

"""High-dimensional BO problems (minimisation) on the unit cube ``[0,1]^D``.

Embedded synthetic functions follow Hvarfner et al. (2024): a ``k``-d botorch test
function lives on ``k`` active coordinates of ``[0,1]^D`` (rescaled to the function's own
box), the other ``D - k`` are inert. The literature uses the *first* ``k`` coordinates;
``embedding_seed`` picks them by a seeded permutation instead (used by heldout configs so a
method cannot exploit "the first dims matter"). Observation noise: Gaussian, std
``noise_std`` (0.01 for synthetic functions), drawn from the problem's own seeded
generator; ``evaluate_true`` is noiseless and is what the harness scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from botorch.test_functions import synthetic as bt
from torch import Tensor

from optiforge.errors import InvalidTask
from optiforge.evals.suites.hdbo.lasso import SyntheticLasso
from optiforge.evals.suites.hdbo.rover import rover_objective

_DT = torch.float64

_FUNCTIONS: dict[str, Callable[[int], bt.SyntheticTestFunction]] = {
    "levy": lambda k: bt.Levy(dim=k),
    "hartmann": lambda k: bt.Hartmann(dim=k),
    "branin": lambda k: bt.Branin(),
    "ackley": lambda k: bt.Ackley(dim=k),
    "rosenbrock": lambda k: bt.Rosenbrock(dim=k),
    "styblinski_tang": lambda k: bt.StyblinskiTang(dim=k),
}


@dataclass
class HDBOProblem:
    """A minimisation problem on ``[0,1]^D``; calling it returns noisy values, `n x D` -> `n`."""

    name: str
    dim: int
    fn: Callable[[Tensor], Tensor]
    """Noiseless objective on `n x D` unit-cube inputs."""
    active_dims: tuple[int, ...] = ()
    noise_std: float = 0.0
    optimum: float | None = None
    """Known minimum value, if any."""
    optimizer: Tensor | None = None
    """`D` unit-cube point attaining ``optimum`` (inert coordinates at 0.5), if known."""
    seed: int = 0
    _gen: torch.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._gen = torch.Generator().manual_seed(self.seed + 12345)

    @property
    def bounds(self) -> Tensor:
        """`2 x D` unit box."""
        return torch.stack([torch.zeros(self.dim, dtype=_DT), torch.ones(self.dim, dtype=_DT)])

    def _check(self, X: Tensor) -> Tensor:
        X = torch.as_tensor(X, dtype=_DT)
        if X.ndim != 2 or X.shape[1] != self.dim:
            raise InvalidTask(f"{self.name}: inputs must be `n x {self.dim}`, got {tuple(X.shape)}")
        if bool(((X < -1e-9) | (X > 1 + 1e-9)).any()) or not bool(torch.isfinite(X).all()):
            raise InvalidTask(f"{self.name}: inputs must lie in [0, 1]^{self.dim}")
        return X.clamp(0.0, 1.0)

    def evaluate_true(self, X: Tensor) -> Tensor:
        """Noiseless values at `n x D` ``X``."""
        return self.fn(self._check(X)).to(_DT).reshape(-1)

    def __call__(self, X: Tensor) -> Tensor:
        y = self.evaluate_true(X)
        if self.noise_std > 0:
            y = y + self.noise_std * torch.randn(y.shape, generator=self._gen, dtype=_DT)
        return y

    def replay_noise(self, sizes: list[int]) -> None:
        """Advance the noise stream past calls of these batch sizes (a resumed BO loop
        reloads those evaluations instead of making them); same shapes, same order, so the
        generator ends where the original calls left it."""
        if self.noise_std <= 0:
            return
        for n in sizes:
            torch.randn((n,), generator=self._gen, dtype=_DT)


def embedded(
    function: str,
    k: int,
    D: int,
    *,
    embedding_seed: int | None = None,
    noise_std: float = 0.01,
    seed: int = 0,
) -> HDBOProblem:
    """``function`` (a botorch test function of dim ``k``) embedded in ``[0,1]^D``."""
    if function not in _FUNCTIONS:
        raise InvalidTask(f"unknown function {function!r}; known: {sorted(_FUNCTIONS)}")
    if not 1 <= k <= D:
        raise InvalidTask(f"need 1 <= k <= D, got k={k}, D={D}")
    f = _FUNCTIONS[function](k)
    if f.dim != k:
        raise InvalidTask(f"{function} has fixed dimension {f.dim}, not {k}")
    if embedding_seed is None:
        active = list(range(k))
    else:
        active = torch.randperm(D, generator=torch.Generator().manual_seed(embedding_seed))[
            :k
        ].tolist()
    fb: Tensor = f.bounds  # type: ignore[assignment]
    lb, ub = fb[0].to(_DT), fb[1].to(_DT)
    idx = torch.tensor(active)

    def fn(X: Tensor) -> Tensor:
        return f.evaluate_true(lb + (ub - lb) * X[:, idx])

    xopt = None
    optimizers = getattr(f, "_optimizers", None)
    if optimizers:
        xopt = torch.full((D,), 0.5, dtype=_DT)
        xopt[idx] = (torch.tensor(optimizers[0], dtype=_DT) - lb) / (ub - lb)
    suffix = f"{k}_in_{D}" if k < D else f"{D}"
    emb = "" if embedding_seed is None else f"_e{embedding_seed}"
    return HDBOProblem(
        name=f"{function}{suffix}{emb}",
        dim=D,
        fn=fn,
        active_dims=tuple(active),
        noise_std=noise_std,
        optimum=float(f.optimal_value),
        optimizer=xopt,
        seed=seed,
    )


def rover(*, seed: int = 0) -> HDBOProblem:
    """60-d rover trajectory (see ``rover.py``); noiseless, minimise ``cost - 5``."""
    return HDBOProblem(
        name="rover60", dim=60, fn=rover_objective, active_dims=tuple(range(60)), seed=seed
    )


def lasso(d: int, *, data_seed: int = 0, seed: int = 0) -> HDBOProblem:
    """Synthetic weighted-Lasso problem with ``d`` features (see ``lasso.py``); noiseless."""
    if not 2 <= d <= 1000:
        raise InvalidTask(f"lasso needs 2 <= d <= 1000, got {d}")
    obj = SyntheticLasso(d, seed=data_seed)
    return HDBOProblem(
        name=f"lasso{d}_s{data_seed}", dim=d, fn=obj, active_dims=tuple(range(d)), seed=seed
    )

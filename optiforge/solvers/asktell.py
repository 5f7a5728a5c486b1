"""One ask/tell interface for the numerical optimizers: black-box, bandit, zeroth-order.

An optimizer minimizes ``f: R^d -> R`` (possibly noisy) over a box ``[lower, upper]``, or
over all of ``R^d`` when it has no bounds (the zeroth-order trainers, whose ``x`` is a
model's flattened parameters). The caller owns the loop and the evaluations::

    opt = make("gp_bts", dim=2, bounds=(np.zeros(2), np.ones(2)), seed=0, batch=4)
    while n < budget:
        X = opt.ask()                     # (q, d) float64: the points to evaluate next
        y = np.array([f(x) for x in X])   # (q,) float64, the observed values
        opt.tell(X, y)
    x_best = opt.recommend()              # (d,) the optimizer's current answer

or ``minimize(f, opt, budget)`` runs that loop and records every evaluation.

Contract (every optimizer in ``OPTIMIZERS`` meets it; ``tests/solvers/test_asktell.py``
checks it for each):

- ``ask()`` returns a float64 array of shape ``(q, d)`` with ``q >= 1`` (``q`` may vary
  between calls: a zeroth-order method asks for its ``x +- mu u`` probes, a bandit
  for repeats of one point); every row lies inside the bounds when there are bounds.
- ``tell(X, y, feedback=None)`` must follow the matching ``ask()`` with the same ``X``
  (shape ``(q, d)``) and ``y`` of shape ``(q,)``; a non-finite ``y`` is the caller's
  error (``ValueError``). ``feedback`` is optional side information, one mapping per
  row: the auxiliary observations an optimizer that conditions on them reads (FICBO's
  cheap feedback sources, SZO's activations); optimizers that need none ignore it.
- ``recommend()`` returns the ``(d,)`` point the optimizer would answer now: the best
  point seen for a model-free method, the model's minimizer or the current iterate for
  others (documented by each).
- Seeded: the same ``seed`` and the same told values give the same asks.

Names are registered with ``register``; the black-box portfolio
(``solvers.blackbox.optimize(method=NAME)``) and ``optiforge list optimizers`` see
every registered optimizer whose ``box`` is true (it needs and respects bounds).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from optiforge.errors import ConfigError

Array = np.ndarray
Bounds = tuple[Array, Array]
Feedback = Sequence[Mapping[str, Any]] | None


class AskTellOptimizer(ABC):
    """Base of every ask/tell optimizer: bounds, seed, shape checks and the history.

    Subclasses implement ``_ask`` and ``_tell`` (called after the checks) and may override
    ``recommend``. ``self.X`` / ``self.y`` hold every told point and value, in order (the
    last batch only with ``keep_history=False``); ``n_told`` counts them all.
    """

    name: ClassVar[str] = ""
    box: ClassVar[bool] = True
    """True when the optimizer needs bounds (a box); False for unbounded ones (ZO trainers)."""
    summary: ClassVar[str] = ""
    """One line for ``optiforge list optimizers``: the method and the paper's idea."""
    max_dim: ClassVar[int | None] = None
    """The largest ``dim`` it handles (e.g. 1 for a 1-D bandit); None: any."""

    keep_history_default: ClassVar[bool] = True
    """Whether ``X`` / ``y`` keep every told point by default; trainers whose points are a
    model's parameters keep only the last batch (``keep_history=False``)."""

    def __init__(
        self,
        dim: int,
        *,
        bounds: Bounds | None = None,
        seed: int = 0,
        keep_history: bool | None = None,
    ) -> None:
        if dim < 1:
            raise ConfigError(f"{self.name or type(self).__name__}: dim must be >= 1, got {dim}")
        if self.max_dim is not None and dim > self.max_dim:
            raise ConfigError(f"{self.name}: handles at most {self.max_dim} dimensions, got {dim}")
        self.dim = int(dim)
        if bounds is None:
            if self.box:
                raise ConfigError(f"{self.name}: needs bounds (lower, upper) of shape ({dim},)")
            self.lower: Array | None = None
            self.upper: Array | None = None
        else:
            lo = np.asarray(bounds[0], dtype=np.float64).reshape(-1)
            hi = np.asarray(bounds[1], dtype=np.float64).reshape(-1)
            if lo.shape != (dim,) or hi.shape != (dim,):
                raise ConfigError(
                    f"{self.name}: bounds must be two arrays of shape ({dim},), "
                    f"got {lo.shape} and {hi.shape}"
                )
            if not np.all(np.isfinite(lo)) or not np.all(np.isfinite(hi)) or np.any(hi <= lo):
                raise ConfigError(f"{self.name}: bounds need finite lower < upper")
            self.lower, self.upper = lo, hi
        self.seed = int(seed)
        self.rng = np.random.default_rng(seed)
        self.keep_history = self.keep_history_default if keep_history is None else keep_history
        self._Xbuf = np.zeros((0, dim))
        self._ybuf = np.zeros(0)
        self._hist_len = 0
        self.n_told = 0
        """Points told so far (also when ``keep_history`` is off)."""
        self._pending: Array | None = None

    @property
    def X(self) -> Array:
        """Told points, ``(n, d)``: all of them, or the last batch when ``keep_history`` is
        off (a read-only view; amortized O(d) per told point)."""
        v = self._Xbuf[: self._hist_len]
        v.flags.writeable = False
        return v

    @property
    def y(self) -> Array:
        """Told values, ``(n,)``, matching ``X``."""
        v = self._ybuf[: self._hist_len]
        v.flags.writeable = False
        return v

    def _record(self, X: Array, y: Array) -> None:
        q = X.shape[0]
        if not self.keep_history:
            self._Xbuf, self._ybuf, self._hist_len = X.copy(), y.copy(), q
            return
        need = self._hist_len + q
        if need > self._Xbuf.shape[0]:
            cap = max(need, 2 * self._Xbuf.shape[0], 16)
            Xb, yb = np.zeros((cap, self.dim)), np.zeros(cap)
            Xb[: self._hist_len], yb[: self._hist_len] = (
                self._Xbuf[: self._hist_len],
                self._ybuf[: self._hist_len],
            )
            self._Xbuf, self._ybuf = Xb, yb
        self._Xbuf[self._hist_len : need], self._ybuf[self._hist_len : need] = X, y
        self._hist_len = need

    @classmethod
    def example(cls, seed: int = 0) -> AskTellOptimizer:
        """A small instance (2-D unit box, or 2-D unbounded) for docs and the contract test;
        optimizers that need more (a model, a hint function) override it."""
        d = min(2, cls.max_dim or 2)
        bounds = (np.zeros(d), np.ones(d)) if cls.box else None
        return cls(d, bounds=bounds, seed=seed)

    # -- the interface -------------------------------------------------------------------
    def ask(self) -> Array:
        """The next points to evaluate, shape ``(q, d)``, float64."""
        if self._pending is not None:
            raise RuntimeError(f"{self.name}: ask() called twice without tell()")
        X = np.asarray(self._ask(), dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.dim or X.shape[0] < 1:
            raise RuntimeError(
                f"{self.name}: _ask returned shape {X.shape}, want (q>=1, {self.dim})"
            )
        if self.lower is not None and self.upper is not None:
            X = np.clip(X, self.lower, self.upper)
        self._pending = X
        return X.copy()

    def tell(self, X: Array, y: Array, feedback: Feedback = None) -> None:
        """Report the values ``y`` (shape ``(q,)``) at the asked points ``X`` (``(q, d)``)."""
        if self._pending is None:
            raise RuntimeError(f"{self.name}: tell() without a matching ask()")
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if X.shape != self._pending.shape or not np.array_equal(X, self._pending):
            raise ValueError(f"{self.name}: tell() got points that are not the asked ones")
        if y.shape != (X.shape[0],):
            raise ValueError(f"{self.name}: y must have shape ({X.shape[0]},), got {y.shape}")
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{self.name}: y has a non-finite value; report a finite penalty")
        if feedback is not None and len(feedback) != X.shape[0]:
            raise ValueError(f"{self.name}: feedback needs one mapping per point")
        self._check_feedback(X, y, feedback)
        self._pending = None
        self._record(X, y)
        self.n_told += X.shape[0]
        self._tell(X, y, feedback)

    def recommend(self) -> Array:
        """The point the optimizer answers now; by default the best point told so far."""
        if self.y.size == 0:
            raise RuntimeError(f"{self.name}: nothing told yet")
        return self.X[int(np.argmin(self.y))].copy()

    # -- for subclasses ------------------------------------------------------------------
    @abstractmethod
    def _ask(self) -> Array: ...

    @abstractmethod
    def _tell(self, X: Array, y: Array, feedback: Feedback) -> None: ...

    def _check_feedback(self, X: Array, y: Array, feedback: Feedback) -> None:  # noqa: B027
        """Raise ``ValueError`` for feedback this optimizer cannot use, before any state
        changes (so the caller may ``tell`` again, corrected); by default accepts all."""

    def _uniform(self, n: int) -> Array:
        """``n`` uniform points in the box (``(n, d)``)."""
        assert self.lower is not None and self.upper is not None
        return self.lower + self.rng.random((n, self.dim)) * (self.upper - self.lower)


OPTIMIZERS: dict[str, type[AskTellOptimizer]] = {}
"""Every registered ask/tell optimizer, by name."""


def register(cls: type[AskTellOptimizer]) -> type[AskTellOptimizer]:
    """Class decorator: add ``cls`` to ``OPTIMIZERS`` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    OPTIMIZERS[cls.name] = cls
    return cls


BUILTIN: dict[str, str] = {
    "gp_bts": "optiforge.solvers.bandits.gp_bts",
    "param_bo": "optiforge.solvers.bandits.param_bo",
    "convex1d": "optiforge.solvers.bandits.convex1d",
    "ficbo": "optiforge.solvers.bandits.ficbo",
    "cvzod": "optiforge.solvers.zo.cvzod",
    "szo": "optiforge.solvers.zo.szo",
    "lqzo": "optiforge.solvers.zo.lqzo",
    "farsign": "optiforge.solvers.zo.farsign",
}
"""The built-in optimizers and the module whose import registers each (imported on first
use: ``make(NAME)`` imports only NAME's module)."""


def _load(name: str | None = None) -> None:
    """Import the module registering ``name`` (every built-in one when None)."""
    import importlib

    for n, mod in BUILTIN.items():
        if (name is None or n == name) and n not in OPTIMIZERS:
            importlib.import_module(mod)


def names(*, box_only: bool = False) -> list[str]:
    """Registered optimizer names (``box_only``: those that run on a bounded box)."""
    _load()
    return sorted(n for n, c in OPTIMIZERS.items() if c.box or not box_only)


def make(
    name: str, dim: int, *, bounds: Bounds | None = None, seed: int = 0, **options: Any
) -> AskTellOptimizer:
    """A registered optimizer by name.

    Raises:
        ConfigError: an unknown name or an option the optimizer does not take.
    """
    _load(name)
    cls = OPTIMIZERS.get(name)
    if cls is None:
        raise ConfigError(f"unknown optimizer {name!r}; registered: {', '.join(names()) or 'none'}")
    try:
        return cls(dim, bounds=bounds, seed=seed, **options)
    except TypeError as exc:
        raise ConfigError(f"{name}: {exc}") from None


@dataclass
class AskTellResult:
    """Every evaluation of one ``minimize`` run, in order."""

    name: str
    X: Array
    y: Array
    recommended: Array
    batches: list[int] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def best_trace(self) -> Array:
        """Best value seen after each evaluation, shape ``(n,)``."""
        return np.minimum.accumulate(self.y) if self.y.size else self.y


def minimize(
    f: Callable[[Array], float],
    opt: AskTellOptimizer,
    budget: int,
    *,
    feedback: Callable[[Array], Mapping[str, Any]] | None = None,
) -> AskTellResult:
    """Run ``opt`` on ``f`` for ``budget`` evaluations.

    The last batch is cut to fit the budget; its evaluations are recorded but not told
    (a cut batch, e.g. half a ZO pair, is not what was asked). ``feedback(x)``, when
    given, is called per point and passed to ``tell``.

    Raises:
        ValueError: ``f`` returned a non-finite value (named with its point).
    """
    if budget < 1:
        raise ConfigError(f"budget must be >= 1, got {budget}")
    t0 = time.perf_counter()
    n, batches = 0, []
    Xs: list[Array] = []
    ys: list[float] = []
    while n < budget:
        X = opt.ask()
        take = X[: budget - n]
        y = np.array([float(f(x)) for x in take])
        if not np.all(np.isfinite(y)):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise ValueError(f"objective returned {y[bad]} at {take[bad].tolist()}")
        Xs.append(take)
        ys.extend(y.tolist())
        batches.append(len(take))
        n += len(take)
        if len(take) == len(X):
            fb = [feedback(x) for x in take] if feedback is not None else None
            opt.tell(X, y, fb)
    X_all = np.vstack(Xs)
    y_all = np.asarray(ys)
    try:
        rec = opt.recommend()
    except RuntimeError:
        rec = X_all[int(np.argmin(y_all))]
    return AskTellResult(
        name=opt.name,
        X=X_all,
        y=y_all,
        recommended=rec,
        batches=batches,
        wall_s=time.perf_counter() - t0,
    )


def simple_regret(result: AskTellResult, f_min: float) -> Array:
    """``best value so far - f_min`` after each evaluation (noiseless ``f`` assumed)."""
    return result.best_trace - f_min


__all__ = [
    "OPTIMIZERS",
    "AskTellOptimizer",
    "AskTellResult",
    "Bounds",
    "make",
    "minimize",
    "names",
    "register",
    "simple_regret",
]

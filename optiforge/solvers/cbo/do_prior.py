"""Interventional priors from observational data (back-door adjustment or g-formula).

``E[Y | do(X=x)] = E_Z[ E[Y | X=x, Z] ]`` for a back-door set ``Z`` (Pearl 2009, Thm 3.3.2).
The inner regression is a scikit-learn GP on observational data; the outer expectation
averages over observed ``z``. This is the CBO prior of Aglietti et al. (AISTATS 2020):
mean ``m(x)`` and standard deviation ``sigma(x)`` (the regression's posterior sd averaged
over ``z``), which enter the causal kernel ``k_RBF(x, x') + sigma(x) sigma(x')``.

Everything here is a pure function of (graph, data, exploration set, target): it can be
called on any candidate DAG.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence

import networkx as nx
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from threadpoolctl import threadpool_limits

from optiforge.errors import InvalidTask, SolverError


def backdoor_adjustment_set(
    graph: nx.DiGraph,
    treatments: Iterable[str],
    target: str,
    observed: Iterable[str] | None = None,
) -> set[str] | None:
    """A minimal back-door set for ``treatments -> target`` among ``observed``; None if none.

    Back-door criterion (for sets): no member descends from a treatment, and the set
    d-separates treatments from the target once edges out of the treatments are removed.
    """
    xs = set(treatments)
    if not xs or target in xs:
        raise InvalidTask("back-door adjustment needs a non-empty treatment set without the target")
    for v in [*xs, target]:
        if v not in graph:
            raise InvalidTask(f"{v!r} is not in the graph")
    obs = set(graph.nodes) if observed is None else set(observed)
    desc = set().union(*(nx.descendants(graph, x) for x in xs))
    allowed = (obs - desc - xs) - {target}
    cut = graph.copy()
    cut.remove_edges_from([(x, c) for x in xs for c in graph.successors(x)])
    # The back-door graph may leave X and Y d-separated by the empty set already.
    if nx.is_d_separator(cut, xs, {target}, set()):
        return set()
    found = nx.find_minimal_d_separator(cut, xs, {target}, restricted=allowed)
    return None if found is None else set(found)


class _Regression:
    """``E[target | features]`` by a scikit-learn GP on standardised features.

    ``predict`` returns the mean and the sd of the mean function (the fitted white noise
    is removed: CBO's sigma is epistemic uncertainty only).
    """

    def __init__(self, feats: np.ndarray, y: np.ndarray, n_fit: int, seed: int, what: str) -> None:
        rng = np.random.default_rng(seed)
        idx = rng.permutation(feats.shape[0])[: min(feats.shape[0], n_fit)]
        self.shift = feats.mean(axis=0)
        self.scale = feats.std(axis=0) + 1e-9
        kern = ConstantKernel(1.0, (1e-3, 1e3)) * RBF(
            np.ones(feats.shape[1]), (1e-2, 1e2)
        ) + WhiteKernel(0.1, (1e-6, 1e1))
        self.reg = GaussianProcessRegressor(kern, normalize_y=True, random_state=seed)
        try:
            # Small fits: BLAS threads only contend on a busy machine (one fit: 4 s -> 0.1 s).
            with warnings.catch_warnings(), threadpool_limits(1):
                # A length scale at its upper bound just means "this input is irrelevant".
                warnings.simplefilter("ignore", ConvergenceWarning)
                self.reg.fit((feats[idx] - self.shift) / self.scale, y[idx])
        except (ValueError, np.linalg.LinAlgError) as exc:
            raise SolverError(f"do-prior regression for {what} failed: {exc}") from exc
        self.residuals = y - self.reg.predict((feats - self.shift) / self.scale)

    def predict(self, feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with threadpool_limits(1):
            mu, sd = self.reg.predict((feats - self.shift) / self.scale, return_std=True)
        noise = float(self.reg.kernel_.k2.noise_level) * float(self.reg._y_train_std) ** 2
        return mu, np.sqrt(np.clip(sd**2 - noise, 0.0, None))


class DoPrior:
    """``x -> (m(x), sigma(x))`` for one exploration set; ``x`` is ``n x k`` in raw units.

    ``method`` says how ``E[Y|do(X=x)]`` was identified: ``backdoor`` (adjustment by
    ``adjustment``), ``gformula`` (truncated factorisation: simulate the fitted observed
    mechanisms of ``An(Y)`` with edges into ``X`` cut) or ``none`` (not identified from
    the observed variables; the prior is then the observational mean of ``Y`` with the sd
    of ``Y``, i.e. uninformative).
    """

    def __init__(self, names: Sequence[str], y_mean: float, y_sd: float) -> None:
        self.names = tuple(names)
        self.y_mean = y_mean
        self.y_sd = y_sd
        self.method = "none"
        self.adjustment: tuple[str, ...] | None = None
        self.identified = False
        """Set False to force the uninformative prior (ablations)."""
        self._cache: dict[bytes, tuple[float, float]] = {}

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Prior mean and sd at ``x`` (``n x k``) -> two arrays of shape ``n`` (row-cached)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        if not self.identified:
            n = x.shape[0]
            return np.full(n, self.y_mean), np.full(n, self.y_sd)
        keys = [row.tobytes() for row in x]
        uniq: dict[bytes, int] = {}
        for i, k in enumerate(keys):
            if k not in self._cache:
                uniq.setdefault(k, i)
        if uniq:
            m, s = self._compute(x[list(uniq.values())])
            for k, mi, si in zip(uniq, m, s, strict=True):
                self._cache[k] = (float(mi), float(si))
        out = np.array([self._cache[k] for k in keys]).reshape(-1, 2)
        return out[:, 0], out[:, 1]

    def _compute(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError  # only reached for identified subclasses


class BackdoorDoPrior(DoPrior):
    """``m(x) = mean_i f(x, z_i)`` with ``f = E[Y | X, Z]`` and observed ``z_i``."""

    def __init__(self, names: Sequence[str], adjustment: Sequence[str], reg: _Regression,
                 z: np.ndarray, y_mean: float, y_sd: float) -> None:  # fmt: skip
        super().__init__(names, y_mean, y_sd)
        self.method, self.identified = "backdoor", True
        self.adjustment = tuple(adjustment)
        self._reg = reg
        self._z = z  # n_z x |Z| raw adjustment values

    def _compute(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n, nz = x.shape[0], self._z.shape[0]
        if self._z.shape[1] == 0:
            mu, sd = self._reg.predict(x)
            return mu, sd
        # n*n_z rows: every x paired with every observed z (the adjustment average).
        feats = np.concatenate([np.repeat(x, nz, axis=0), np.tile(self._z, (n, 1))], axis=1)
        mu, sd = self._reg.predict(feats)
        return mu.reshape(n, nz).mean(axis=1), sd.reshape(n, nz).mean(axis=1)


class GFormulaDoPrior(DoPrior):
    """Truncated factorisation by simulation through fitted mechanisms (Markovian part).

    Each non-intervened node of ``An(Y)`` in ``G`` with edges into ``X`` cut gets
    ``v = f_v(pa_v) + sd_v(pa_v) z_sv + r`` with a GP mean ``f_v``, its epistemic sd
    ``sd_v``, one standard-normal shift ``z_sv`` per epistemic draw ``s`` and node, and a
    resampled empirical residual ``r`` (roots are resampled from their observed values).
    ``m(x)`` and ``sigma(x)`` are the mean and sd over the ``S`` draws of the unit-averaged
    outcome, so uncertainty upstream (e.g. extrapolating ``C = f(B)``) widens ``sigma``.
    The same draws serve every ``x`` (common random numbers), so ``m`` is smooth in ``x``.
    """

    def __init__(self, names: Sequence[str], order: list[str], parents: dict[str, list[str]],
                 regs: dict[str, _Regression], roots: dict[str, np.ndarray],
                 draws: dict[str, np.ndarray], shifts: dict[str, np.ndarray], target: str,
                 y_mean: float, y_sd: float) -> None:  # fmt: skip
        super().__init__(names, y_mean, y_sd)
        self.method, self.identified = "gformula", True
        self._order, self._parents, self._regs = order, parents, regs
        self._roots, self._draws, self._shifts, self._target = roots, draws, shifts, target

    def _compute(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = x.shape[0]
        if self._target in self._roots:  # Y has no parent left: do(X) does not move it
            return np.full(n, float(self._roots[self._target].mean())), np.zeros(n)
        n_u = self._draws[self._target].shape[0]
        n_s = self._shifts[self._target].shape[0]
        rows = n * n_s * n_u  # layout: x-major, then epistemic draw, then unit
        vals: dict[str, np.ndarray] = {
            v: np.repeat(x[:, j], n_s * n_u) for j, v in enumerate(self.names)
        }
        out = np.zeros(rows)
        for v in self._order:
            if v in vals:
                continue
            if v in self._roots:
                vals[v] = np.tile(self._roots[v], n * n_s)
                continue
            feats = np.stack([vals[p] for p in self._parents[v]], axis=1)
            mu, sd = self._regs[v].predict(feats)
            shift = np.tile(np.repeat(self._shifts[v], n_u), n)
            if v == self._target:
                out = mu + sd * shift
                break
            vals[v] = mu + sd * shift + np.tile(self._regs[v].residuals[self._draws[v]], n * n_s)
        per_draw = out.reshape(n, n_s, n_u).mean(axis=2)  # n x S
        return per_draw.mean(axis=1), per_draw.std(axis=1, ddof=1)


def fit_do_prior(
    graph: nx.DiGraph,
    data: Mapping[str, np.ndarray],
    exploration_set: Sequence[str],
    target: str,
    *,
    n_fit: int = 150,
    n_z: int = 40,
    n_draws: int = 8,
    gformula: bool = False,
    seed: int = 0,
) -> DoPrior:
    """Estimate ``E[Y|do(X)]`` for one exploration set from observational ``data``.

    Back-door adjustment when a back-door set exists among the observed variables; else,
    with ``gformula=True``, the g-formula when every node of ``An(Y)`` (edges into ``X``
    cut) is observed; else the uninformative prior. The g-formula is off by default: on
    CompleteGraph its GP mechanisms extrapolate confidently and wrongly far outside the
    observational support (e.g. ``C = exp(-B)`` at ``B = -5``), which misled CBO on 2 of 5
    seeds where the uninformative prior did not (our measurement).

    Args:
        data: observed variables -> arrays of shape ``n`` (the keys are the observed set).
        n_fit: at most this many rows fit each regression (GP cost is cubic).
        n_z: at most this many observed ``z`` rows are averaged over (g-formula: ``n_z // 2``
            simulated units per epistemic draw).
        n_draws: epistemic draws of the g-formula (its ``sigma`` is their sd).
    """
    if target not in data:
        raise InvalidTask(f"observational data has no target column {target!r}")
    for v in exploration_set:
        if v not in data:
            raise InvalidTask(f"observational data has no column for {v!r}")
    y = np.asarray(data[target], dtype=float)
    n = y.shape[0]
    if n < 5:
        raise InvalidTask(f"need at least 5 observational rows, got {n}")
    y_mean, y_sd = float(y.mean()), float(y.std() + 1e-9)
    col = {v: np.asarray(a, dtype=float) for v, a in data.items()}
    rng = np.random.default_rng(seed)
    what = str(tuple(exploration_set))
    adj = backdoor_adjustment_set(graph, exploration_set, target, observed=list(data))
    if adj is not None:
        adj_l = sorted(adj)
        feats = np.stack([col[v] for v in [*exploration_set, *adj_l]], axis=1)  # n x (k+|Z|)
        reg = _Regression(feats, y, n_fit, seed, what)
        z = feats[rng.permutation(n)[: min(n, n_z)], len(exploration_set) :]
        return BackdoorDoPrior(exploration_set, adj_l, reg, z, y_mean, y_sd)
    xs = set(exploration_set)
    cut = graph.copy()
    cut.remove_edges_from([(u, v) for v in xs for u in graph.predecessors(v)])
    relevant = nx.ancestors(cut, target) | {target}
    if not gformula or not relevant <= set(data):
        return DoPrior(exploration_set, y_mean, y_sd)  # off, or a latent node is involved
    order = [v for v in nx.topological_sort(cut) if v in relevant]
    parents = {v: sorted(cut.predecessors(v)) for v in order}
    regs: dict[str, _Regression] = {}
    roots: dict[str, np.ndarray] = {}
    draws: dict[str, np.ndarray] = {}
    shifts: dict[str, np.ndarray] = {}
    n_units = max(2, n_z // 2)
    for v in order:
        if v in xs:
            continue
        if not parents[v]:
            roots[v] = col[v][rng.integers(n, size=n_units)]
            continue
        feats = np.stack([col[p] for p in parents[v]], axis=1)
        regs[v] = _Regression(feats, col[v], n_fit, seed, f"{what} (node {v})")
        draws[v] = rng.integers(n, size=n_units)
        shifts[v] = rng.standard_normal(n_draws)
    return GFormulaDoPrior(exploration_set, order, parents, regs, roots, draws, shifts, target,
                           y_mean, y_sd)  # fmt: skip


def fit_do_priors(
    graph: nx.DiGraph,
    data: Mapping[str, np.ndarray],
    exploration_sets: Sequence[Sequence[str]],
    target: str,
    *,
    gformula: bool = False,
    seed: int = 0,
) -> dict[tuple[str, ...], DoPrior]:
    """``fit_do_prior`` for every exploration set."""
    return {
        tuple(es): fit_do_prior(graph, data, es, target, gformula=gformula, seed=seed)
        for es in exploration_sets
    }


def prior_spec(
    graph: nx.DiGraph,
    exploration_set: Sequence[str],
    target: str,
    observed: Iterable[str],
    *,
    gformula: bool = False,
) -> tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    """What ``fit_do_prior`` would fit for this set, as a hashable value (graph only).

    ``("backdoor", (("Z", adjustment),))``, ``("gformula", ((node, parents), ...))`` or
    ``("none", ())``. Two graphs with equal specs give identical priors on the same data.
    """
    obs = set(observed)
    adj = backdoor_adjustment_set(graph, exploration_set, target, observed=obs)
    if adj is not None:
        return "backdoor", (("Z", tuple(sorted(adj))),)
    xs = set(exploration_set)
    cut = graph.copy()
    cut.remove_edges_from([(u, v) for v in xs for u in graph.predecessors(v)])
    relevant = nx.ancestors(cut, target) | {target}
    if not gformula or not relevant <= obs:
        return "none", ()
    return "gformula", tuple(
        (v, tuple(sorted(cut.predecessors(v)))) for v in sorted(relevant) if v not in xs
    )


def routing_signature(
    graph: nx.DiGraph,
    manipulable: Iterable[str],
    target: str,
    observed: Iterable[str],
    *,
    max_size: int | None = 2,
    gformula: bool = False,
) -> tuple[tuple[tuple[str, ...], object], ...]:
    """Exploration sets (MIS) and the do-prior spec of each: equal signatures mean two
    graphs route the optimizer identically (same sets, same priors on the same data)."""
    from optiforge.solvers.cbo.exploration import minimal_intervention_sets

    obs = list(observed)
    sets = minimal_intervention_sets(graph, manipulable, target, max_size=max_size)
    return tuple((s, prior_spec(graph, s, target, obs, gformula=gformula)) for s in sets)

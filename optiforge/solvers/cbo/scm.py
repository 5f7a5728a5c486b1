"""Structural causal models on networkx DAGs: sampling, do-interventions, costs.

Values are numpy arrays. A plain sample has shape ``n``; a batched intervention
(``do_batch``) gives every node shape ``m x n`` (``m`` intervention values, ``n`` units
that share their noise draws: common random numbers across the ``m`` values).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from optiforge.errors import InvalidCandidate, InvalidTask

Values = dict[str, np.ndarray]
EquationFn = Callable[[Mapping[str, np.ndarray], np.ndarray], np.ndarray]
"""``fn(parents, noise) -> value``: vectorised over the trailing unit axis."""


class NoiseSpec(BaseModel):
    """Exogenous noise of one structural equation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["normal", "uniform", "none"] = "normal"
    """``normal``: N(loc, scale^2); ``uniform``: U(low, high); ``none``: zeros."""
    loc: float = 0.0
    """Mean of the normal."""
    scale: float = 1.0
    """Standard deviation of the normal."""
    low: float = 0.0
    """Lower end of the uniform."""
    high: float = 1.0
    """Upper end of the uniform."""

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` noise values (shape ``n``)."""
        if self.kind == "normal":
            return rng.normal(self.loc, self.scale, size=n)
        if self.kind == "uniform":
            return rng.uniform(self.low, self.high, size=n)
        # Draw nothing but keep the stream position independent of the kind: no draw.
        return np.zeros(n)


@dataclass(frozen=True)
class StructuralEquation:
    """``name := fn(parents, noise)``: one node's typed structural equation."""

    name: str
    parents: tuple[str, ...]
    fn: EquationFn
    noise: NoiseSpec = field(default_factory=NoiseSpec)
    description: str = ""
    """Plain-English meaning of the variable (what an LLM is told)."""
    observed: bool = True
    """False for a latent variable: absent from observational data."""


class InterventionDomain(BaseModel):
    """Closed interval a manipulable variable may be set to, and the cost of doing so."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    low: float
    high: float
    cost: float = 1.0
    """Cost of intervening on this variable (cost of a set = sum + the SCM's fixed cost)."""

    @model_validator(mode="after")
    def _check(self) -> InterventionDomain:
        if not self.low < self.high:
            raise ValueError(f"empty domain [{self.low}, {self.high}]")
        if self.cost < 0:
            raise ValueError(f"negative cost {self.cost}")
        return self


class SCM:
    """A structural causal model over a DAG; the target ``Y`` is minimised.

    Args:
        equations: one per node; parents must name other nodes.
        target: the outcome node.
        domains: manipulable variables -> interval and cost.
        fixed_cost: cost added to every (non-empty) intervention.
    """

    def __init__(
        self,
        equations: Sequence[StructuralEquation],
        target: str,
        domains: Mapping[str, InterventionDomain],
        fixed_cost: float = 0.0,
    ) -> None:
        self.equations: dict[str, StructuralEquation] = {}
        for eq in equations:
            if eq.name in self.equations:
                raise InvalidTask(f"SCM: node {eq.name!r} defined twice")
            self.equations[eq.name] = eq
        graph = nx.DiGraph()
        graph.add_nodes_from(self.equations)
        for eq in equations:
            for p in eq.parents:
                if p not in self.equations:
                    raise InvalidTask(f"SCM: {eq.name!r} has unknown parent {p!r}")
                graph.add_edge(p, eq.name)
        if not nx.is_directed_acyclic_graph(graph):
            raise InvalidTask(f"SCM: graph has a cycle {nx.find_cycle(graph)}")
        if target not in self.equations:
            raise InvalidTask(f"SCM: unknown target {target!r}")
        for v in domains:
            if v not in self.equations or v == target:
                raise InvalidTask(f"SCM: manipulable variable {v!r} is not a non-target node")
        if fixed_cost < 0:
            raise InvalidTask(f"SCM: negative fixed cost {fixed_cost}")
        self.graph: nx.DiGraph = graph
        self.target = target
        self.domains: dict[str, InterventionDomain] = dict(domains)
        self.fixed_cost = float(fixed_cost)
        self._order: list[str] = list(nx.topological_sort(graph))

    @property
    def manipulable(self) -> list[str]:
        """Manipulable variables in topological order."""
        return [v for v in self._order if v in self.domains]

    @property
    def observed(self) -> list[str]:
        """Observed variables in topological order."""
        return [v for v in self._order if self.equations[v].observed]

    @property
    def latent(self) -> set[str]:
        """Latent (unobserved) variables."""
        return {v for v, eq in self.equations.items() if not eq.observed}

    def cost(self, intervened: Sequence[str]) -> float:
        """Cost of one intervention on the set ``intervened``."""
        if not intervened:
            return 0.0
        self._check_names(intervened)
        return self.fixed_cost + sum(self.domains[v].cost for v in intervened)

    def _check_names(self, names: Sequence[str]) -> None:
        for v in names:
            if v not in self.domains:
                raise InvalidCandidate(f"{v!r} is not a manipulable variable of this SCM")

    def _run(
        self,
        interventions: Mapping[str, np.ndarray],
        n: int,
        rng: np.random.Generator,
        noises: dict[str, np.ndarray] | None = None,
    ) -> Values:
        if n < 1:
            raise InvalidCandidate(f"need n >= 1 samples, got {n}")
        values: Values = {}
        for v in self._order:
            eq = self.equations[v]
            # Always draw the noise, even for intervened nodes, so that the random stream
            # (and hence common random numbers across interventions) stays aligned.
            noise = eq.noise.sample(n, rng)
            if noises is not None and eq.noise.kind != "none":
                noises[v] = noise
            if v in interventions:
                values[v] = interventions[v]
            else:
                out = eq.fn({p: values[p] for p in eq.parents}, noise)
                values[v] = np.asarray(out, dtype=float)
        shape = np.broadcast_shapes(*(np.shape(a) for a in values.values()))
        return {v: np.broadcast_to(a, shape).astype(float) for v, a in values.items()}

    def sample(self, n: int, rng: np.random.Generator, *, include_latent: bool = False) -> Values:
        """Draw ``n`` observational units; each value has shape ``n``."""
        values = self._run({}, n, rng)
        if include_latent:
            return values
        return {v: a for v, a in values.items() if self.equations[v].observed}

    def do(
        self,
        interventions: Mapping[str, float],
        n: int,
        rng: np.random.Generator,
        *,
        include_latent: bool = False,
    ) -> Values:
        """Sample ``n`` units under ``do(interventions)``; values have shape ``n``."""
        fixed = self.check_intervention(interventions)
        values = self._run({v: np.full(n, x) for v, x in fixed.items()}, n, rng)
        if include_latent:
            return values
        return {v: a for v, a in values.items() if self.equations[v].observed}

    def check_intervention(self, interventions: Mapping[str, float]) -> dict[str, float]:
        """Validate names and domains (raises ``InvalidCandidate``); values as floats."""
        self._check_names(list(interventions))
        out: dict[str, float] = {}
        for v, x in interventions.items():
            x = float(x)
            dom = self.domains[v]
            if not np.isfinite(x) or not dom.low - 1e-9 <= x <= dom.high + 1e-9:
                raise InvalidCandidate(f"do({v}={x}) is outside its domain [{dom.low}, {dom.high}]")
            out[v] = x
        return out

    def do_batch(
        self, names: Sequence[str], x: np.ndarray, n: int, rng: np.random.Generator
    ) -> Values:
        """Sample under ``m`` interventions at once, sharing noise across them.

        Args:
            names: the ``k`` intervened variables.
            x: ``m x k`` intervention values (not domain-checked: ground-truth use).

        Returns every node as an ``m x n`` array.
        """
        self._check_names(names)
        x = np.atleast_2d(np.asarray(x, dtype=float))
        if x.shape[1] != len(names):
            raise InvalidCandidate(f"x has {x.shape[1]} columns for {len(names)} variables")
        m = x.shape[0]
        ints = {v: np.broadcast_to(x[:, j : j + 1], (m, n)) for j, v in enumerate(names)}
        values = self._run(ints, n, rng)
        return {v: np.broadcast_to(a, (m, n)) for v, a in values.items()}

    def expected_outcome(
        self, interventions: Mapping[str, float], n_mc: int, rng: np.random.Generator
    ) -> float:
        """Monte Carlo estimate of ``E[Y | do(interventions)]``."""
        return float(self.do(interventions, n_mc, rng, include_latent=True)[self.target].mean())

    def expected_outcome_batch(
        self, names: Sequence[str], x: np.ndarray, n_mc: int, seed: int
    ) -> np.ndarray:
        """``E[Y | do(names = x_i)]`` for each row of ``x`` (``m x k``) -> ``m``, with CRN."""
        rng = np.random.default_rng(seed)
        return self.do_batch(names, x, n_mc, rng)[self.target].mean(axis=1)

    def expected_outcome_precise(
        self,
        interventions: Mapping[str, float],
        *,
        se_target: float,
        seed: int,
        chunk: int = 1 << 17,
        max_n: int = 1 << 24,
    ) -> tuple[float, float, int]:
        """``E[Y | do(interventions)]`` to a stated Monte Carlo standard error.

        Control variates: every node's exogenous noise ``e`` and ``e**2`` have known
        means (normal: ``loc``, ``loc**2 + scale**2``; uniform: ``(low + high) / 2``,
        ``(low**2 + low high + high**2) / 3``), so the regression-adjusted mean
        ``mean(Y) - b^T (mean(C) - E[C])`` estimates ``E[Y|do]`` with only the part of
        ``Y`` those terms do not explain left as noise (an additive target noise is
        removed entirely). Chunks of ``chunk`` units (seeded ``[seed, chunk index]``,
        deterministic) are drawn until the standard error is at most ``se_target`` or
        ``max_n`` units are used.

        Returns ``(estimate, standard error, units used)``.
        """
        fixed = self.check_intervention(interventions)
        if se_target <= 0:
            raise InvalidCandidate(f"se_target must be > 0, got {se_target}")
        means: dict[str, tuple[float, float]] = {}
        for v, eq in self.equations.items():
            ns = eq.noise
            if ns.kind == "normal":
                means[v] = (ns.loc, ns.loc**2 + ns.scale**2)
            elif ns.kind == "uniform":
                means[v] = ((ns.low + ns.high) / 2, (ns.low**2 + ns.low * ns.high + ns.high**2) / 3)
        names = [v for v in self._order if v in means and v not in fixed]
        mu = np.array([m for v in names for m in means[v]])
        k = mu.shape[0]
        # Running sums around the known control means and a pilot mean of Y (stable sums).
        n_tot, y0 = 0, 0.0
        s_y = s_yy = 0.0
        s_c = np.zeros(k)
        s_cc = np.zeros((k, k))
        s_cy = np.zeros(k)
        est, se = float("nan"), float("inf")
        i = 0
        while n_tot < max_n:
            rng = np.random.default_rng(np.random.SeedSequence([seed, i]))
            noises: dict[str, np.ndarray] = {}
            y = self._run({v: np.full(chunk, x) for v, x in fixed.items()}, chunk, rng, noises)[
                self.target
            ]
            if i == 0:
                y0 = float(y.mean())
            yc = y - y0
            c = np.stack([t for v in names for t in (noises[v], noises[v] ** 2)], axis=1) - mu
            n_tot += chunk
            s_y += float(yc.sum())
            s_yy += float(yc @ yc)
            s_c += c.sum(axis=0)
            s_cc += c.T @ c
            s_cy += c.T @ yc
            i += 1
            if i < 2:
                continue
            m_y, m_c = s_y / n_tot, s_c / n_tot
            var_y = (s_yy - n_tot * m_y**2) / (n_tot - 1)
            if k:
                cov_cc = (s_cc - n_tot * np.outer(m_c, m_c)) / (n_tot - 1)
                cov_cy = (s_cy - n_tot * m_c * m_y) / (n_tot - 1)
                b = np.linalg.lstsq(cov_cc, cov_cy, rcond=None)[0]
                res_var = max(var_y - float(cov_cy @ b), 0.0)
                est = y0 + m_y - float(b @ m_c)
            else:
                res_var, est = var_y, y0 + m_y
            se = float(np.sqrt(res_var / max(n_tot - k - 1, 1)))
            if se <= se_target:
                break
        return float(est), se, n_tot

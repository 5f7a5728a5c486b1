"""Step-wise causal BO whose assumed graph may change between trials (``CBOSession``).

``run_cbo`` fixes the graph for a whole run. An agent that learns the graph while it
optimises needs the same machinery one trial at a time: ``step()`` runs one intervention
(initial design for sets without data first, then cost-aware causal EI exactly as in
``run_cbo``) and ``set_graph()`` swaps the graph, which recomputes the exploration sets
(MIS of the new graph) and their do-priors. Interventional data is kept per intervened
set across swaps, so a set that leaves and comes back keeps its observations, and every
unit of every observed variable is kept (``interventions``) for structure scoring.

Resume: ``trial_log()`` returns a serializable record of the last trial (its unit-cube
point, every unit, and the RNG and stuck-tracker state after it); ``CBOSession.restore``
rebuilds an identical session from those records without calling the SCM again, so a
checkpointed agent continues with the same random stream and the same GP data.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import networkx as nx
import numpy as np
from botorch.models import SingleTaskGP

from optiforge.errors import BudgetExceeded, InvalidTask
from optiforge.solvers.cbo.cbo import (
    CBOConfig,
    CBOTrace,
    Evaluator,
    StuckTracker,
    TrialRecord,
    acquire,
    can_afford,
    candidate_grid,
    causal_gp,
    check_budget,
    incumbent,
    one_thread,
    post_mean,
    set_bounds,
)
from optiforge.solvers.cbo.do_prior import DoPrior, fit_do_prior, prior_spec
from optiforge.solvers.cbo.exploration import ExplorationSet, minimal_intervention_sets
from optiforge.solvers.cbo.scm import SCM, Values


@dataclass
class InterventionData:
    """One trial's units: ``units[v]`` has shape ``n_units`` for every observed ``v``."""

    exploration_set: ExplorationSet
    x: dict[str, float]
    units: Values


def graph_sets(graph: nx.DiGraph, scm: SCM, max_size: int | None) -> list[ExplorationSet]:
    """MISs of ``graph`` over the SCM's manipulable variables; when the graph makes no
    manipulable variable an ancestor of the target, every manipulable singleton (an
    uninformed fallback, so the optimiser can still gather interventional evidence)."""
    sets = minimal_intervention_sets(graph, scm.manipulable, scm.target, max_size=max_size)
    return sets or [(v,) for v in scm.manipulable]


class CBOSession:
    """Causal BO on ``scm`` one trial at a time, on an exchangeable assumed ``graph``.

    The SCM only generates data (observational sample at construction, interventions in
    ``step``); everything the optimiser assumes comes from ``graph``. ``graph`` must be a
    DAG over (a superset of) the SCM's observed variables; pass None to draw the
    observational sample (``obs``) first and call ``set_graph`` before ``step``.
    """

    def __init__(
        self, scm: SCM, graph: nx.DiGraph | None, config: CBOConfig | None = None, seed: int = 0
    ) -> None:
        self.scm = scm
        self.config = config or CBOConfig()
        check_budget(self.config)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.obs: Values = scm.sample(self.config.n_obs, self.rng)
        self.interventions: list[InterventionData] = []
        self.trace = CBOTrace(method="agent_cbo", exploration_sets=[], seed=seed)
        self.spent = 0.0
        self._evaluate = Evaluator(scm, self.config.eval_n_mc, self.config.eval_seed)
        # Observations by intervened set (unit-cube x, mean outcome): survive graph swaps.
        self._xs: dict[ExplorationSet, list[np.ndarray]] = {}
        self._ys: dict[ExplorationSet, list[float]] = {}
        self._prior_cache: dict[tuple[ExplorationSet, object], DoPrior] = {}
        self._models: dict[ExplorationSet, SingleTaskGP] = {}
        self._stuck = StuckTracker(self.config)
        self.sets: list[ExplorationSet] = []
        self.priors: dict[ExplorationSet, DoPrior] = {}
        self.graph = nx.DiGraph()
        if graph is not None:  # None: the caller learns a graph from ``obs`` first
            self.set_graph(graph)

    # -------------------------------------------------------------- graph handling

    def prior_for(self, graph: nx.DiGraph, s: ExplorationSet) -> DoPrior:
        """The do-prior ``graph`` implies for set ``s`` (cached by its graph-only spec)."""
        spec = prior_spec(
            graph, s, self.scm.target, list(self.obs), gformula=self.config.gformula_prior
        )
        key = (s, spec)
        if key not in self._prior_cache:
            self._prior_cache[key] = fit_do_prior(
                graph, self.obs, s, self.scm.target,
                gformula=self.config.gformula_prior, seed=self.seed,
            )  # fmt: skip
        return self._prior_cache[key]

    def set_graph(self, graph: nx.DiGraph) -> None:
        """Adopt ``graph``: new exploration sets and priors; GPs refit on the kept data."""
        if not nx.is_directed_acyclic_graph(graph):
            raise InvalidTask("CBOSession needs a DAG")
        self.graph = graph.copy()
        self.sets = graph_sets(self.graph, self.scm, self.config.max_set_size)
        self.priors = {s: self.prior_for(self.graph, s) for s in self.sets}
        self._models = {}
        with one_thread():
            for s in self.sets:
                if self._xs.get(s):
                    self._refit(s)
        for s in self.sets:
            if list(s) not in self.trace.exploration_sets:
                self.trace.exploration_sets.append(list(s))

    def _refit(self, s: ExplorationSet) -> None:
        lo, hi = set_bounds(self.scm, s)
        x, y = np.array(self._xs[s]), np.array(self._ys[s])
        self._models[s] = causal_gp(x, y, self.priors[s], lo, hi)

    # -------------------------------------------------------------- trials

    @property
    def done(self) -> bool:
        """True when no exploration set is affordable any more."""
        return not any(
            can_afford(self.config, self.spent, self.scm.cost(s), len(self.trace.trials))
            for s in self.sets
        )

    def step(self) -> TrialRecord | None:
        """Run one intervention; None when the budget allows none (or all are repeats)."""
        with one_thread():
            return self._step()

    def _step(self) -> TrialRecord | None:
        cfg, n_done = self.config, len(self.trace.trials)
        for s in self.sets:  # initial design: each set gets n_init_per_set random trials
            if len(self._xs.get(s, [])) < cfg.n_init_per_set and can_afford(
                cfg, self.spent, self.scm.cost(s), n_done
            ):
                cand = candidate_grid(len(s), cfg, self.seed)
                return self._observe(s, cand[self.rng.integers(len(cand))], "init")
        if not self._models:
            if n_done == 0:
                raise BudgetExceeded(
                    "the budget does not cover a single intervention",
                    limit="evaluations", cap=cfg.budget_cost or 0.0,
                )  # fmt: skip
            return None
        best_f = min(float(post_mean(m, m.train_inputs[0]).min()) for m in self._models.values())
        cands = {s: candidate_grid(len(s), cfg, self.seed) for s in self._models}
        target = best_f - self._stuck.margin(best_f)

        def affordable(s: ExplorationSet) -> bool:
            return can_afford(cfg, self.spent, self.scm.cost(s), n_done)

        choice = None
        if cfg.coverage_patience is not None and self._stuck.since >= cfg.coverage_patience:
            forced = self.coverage_set(affordable)
            if forced is not None:
                choice = acquire(self._models, [forced], cands, self._xs, self.scm.cost,
                                  target, affordable)  # fmt: skip
                self._stuck.since = 0  # the stall rule fires once per stall
        if choice is None:
            choice = acquire(self._models, list(self._models), cands, self._xs,
                              self.scm.cost, target, affordable)  # fmt: skip
        if choice is None:
            return None
        return self._observe(choice[0], choice[1], "acquire")

    def coverage_set(self, affordable: Any = None) -> ExplorationSet | None:
        """The set the stall rule intervenes on: among the affordable modelled sets, one
        holding the variable intervened on least often so far (ties: the order of
        ``sets``), and of those the set with the fewest trials, then the cheapest."""
        ok = [s for s in self.sets if s in self._models and (affordable is None or affordable(s))]
        if not ok:
            return None
        count: dict[str, int] = {}
        for t in self.trace.trials:
            for v in t.exploration_set:
                count[v] = count.get(v, 0) + 1
        names = [v for s in ok for v in s]
        least = min(names, key=lambda v: (count.get(v, 0), names.index(v)))
        return min(
            (s for s in ok if least in s),
            key=lambda s: (len(self._xs.get(s, [])), self.scm.cost(s), ok.index(s)),
        )

    def _observe(
        self, s: ExplorationSet, u: np.ndarray, kind: Literal["init", "acquire"]
    ) -> TrialRecord:
        lo, hi = set_bounds(self.scm, s)
        raw = np.clip(lo + u * (hi - lo), lo, hi)
        x = {v: float(raw[j]) for j, v in enumerate(s)}
        units = self.scm.do(x, self.config.units_per_trial, self.rng)
        y = float(units[self.scm.target].mean())
        self.interventions.append(InterventionData(s, x, units))
        self._xs.setdefault(s, []).append(u)
        self._ys.setdefault(s, []).append(y)
        self._refit(s)
        cost = self.scm.cost(s)
        self.spent += cost
        best_s, best_u = incumbent(self._models, {k: self._xs[k] for k in self._models})
        lo_b, hi_b = set_bounds(self.scm, best_s)
        braw = lo_b + best_u * (hi_b - lo_b)
        bx = {v: float(braw[j]) for j, v in enumerate(best_s)}
        rec = TrialRecord(
            index=len(self.trace.trials), kind=kind, exploration_set=list(s), x=x, y=y,
            cost=cost, cumulative_cost=self.spent, best_set=list(best_s), best_x=bx,
            best_true=self._evaluate(bx),
        )  # fmt: skip
        self.trace.trials.append(rec)
        return rec

    # -------------------------------------------------------------- resume

    def trial_log(self) -> dict[str, Any]:
        """Serializable record of the last trial, enough for ``restore`` to replay it."""
        if not self.interventions:
            raise InvalidTask("no trial to log yet")
        d = self.interventions[-1]
        return {
            "set": list(d.exploration_set),
            "u": self._xs[d.exploration_set][-1].tolist(),
            "units": {v: np.asarray(a, dtype=float).tolist() for v, a in d.units.items()},
            # PCG64's state holds 128-bit ints, which msgpack (LangGraph's serde) cannot
            # encode: JSON text keeps them exact.
            "rng": json.dumps(self.rng.bit_generator.state),
            "stuck": [self._stuck.best, self._stuck.since],
        }

    @classmethod
    def restore(
        cls,
        scm: SCM,
        graph: nx.DiGraph,
        config: CBOConfig,
        seed: int,
        trials: Sequence[dict[str, Any]],
        logs: Sequence[dict[str, Any]],
        exploration_sets: Sequence[Sequence[str]] | None = None,
    ) -> CBOSession:
        """Rebuild a session from its ``trace.trials`` dumps and ``trial_log`` records.

        The observational sample is redrawn from ``seed`` (the same draw as the original
        session); interventional data comes from the logs, never from the SCM.
        """
        if len(trials) != len(logs):
            raise InvalidTask(f"restore got {len(trials)} trials but {len(logs)} trial logs")
        sess = cls(scm, None, config, seed)
        for raw, entry in zip(trials, logs, strict=True):
            rec = TrialRecord.model_validate(raw)
            s = tuple(entry["set"])
            units = {v: np.asarray(a, dtype=float) for v, a in entry["units"].items()}
            sess.interventions.append(InterventionData(s, dict(rec.x), units))
            sess._xs.setdefault(s, []).append(np.asarray(entry["u"], dtype=float))
            sess._ys.setdefault(s, []).append(rec.y)
            sess.spent += rec.cost  # same order of additions: the same float as before
            sess.trace.trials.append(rec)
        if logs:
            sess.rng.bit_generator.state = json.loads(logs[-1]["rng"])
            sess._stuck.best, sess._stuck.since = (
                float(logs[-1]["stuck"][0]),
                int(logs[-1]["stuck"][1]),
            )
        sess.set_graph(graph)
        if exploration_sets is not None:
            sess.trace.exploration_sets = [list(e) for e in exploration_sets]
        return sess

    @property
    def incumbent_set(self) -> ExplorationSet | None:
        """The exploration set of the current incumbent (None before any trial)."""
        if not self.trace.trials:
            return None
        return tuple(self.trace.trials[-1].best_set)

    def observed_outcomes(self, s: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Raw intervention values (``n x k``) and mean outcomes (``n``) observed on ``s``."""
        rows = [d for d in self.interventions if d.exploration_set == tuple(s)]
        x = np.array([[d.x[v] for v in s] for d in rows]).reshape(len(rows), len(s))
        y = np.array([float(d.units[self.scm.target].mean()) for d in rows])
        return x, y

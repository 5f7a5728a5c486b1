"""The deterministic commit gate and the routing-equivalence check of agent-CBO.

Routing equivalence: two graphs route the optimizer identically when they give the same
exploration sets (MIS) and the same do-prior spec per set (``routing_signature``): then
CBO does exactly the same thing on the same data, so the structural difference is
irrelevant to the optimizer. The gate only lets an edit influence intervention selection
after fixed checks, in a fixed order; every decision is returned with its reasons.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict

from optiforge.agents.agent_cbo.structure import Edge, Edit
from optiforge.solvers.cbo import DoPrior, minimal_intervention_sets, routing_signature
from optiforge.solvers.cbo.session import graph_sets


def routing_equivalent(
    g1: nx.DiGraph,
    g2: nx.DiGraph,
    manipulable: Sequence[str],
    target: str,
    observed: Sequence[str],
    *,
    max_size: int | None = 2,
) -> bool:
    """True when ``g1`` and ``g2`` give the same exploration sets and do-prior specs."""
    return routing_signature(g1, manipulable, target, observed, max_size=max_size) == (
        routing_signature(g2, manipulable, target, observed, max_size=max_size)
    )


class GateDecision(BaseModel):
    """One edit's fate at the commit gate (recorded for every edit)."""

    model_config = ConfigDict(extra="forbid")

    round: int
    edit: str
    source: str
    accepted: bool
    routing_relevant: bool
    score_delta: float
    reasons: list[str]
    sets_before: list[list[str]]
    sets_after: list[list[str]]


class CommitGate:
    """Deterministic acceptance test for a candidate graph edit.

    Args:
        margin: minimum score gain (nats) an edit must bring; the score is the
            interventional BIC plus the language prior's log-odds (``belief_log_odds``).
        prior_tolerance: a routing-relevant edit may not raise the do-prior's mean squared
            error on the observed interventional outcomes by more than this fraction.
        prior_for: ``(graph, set) -> DoPrior`` (the session's cached fitter).
        observed_outcomes: ``set -> (x n x k, y n)`` interventional means seen so far.
        incumbent_set: the exploration set of the current incumbent (None before trials).
        intervened: the variables some trial has intervened on so far. The backbone is
            soft-protected: an edit may remove or reverse a backbone edge (or remove a
            protected adjacency) only once ``a`` or ``b`` has been intervened on, and its
            ``score_delta`` is then the caller's interventional-rows-only score change
            (plus the beliefs' log-odds), so an edge the LLM confirmed wrongly falls when
            the interventions contradict it by the margin, and never on the
            observational data that PC already read.
    """

    def __init__(
        self,
        *,
        manipulable: Sequence[str],
        target: str,
        observed: Sequence[str],
        backbone: Sequence[Edge],
        protected_adjacent: Sequence[Edge] = (),
        max_set_size: int | None,
        margin: float,
        prior_tolerance: float,
        prior_for: Callable[[nx.DiGraph, tuple[str, ...]], DoPrior],
        observed_outcomes: Callable[[tuple[str, ...]], tuple[np.ndarray, np.ndarray]],
        incumbent_set: Callable[[], tuple[str, ...] | None],
        scm_for_sets: object,
        intervened: Callable[[], Collection[str]] = frozenset,
    ) -> None:
        self.manipulable = list(manipulable)
        self.target = target
        self.observed = list(observed)
        self.backbone = list(backbone)
        self.protected_adjacent = list(protected_adjacent)
        self.max_set_size = max_set_size
        self.margin = margin
        self.prior_tolerance = prior_tolerance
        self.prior_for = prior_for
        self.observed_outcomes = observed_outcomes
        self.incumbent_set = incumbent_set
        self._scm = scm_for_sets
        self.intervened = intervened

    def _sig(self, g: nx.DiGraph) -> object:
        return routing_signature(
            g, self.manipulable, self.target, self.observed, max_size=self.max_set_size
        )

    def _prior_mse(self, g: nx.DiGraph, s: tuple[str, ...]) -> float | None:
        x, y = self.observed_outcomes(s)
        if y.size == 0:
            return None
        m, _ = self.prior_for(g, s)(x)
        return float(np.mean((m - y) ** 2))

    def check(
        self, current: nx.DiGraph, edit: Edit, score_delta: float, round_: int
    ) -> GateDecision:
        """Decide one edit against the committed graph ``current`` (no side effects)."""
        cand = edit.apply(current)
        reasons: list[str] = []
        sets_before = graph_sets(current, self._scm, self.max_set_size)  # type: ignore[arg-type]
        sets_after: list[tuple[str, ...]] = sets_before
        relevant = False
        if not nx.is_directed_acyclic_graph(cand):
            reasons.append("creates a cycle")
        if edit.edge[0] == self.target and edit.op == "add":
            reasons.append("adds an edge out of the target")
        done = set(self.intervened())
        for a, b in self.backbone:
            if current.has_edge(a, b) and not cand.has_edge(a, b) and not {a, b} & done:
                reasons.append(
                    f"breaks protected backbone edge {a}->{b} with no intervention on {a} or {b}"
                )
        for a, b in self.protected_adjacent:
            adjacent = current.has_edge(a, b) or current.has_edge(b, a)
            if adjacent and not (cand.has_edge(a, b) or cand.has_edge(b, a)) and not {a, b} & done:
                reasons.append(
                    f"removes protected adjacency {a}-{b} with no intervention on {a} or {b}"
                )
        if not reasons:
            sets_after = graph_sets(cand, self._scm, self.max_set_size)  # type: ignore[arg-type]
            if score_delta < self.margin:
                reasons.append(f"score gain {score_delta:.2f} below margin {self.margin:g}")
            relevant = self._sig(cand) != self._sig(current)
            if relevant:
                reasons += self._routing_checks(current, cand, sets_before, sets_after)
        accepted = not reasons
        if accepted:
            reasons.append(
                "routing-relevant: passed routing-proxy checks"
                if relevant
                else "routing-irrelevant (same exploration sets and do-priors)"
            )
        return GateDecision(
            round=round_, edit=edit.label(), source=edit.source, accepted=accepted,
            routing_relevant=relevant, score_delta=float(score_delta), reasons=reasons,
            sets_before=[list(s) for s in sets_before], sets_after=[list(s) for s in sets_after],
        )  # fmt: skip

    def _routing_checks(
        self,
        current: nx.DiGraph,
        cand: nx.DiGraph,
        before: list[tuple[str, ...]],
        after: list[tuple[str, ...]],
    ) -> list[str]:
        """Routing-proxy checks of a routing-relevant edit: reasons to reject (may be [])."""
        out: list[str] = []
        # Fallback singletons (graph without any manipulable ancestor of the target) are
        # uninformed placeholders: replacing them is not pruning.
        # A set the candidate only keeps as such a fallback is removed all the same.
        informed = minimal_intervention_sets(
            current, self.manipulable, self.target, max_size=self.max_set_size
        )
        informed_after = minimal_intervention_sets(
            cand, self.manipulable, self.target, max_size=self.max_set_size
        )
        removed = [s for s in informed if s not in informed_after]
        inc = self.incumbent_set()
        if inc is not None and inc in removed:
            out.append(f"removes exploration set {list(inc)} holding the incumbent")
        if inc is None and removed:
            out.append(
                f"removes exploration sets {[list(s) for s in removed]} before any "
                "interventional evidence"
            )
        added = [s for s in informed_after if s not in informed]
        # An edit that adds exploration sets is not blocked by a prior change on the old
        # ones: their GPs already hold data that corrects the prior, while a missing set can
        # never be explored (measured on Synthetic2: the true edge C->D adds {A, E}, the
        # optimum's set, but worsens the back-door prior of {E} on 3 observed points).
        for s in [s for s in before if s in after] if not added else []:
            old, new = self._prior_mse(current, s), self._prior_mse(cand, s)
            if old is not None and new is not None and new > old * (1 + self.prior_tolerance):
                out.append(
                    f"do-prior of {list(s)} worse on observed interventions "
                    f"(MSE {new:.3g} vs {old:.3g})"
                )
        return out

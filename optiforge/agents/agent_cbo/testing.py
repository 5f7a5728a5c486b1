"""A scripted LLM for agent-CBO that believes one fixed causal graph (true or wrong).

``BeliefGraphLLM(edges)`` answers every agent-CBO sub-agent consistently with ``edges``:

- language prior (``EdgeBeliefs``): every believed edge as present, and with
  ``state_absent`` every other ordered pair named in ``absent`` as absent;
- calibration (``Calibration``): for each uncertain pair listed in the prompt, the
  believed edge (either direction) as present, otherwise ``a->b`` absent;
- residual repair (``RepairPlan``): the listed candidate edits that move the current
  graph toward the believed one (adds of believed edges, removals of unbelieved ones,
  reversals into a believed orientation), best data score first.

Built from the task's true graph it is the "correct prior" of the paper's claim (what an
ideal LLM would say); built from a wrong graph it is a persistent adversary that keeps
pushing a wrong edge through every sub-agent, which the commit gate must keep out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from optiforge.testing.scripted import FunctionLLM

_CANDIDATE = re.compile(r"^- (add|remove|reverse) (\S+)->(\S+): data score ([-+0-9.e]+)", re.M)
_PAIRS = re.compile(r"^Uncertain pairs \(only these may be revised\): (.*)$", re.M)


class BeliefGraphLLM(FunctionLLM):
    """An LLM double that believes the DAG ``edges`` (see module doc)."""

    def __init__(
        self,
        edges: Iterable[tuple[str, str]],
        *,
        confidence: float = 0.9,
        absent: Iterable[tuple[str, str]] = (),
        max_edits: int = 2,
        **kwargs: Any,
    ) -> None:
        self.edges = {(a, b) for a, b in edges}
        self.absent = {(a, b) for a, b in absent}
        self.confidence = confidence
        self.max_edits = max_edits
        self.schemas: list[str] = []
        super().__init__(self._answer, model="belief-graph", **kwargs)

    def _answer(self, messages: list[dict[str, Any]], tools: Any, schema: Any) -> BaseModel:
        from optiforge.agents.agent_cbo.proposers import Calibration, RepairChoice, RepairPlan
        from optiforge.agents.agent_cbo.structure import EdgeBelief, EdgeBeliefs

        text = "\n".join(str(m.get("content") or "") for m in messages)
        name = getattr(schema, "__name__", "")
        self.schemas.append(name)
        c = self.confidence
        if issubclass(schema, EdgeBeliefs):
            beliefs = [EdgeBelief(cause=a, effect=b, confidence=c) for a, b in sorted(self.edges)]
            beliefs += [EdgeBelief(cause=a, effect=b, present=False, confidence=c)
                        for a, b in sorted(self.absent)]  # fmt: skip
            return EdgeBeliefs(edges=beliefs)
        if issubclass(schema, Calibration):
            m = _PAIRS.search(text)
            pairs = [p.split("-", 1) for p in m.group(1).split(", ")] if m else []
            revised = []
            for a, b in (p for p in pairs if len(p) == 2):
                if (a, b) in self.edges or (b, a) in self.edges:
                    u, v = (a, b) if (a, b) in self.edges else (b, a)
                    revised.append(EdgeBelief(cause=u, effect=v, confidence=c))
                else:
                    revised.append(EdgeBelief(cause=a, effect=b, present=False, confidence=c))
            return Calibration(revised=revised)
        if issubclass(schema, RepairPlan):
            picks: list[tuple[float, RepairChoice]] = []
            for op, a, b, score in _CANDIDATE.findall(text):
                wanted = (
                    (op == "add" and (a, b) in self.edges)
                    or (op == "remove" and (a, b) not in self.edges and (b, a) not in self.edges)
                    or (op == "reverse" and (b, a) in self.edges)
                )
                if wanted:
                    picks.append((float(score), RepairChoice(op=op, cause=a, effect=b)))
            picks.sort(key=lambda p: -p[0])
            return RepairPlan(edits=[p[1] for p in picks[: self.max_edits]])
        raise AssertionError(f"BeliefGraphLLM has no answer for schema {name or schema!r}")


def true_graph_llm(task: Any, **kwargs: Any) -> BeliefGraphLLM:
    """The ideal language prior for a cbo-suite task: its true edges among observed variables."""
    obs = set(task.variables)
    return BeliefGraphLLM(
        [(a, b) for a, b in task.scm.graph.edges if a in obs and b in obs], **kwargs
    )

"""A tiny search problem for exercising the shared loop without sandboxes or back ends.

Minimise ``(a - 3)^2 + (b + 1)^2`` over payloads ``{"a": float, "b": float}``. The
evaluator is a picklable class (so it runs in ``ProcessExecutor`` workers) that can
append every evaluation it performs to a log file and sleep, for resume tests.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optiforge.agents.kit import Evaluated, Proposal, RunContext
from optiforge.errors import InvalidCandidate
from optiforge.evals.protocol import Score


@dataclass
class ToyTask:
    suite: str = "toy"
    name: str = "bowl"
    split: str = "dev"
    metric: str = "loss"
    higher_is_better: bool = False
    description: str = "minimise (a-3)^2 + (b+1)^2"
    budget: int | None = None

    def evaluate(self, candidate: Any, sandbox: Any | None = None) -> Score:
        return ToyEvaluator()(candidate)


class ToyEvaluator:
    """Scores a payload; optionally logs each call to ``log_path`` and sleeps ``delay_s``."""

    def __init__(self, log_path: str | None = None, delay_s: float = 0.0) -> None:
        self.log_path = log_path
        self.delay_s = delay_s

    def __call__(self, payload: dict[str, Any]) -> Score:
        if self.delay_s:
            time.sleep(self.delay_s)
        a, b = float(payload["a"]), float(payload["b"])
        value = (a - 3.0) ** 2 + (b + 1.0) ** 2
        if self.log_path:
            with open(self.log_path, "a") as fh:
                fh.write(json.dumps({"a": a, "b": b, "pid": os.getpid()}) + "\n")
                fh.flush()
        return Score(value=value, passed=True, metrics={"sandbox_s": 0.0})


class ToyProblem:
    """The search problem; ``reject_negative_a`` exercises materialization failures."""

    def __init__(
        self,
        log_path: str | Path | None = None,
        delay_s: float = 0.0,
        reject_negative_a: bool = False,
    ):
        self.task = ToyTask()
        self.higher_is_better = False
        self.log_path = str(log_path) if log_path else None
        self.delay_s = delay_s
        self.reject_negative_a = reject_negative_a

    def initial(self, ctx: RunContext) -> list[Proposal]:
        return [Proposal(payload={"a": 0.0, "b": 0.0}, origin="seed")]

    def materialize(self, proposal: Proposal, ctx: RunContext) -> dict[str, Any]:
        a, b = proposal.payload.get("a"), proposal.payload.get("b")
        if not isinstance(a, int | float) or not isinstance(b, int | float):
            raise InvalidCandidate("a and b must be numbers")
        if self.reject_negative_a and a < 0:
            raise InvalidCandidate("a must be >= 0")
        return {"a": round(float(a), 6), "b": round(float(b), 6)}

    def evaluator(self) -> ToyEvaluator:
        return ToyEvaluator(self.log_path, self.delay_s)

    def reflect(
        self, batch: list[Evaluated], population: list[Evaluated], ctx: RunContext
    ) -> list[str]:
        return []


class GaussianProposer:
    """Heuristic proposer: Gaussian steps around the best candidates."""

    name = "gaussian"

    def __init__(self, step: float = 0.7) -> None:
        self.step = step

    def propose(
        self, problem: Any, population: list[Evaluated], n: int, round_: int, ctx: RunContext
    ) -> list[Proposal]:
        rng = ctx.rng("gaussian", round_)
        out = []
        for i in range(n):
            parent = population[i % len(population)] if population else None
            base = parent.payload if parent else {"a": 0.0, "b": 0.0}
            out.append(
                Proposal(
                    payload={
                        "a": base["a"] + float(rng.normal(0, self.step)),
                        "b": base["b"] + float(rng.normal(0, self.step)),
                    },
                    parent_ids=[parent.id] if parent else [],
                    origin="mutation",
                )
            )
        return out


class JSONLLMProposer:
    """LLM proposer for the toy problem: asks for ``{"a": .., "b": ..}`` as structured output."""

    name = "llm"

    def propose(
        self, problem: Any, population: list[Evaluated], n: int, round_: int, ctx: RunContext
    ) -> list[Proposal]:
        from pydantic import BaseModel

        class Point(BaseModel):
            a: float
            b: float

        shown = "\n".join(
            f"a={p.payload['a']}, b={p.payload['b']}: loss {p.value}" for p in population[:3]
        )
        if ctx.llm is None:
            raise InvalidCandidate("the toy LLM proposer needs an LLM")
        out = []
        for _ in range(n):
            reply = ctx.llm.complete(
                [
                    {
                        "role": "user",
                        "content": f"Minimise a loss over (a, b). Best so far:\n{shown}\nPropose a better point as JSON.",
                    }
                ],
                schema=Point,
            )
            pt = reply.parsed
            assert isinstance(pt, Point)  # complete(schema=Point) parses into Point or raises
            out.append(
                Proposal(
                    payload={"a": pt.a, "b": pt.b},
                    parent_ids=[p.id for p in population[:1]],
                    origin="llm",
                )
            )
        return out

"""Hawkeye's search problem: Triton candidates for one KernelArena task on the shared loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optiforge.agents.hawkeye.roofline import task_facts
from optiforge.agents.hawkeye.strategies import TAXONOMY, KernelFacts, detect_all
from optiforge.agents.kit import Evaluated, Proposal, RunContext
from optiforge.agents.kit.evaluator import SandboxedTaskEvaluator
from optiforge.agents.kit.lineage import Lesson
from optiforge.errors import ConfigError, InvalidCandidate
from optiforge.evals.protocol import Score, Task
from optiforge.kernels.checks import check_candidate_source
from optiforge.kernels.templates import read_params


def check_task(task: Task) -> None:
    """Refuse a task that is not a KernelArena one (no seed kernel or param space)."""
    if not hasattr(task, "seed_code") or not hasattr(task, "param_space"):
        raise ConfigError(
            f"hawkeye needs a kernelarena task, got {getattr(task, 'suite', '?')}/{task.name}"
        )


def attempt(ev: Evaluated) -> dict[str, Any]:
    """One evaluated candidate as an attempt: strategy, params, outcome, failure reason.

    Proposers read attempts from the search's checkpointed ``history`` (through this),
    so a resumed run shows the LLM the same previous attempts as an uninterrupted one.
    """
    return {"strategy": ev.payload.get("strategy", "?"), "params": ev.payload.get("params"), "passed": ev.passed,
            "value": ev.value, "error": ev.error, "applied": ev.payload.get("applied", []),
            "strategy_applied": ev.payload.get("strategy_applied")}  # fmt: skip


def strategy_checks(history: list[Evaluated]) -> dict[str, Any]:
    """How often an LLM attempt applied the strategy it was asked for (the detectors' verdict
    on its source): ``claimed``, ``applied``, ``rate`` (None without claims), and the ids of
    the attempts whose strategy is absent (``flagged``)."""
    claims = [e for e in history if e.payload.get("strategy_applied") is not None]
    applied = [e for e in claims if e.payload["strategy_applied"]]
    return {"claimed": len(claims), "applied": len(applied),
            "rate": len(applied) / len(claims) if claims else None,
            "flagged": [e.id for e in claims if not e.payload["strategy_applied"]][:20]}  # fmt: skip


class KernelProblem:
    """Search over Triton sources for a KernelArena task (payload: code, strategy, params)."""

    def __init__(
        self, task: Any, arch: str, backend: str = "local", events_path: str | None = None
    ) -> None:
        self.task = task
        self.arch = arch
        self.higher_is_better = True
        self.backend = backend
        self.events_path = events_path
        self.facts: KernelFacts
        self.roofline: dict[str, float]
        self.facts, self.roofline = task_facts(task, arch)

    def initial(self, ctx: RunContext) -> list[Proposal]:
        params = read_params(self.task.seed_code) or {}
        return [Proposal(payload={"code": self.task.seed_code, "strategy": "seed", "params": params},
                         origin="seed", rationale="the task's starting kernel")]  # fmt: skip

    def materialize(self, proposal: Proposal, ctx: RunContext) -> dict[str, Any]:
        code = proposal.payload.get("code")
        check_candidate_source(code if isinstance(code, str) else "")  # raises InvalidCandidate
        assert isinstance(code, str)
        try:
            applied = sorted(k for k, v in detect_all(code, self.arch).items() if v.applies)
        except InvalidCandidate:
            applied = []
        strategy = str(proposal.payload.get("strategy", "unknown"))
        # an LLM attempt was asked for one taxonomy strategy: is it in the kernel it wrote?
        claimed = proposal.origin == "llm" and strategy in TAXONOMY
        return {"code": code, "strategy": strategy, "params": dict(proposal.payload.get("params") or {}),
                "applied": applied, "strategy_applied": (strategy in applied) if claimed else None}  # fmt: skip

    def evaluator(self) -> Callable[[dict[str, Any]], Score]:
        return SandboxedTaskEvaluator(self.task, self.backend, self.events_path)

    def reflect(
        self, batch: list[Evaluated], population: list[Evaluated], ctx: RunContext
    ) -> list[Lesson]:
        # strategy names, detector verdicts and values are the harness's (measured); the
        # params are read from the LLM's source (agent text); an error is candidate output
        lessons: list[Lesson] = []
        best = population[0].value if population else None
        for ev in batch:
            strategy = ev.payload.get("strategy", "?")
            if ev.payload.get("strategy_applied") is False:
                lessons.append(Lesson(provenance="measured", text=f"{self.task.op} on {self.arch}: asked for strategy {strategy}, the kernel written does not "
                               f"apply it (detected: {', '.join(ev.payload.get('applied', [])) or 'none'})"))  # fmt: skip
            if ev.error:
                lessons.append(Lesson(provenance="candidate", text=f"{self.task.op} ({self.task.family}) on {self.arch}: strategy {strategy} "
                               f"params {ev.payload.get('params')} failed: {ev.error[:240]}"))  # fmt: skip
            elif ev.value is not None and (best is None or ev.value > best):
                lessons.append(Lesson(provenance="agent", text=f"{self.task.op} on {self.arch}: strategy {strategy} params {ev.payload.get('params')} "
                               f"correct, value {ev.value:.4g} (applied: {', '.join(ev.payload.get('applied', []))})"))  # fmt: skip
        return lessons[:4]

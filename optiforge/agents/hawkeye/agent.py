"""``hawkeye``'s build: the kernel problem and a proposer on the shared search loop."""

from __future__ import annotations

from pydantic import BaseModel

from optiforge.agents.hawkeye.config import HawkeyeConfig
from optiforge.agents.hawkeye.problem import KernelProblem, check_task
from optiforge.agents.hawkeye.proposers import (
    AutotuneProposer,
    LLMKernelProposer,
    distance,
    prior_preference,
)
from optiforge.agents.hawkeye.report import hawkeye_outcome
from optiforge.agents.hawkeye.roofline import detect_arch
from optiforge.agents.kit import AgentRun, LLMOrOffline, RunContext, SearchResult, search_run
from optiforge.agents.kit.search import AnyProposer, pick_proposer
from optiforge.agents.spec import AgentOutcome
from optiforge.evals.protocol import Task


def hawkeye_run(
    task: Task, config: HawkeyeConfig, budget: int | None, proposer: AnyProposer
) -> AgentRun:
    """Search the task's dev shapes with ``proposer`` (the agent and the autotune baseline)."""
    check_task(task)
    arch = detect_arch() if config.arch == "auto" else config.arch
    search = config.search.model_copy(update={"max_evaluations": budget} if budget else {})
    # The search only ever sees dev shapes; the runner re-scores the best candidate on the
    # task's own split, so a held-out eval measures unseen shapes.
    visible = task.for_split("dev") if task.split != "dev" else task  # type: ignore[attr-defined]
    problem = KernelProblem(visible, arch, config.sandbox)

    def outcome(result: SearchResult, ctx: RunContext) -> AgentOutcome:
        ran = pick_proposer(proposer, ctx)
        best = result.best
        if best is not None and isinstance(ran, AutotuneProposer):
            # Without a GPU the cost model often ties configs (a compute-bound op at the
            # timing shape); break ties toward the roofline prior (the configs a GPU search
            # heads for) rather than keeping the slow seed.
            tied = [e for e in result.history if e.passed and e.value == best.value]
            pref = prior_preference(problem.facts)
            best = min(
                tied, key=lambda e: (distance(e.payload.get("params") or {}, pref), -tied.index(e))
            )
        chosen = [
            s.name
            for s in LLMKernelProposer(config.strategies_per_task).strategies(
                problem, result.population
            )
        ]
        llm = isinstance(ran, LLMKernelProposer)
        return hawkeye_outcome(result, best, problem, ran.name, chosen, llm)

    return search_run(problem, proposer, search, outcome=outcome)


def build(task: Task, config: BaseModel, budget: int | None) -> AgentRun:
    """LLM-driven search when the run has an LLM, else the offline autotuner."""
    assert isinstance(config, HawkeyeConfig)
    proposer = LLMOrOffline(
        llm=LLMKernelProposer(config.strategies_per_task, config.attempts_shown, config.tools),
        offline=AutotuneProposer(),
    )
    return hawkeye_run(task, config, budget, proposer)

"""``hawkeye``'s build: the kernel problem and a proposer on the shared search loop (the
outcome, with the autotuner's tie-break: ``report.hawkeye_result``)."""

from __future__ import annotations

from functools import partial

from optiforge.agents.hawkeye.config import HawkeyeConfig
from optiforge.agents.hawkeye.problem import KernelProblem, detect_arch
from optiforge.agents.hawkeye.proposers import AutotuneProposer, LLMKernelProposer
from optiforge.agents.hawkeye.report import hawkeye_result
from optiforge.agents.kit import AgentRun, LLMOrOffline, search_run
from optiforge.agents.kit.search import AnyProposer
from optiforge.evals.suites.kernelarena.protocol import KernelTask


def hawkeye_run(
    task: KernelTask, config: HawkeyeConfig, budget: int | None, proposer: AnyProposer
) -> AgentRun:
    """Search the task's dev shapes with ``proposer`` (the agent and the autotune baseline)."""
    arch = detect_arch() if config.arch == "auto" else config.arch
    search = config.search.model_copy(update={"max_evaluations": budget} if budget else {})
    # The search only ever sees dev shapes; the runner re-scores the best candidate on the
    # task's own split, so a held-out eval measures unseen shapes.
    visible = task.for_split("dev") if task.split != "dev" else task
    problem = KernelProblem(visible, arch, config.sandbox)
    outcome = partial(hawkeye_result, problem=problem, config=config, proposer=proposer)
    # (kit's SearchProblem declares a mutable ``task: Task``, which mypy keeps invariant)
    return search_run(problem, proposer, search, outcome=outcome)  # type: ignore[arg-type]


def build(task: KernelTask, config: HawkeyeConfig, budget: int | None) -> AgentRun:
    """LLM-driven search when the run has an LLM, else the offline autotuner."""
    proposer = LLMOrOffline(
        llm=LLMKernelProposer(config.strategies_per_task, config.attempts_shown, config.tools),
        offline=AutotuneProposer(),
    )
    return hawkeye_run(task, config, budget, proposer)

"""``evolve``'s build: the code problem and a proposer on the shared search loop."""

from __future__ import annotations

from functools import partial

from optiforge.agents.evolve.config import EvolveConfig
from optiforge.agents.evolve.problem import CodeProblem, seed_code
from optiforge.agents.evolve.proposers import LLMCodeProposer, MutationProposer
from optiforge.agents.evolve.report import evolve_result
from optiforge.agents.kit import AgentRun, LLMOrOffline, search_run
from optiforge.evals.protocol import CodeTask


def build(task: CodeTask, config: EvolveConfig, budget: int | None) -> AgentRun:
    """The evolver on a code-scored task (``funcfit`` and similar): LLM rewrites when the
    run has an LLM, else syntax-tree mutations."""
    search = config.search.model_copy(update={"max_evaluations": budget} if budget else {})
    problem = CodeProblem(task, seed_code(task), config.function_name)
    proposer = LLMOrOffline(
        llm=LLMCodeProposer(config.parents_shown, config.function_name, config.tools),
        offline=MutationProposer(),
    )
    outcome = partial(evolve_result, proposer=proposer, higher_is_better=task.higher_is_better)
    return search_run(problem, proposer, search, outcome=outcome)

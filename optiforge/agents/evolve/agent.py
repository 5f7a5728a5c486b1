"""``evolve``'s build: the code problem and a proposer on the shared search loop."""

from __future__ import annotations

from pydantic import BaseModel

from optiforge.agents.evolve.config import EvolveConfig
from optiforge.agents.evolve.problem import SEED_CODE, CodeProblem
from optiforge.agents.evolve.proposers import LLMCodeProposer, MutationProposer
from optiforge.agents.evolve.report import evolve_outcome
from optiforge.agents.kit import AgentRun, LLMOrOffline, RunContext, SearchResult, search_run
from optiforge.agents.kit.search import pick_proposer
from optiforge.agents.spec import AgentOutcome
from optiforge.evals.protocol import Task


def build(task: Task, config: BaseModel, budget: int | None) -> AgentRun:
    """The evolver on a code-scored task (``funcfit`` and similar): LLM rewrites when the
    run has an LLM, else syntax-tree mutations."""
    assert isinstance(config, EvolveConfig)
    search = config.search.model_copy(update={"max_evaluations": budget} if budget else {})
    problem = CodeProblem(task, getattr(task, "seed_code", SEED_CODE), config.function_name)
    proposer = LLMOrOffline(
        llm=LLMCodeProposer(config.parents_shown, config.function_name, config.tools),
        offline=MutationProposer(),
    )

    def outcome(result: SearchResult, ctx: RunContext) -> AgentOutcome:
        name = pick_proposer(proposer, ctx).name
        return evolve_outcome(result, name, task.higher_is_better, ctx.llm is not None)

    return search_run(problem, proposer, search, outcome=outcome)

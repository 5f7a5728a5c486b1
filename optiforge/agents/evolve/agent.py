"""``evolve``'s solve: the code problem and a proposer on the shared search loop."""

from __future__ import annotations

from pydantic import BaseModel

from optiforge.agents.evolve.config import EvolveConfig
from optiforge.agents.evolve.problem import SEED_CODE, CodeProblem
from optiforge.agents.evolve.proposers import LLMCodeProposer, MutationProposer
from optiforge.agents.evolve.report import evolve_outcome
from optiforge.agents.kit import Proposer, RunContext, run_search
from optiforge.agents.spec import AgentOutcome
from optiforge.evals.protocol import Task


def solve(
    task: Task, ctx: RunContext, config: BaseModel, budget: int | None, resume: bool
) -> AgentOutcome:
    """Run the evolver on a code-scored task (``funcfit`` and similar)."""
    assert isinstance(config, EvolveConfig)
    search = config.search.model_copy(update={"max_evaluations": budget} if budget else {})
    events = str(ctx.run_dir / "events.jsonl") if ctx.run_dir else None
    problem = CodeProblem(
        task, getattr(task, "seed_code", SEED_CODE), config.function_name, events_path=events
    )
    proposer: Proposer = (
        LLMCodeProposer(config.parents_shown, config.function_name)
        if ctx.llm is not None
        else MutationProposer()
    )
    result = run_search(problem, proposer, ctx, search, resume=resume)
    return evolve_outcome(result, proposer.name, task.higher_is_better, ctx.llm is not None)

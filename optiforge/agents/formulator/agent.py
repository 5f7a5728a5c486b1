"""The formulator's graph: ``formulate`` (the LLM's formulation; offline the heuristic
formulator's reading of the description, or the fixed default with ``offline: default``)
-> ``revise`` (with an LLM and ``revise_after`` > 0: a pilot run of the formulation, made
by the harness in the sandbox, then the LLM's revision for the rest of the budget) -> end.
Nodes: ``nodes.py``. Its candidate is the formulation; the harness's re-measurement is the
optimization run itself (``Task.evaluate`` runs it in the sandbox; a revised formulation
carries its ``pilot``, so the re-measurement runs both stages within the one budget), so
the score of a formulator run is the best value its formulation reached.

On a ``train`` task (``TrainPlanTask``) the graph is one node, ``plan``: the training plan
(a catalogue optimizer and its hyperparameters), scored by the task's training run on
held-out data. On an ``rl`` task (``RLPlanTask``) it is one node, ``control_plan``: the
posed control problem and a catalogue RL method, scored on held-out episodes."""

from __future__ import annotations

from functools import partial
from typing import Any

from langgraph.graph import END, START, StateGraph

from optiforge.agents.formulator import nodes
from optiforge.agents.formulator.config import FormulatorConfig
from optiforge.agents.formulator.problem import FormulatorState
from optiforge.agents.formulator.report import formulator_outcome, plan_outcome
from optiforge.agents.kit import AgentRun
from optiforge.agents.kit.context import AgentContext
from optiforge.errors import ConfigError
from optiforge.evals.suites.bbowp.protocol import WordProblemTask
from optiforge.evals.suites.rl.protocol import RLPlanTask
from optiforge.evals.suites.train.protocol import TrainPlanTask

CHECKPOINTS = "formulator_checkpoints.sqlite"


def build(
    task: WordProblemTask | TrainPlanTask | RLPlanTask, config: FormulatorConfig, budget: int | None
) -> AgentRun:
    """``AgentSpec.build``: formulate, then (with an LLM) revise after a pilot run; on a
    ``train`` task, plan the training.

    budget: not spent (the instance's own optimization run scores a formulation); a
    different one is noted in the outcome."""
    if isinstance(task, TrainPlanTask):
        return build_plan(task, config, budget)
    if isinstance(task, RLPlanTask):
        return build_control_plan(task, config, budget)
    g: StateGraph[Any, Any, Any, Any] = StateGraph(FormulatorState, context_schema=AgentContext)
    g.add_node("formulate", nodes.formulate)
    g.add_node("revise", nodes.revise)
    g.add_edge(START, "formulate")
    g.add_edge("formulate", "revise")
    g.add_edge("revise", END)
    outcome = partial(formulator_outcome, spent=task.budget, asked=budget)
    return AgentRun(graph=g, outcome=outcome, what="a formulator run", checkpoints=CHECKPOINTS,
                    task=task, config=config, eval_budget=budget)  # fmt: skip


def build_plan(task: TrainPlanTask, config: FormulatorConfig, budget: int | None) -> AgentRun:
    """A ``train`` task: one ``plan`` node (its plan is scored by the task's training run).

    Raises:
        ConfigError: ``config.optimizer`` names no catalogue method for this problem."""
    if config.optimizer is not None:
        why = task.check_plan({"optimizer": config.optimizer})
        if why:
            raise ConfigError(f"agent.optimizer={config.optimizer}: {why}")
    g: StateGraph[Any, Any, Any, Any] = StateGraph(FormulatorState, context_schema=AgentContext)
    g.add_node("plan", nodes.plan)
    g.add_edge(START, "plan")
    g.add_edge("plan", END)
    outcome = partial(plan_outcome, spent=task.budget, asked=budget)
    return AgentRun(graph=g, outcome=outcome, what="a formulator run", checkpoints=CHECKPOINTS,
                    task=task, config=config, eval_budget=budget)  # fmt: skip


def build_control_plan(task: RLPlanTask, config: FormulatorConfig, budget: int | None) -> AgentRun:
    """An ``rl`` task: one ``control_plan`` node (its plan is trained and scored by the task).

    Raises:
        ConfigError: ``config.rl_method`` names no RL method offered here."""
    if config.rl_method is not None and config.rl_method not in task.options:
        raise ConfigError(f"agent.rl_method={config.rl_method}: not offered here (offered: "
                          f"{', '.join(task.options) or 'none'})")  # fmt: skip
    g: StateGraph[Any, Any, Any, Any] = StateGraph(FormulatorState, context_schema=AgentContext)
    g.add_node("control_plan", nodes.control_plan)
    g.add_edge(START, "control_plan")
    g.add_edge("control_plan", END)
    outcome = partial(plan_outcome, spent=task.budget, asked=budget)
    return AgentRun(graph=g, outcome=outcome, what="a formulator run", checkpoints=CHECKPOINTS,
                    task=task, config=config, eval_budget=budget)  # fmt: skip

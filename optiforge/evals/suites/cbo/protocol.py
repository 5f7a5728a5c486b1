"""``CausalBOTask``: the task family of causal Bayesian optimisation (what ``agent-cbo`` reads).

Declared beside the suite's tasks (``suite.CBOTask`` is one) so agents import this
Protocol, never a suite module. Imports only ``evals.protocol``, the standard library and,
for annotations, the solver types the members hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from optiforge.evals.protocol import Task

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.solvers.cbo.scm import SCM, InterventionDomain


@runtime_checkable
class CausalBOTask(Task, Protocol):
    """An SCM to optimise by interventions: the environment, what is told, the budget."""

    variables: dict[str, str]
    """Variable name -> description (what an LLM is told about each one)."""
    target: str
    """The variable whose expectation is minimised."""
    domains: dict[str, InterventionDomain]
    """The manipulable variables and their intervention ranges and costs."""
    n_trials: int
    """Interventions of one run when no budget is given."""
    budget_cost: float
    """Total intervention cost one run may spend."""
    exploration_sets: list[list[str]]
    """The true graph's exploration sets (read only by the known-graph baseline)."""

    @property
    def scm(self) -> SCM:
        """The structural causal model: an agent uses it only as the environment
        (``sample``, ``do``), never its graph."""
        ...

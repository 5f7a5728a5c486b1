"""Kernel Discovery: LLM-evolved GP kernels for high-dimensional Bayesian optimization.

The agent runs BO on an ``hdbo`` task; every ``refresh_every`` BO rounds it refreshes the
GP kernel by a short evolutionary search on the shared loop (population, selection by
held-out CRPS on the BO data seen so far, mutation and crossover), and the acquisition
(qLogEI) uses the kernel selected.

Proposers (``proposers.py``):

- ``LLMKernelProposer`` works in two stages, as in the paper: one call proposes a novel
  *mathematical form* (shown the parents' forms and scores; mutation or crossover), a
  second call turns that form into code (``def kernel(x1, x2, params)`` plus
  ``HYPERPARAMETERS``), which is validated in the sandbox (symmetric, PSD, finite values
  and gradients, hyperparameter bound) and re-asked with the reason when invalid.
- ``CompositionalProposer`` (offline) is the classic compositional kernel search over base
  kernels with ``+`` and ``*`` (see ``grammar``).

Functional duplicates (kernels whose fitted, normalised Gram matrices agree on the data)
are counted per refresh and kept out of the carried population.

Selection that generalizes (issue 23; selection on 10-25 points overfits):

- score (``selection_score="kfold"``, default): the mean CRPS of points held out in
  ``selection_folds`` folds, each fold predicted with hyperparameters (kernel, signal
  variance, noise, mean) fitted on the other folds only. The closed-form LOO-CRPS
  (``"loo"``, the old rule) keeps the full-data hyperparameters, which saw the point they
  predict: with 20 points in 25-60 dims an ARD kernel interpolates and its LOO-CRPS looks
  several times better than its held-out CRPS;
- complexity: the score is multiplied by ``1 + complexity_penalty * (groups - 1)`` (a
  group is one named hyperparameter);
- incumbent: a refresh keeps the incumbent kernel (the previous refresh's choice, RBF-ARD
  at round 0) unless the search's best beats it by more than ``selection_margin *
  |incumbent|`` *and* by ``selection_se`` standard errors of the paired per-point
  differences (both kernels are scored on the same held-out points).

The final comparison (``finish``) reports three out-of-sample measures of the last
selected kernel against RBF-ARD: LOO-CRPS refitted on the final BO data (the measure
before issue 23), 5-fold held-out CRPS on the final data, and the *forward* CRPS: each
refresh's choice and RBF-ARD fitted on that refresh's data predict the points BO
evaluated until the next refresh (points no selection saw).

Trust boundary: LLM-written kernel code never runs in this process. The parent handles it
as text, and as numbers computed by trusted code here or received from a harness program
the candidate runs in, inside the sandbox:

- validation for the re-ask loop: ``optiforge.solvers.gp.validate_cli`` in the sandbox
  (shipped with ``package_files``; its verdict only decides whether to re-ask);
- scoring: the hdbo harness (``evals.suites.hdbo.scoring``) uses the kernel only as a
  sandboxed Gram oracle (inputs and hyperparameters in, matrices out; ``y`` never enters
  the sandbox), fits the hyperparameters itself and computes the LOO-CRPS from the
  checked matrix; a printed score is never read;
- BO with a selected LLM kernel: each round's GP fit and qLogEI optimisation run in one
  sandbox run (``harness/bo_round.py``, ``SandboxedKernel``); the loop gets back only the
  proposed points, checks them and evaluates the objective here.

Library kernels (the compositional grammar) are parsed by ``grammar`` (an AST whitelist of
base-kernel names, ``+`` and ``*``, no exec) and built here from library code. The prompt
shows the LLM the task's opaque ``agent_name`` and leak-free ``description`` only, never
the CLI id (``levy4_in_25``), the function, its effective dimensions or the embedding.

Graph and resume: the agent is a LangGraph graph (``discovery_run``) whose nodes
(``nodes.py``) are the BO loop's steps, on ``solvers.bo.BOSession`` (the loop one round at
a time): ``design`` (initial Sobol design), ``refresh`` (a kernel search, every
``refresh_every`` rounds; ``selection.py``), ``bo_round`` (one fit -> qLogEI -> evaluate)
and ``finish`` (final comparison, lesson).
The state holds the BO rows (points, values, kernel, fallback per round) and the
refreshes' record (incumbent, carried kernels, per-refresh info); the live session is a
cache of those rows. With a run directory every node is checkpointed
(``kernel_discovery_checkpoints.sqlite``), the BO session seeds each round from
``(seed, round)`` and appends each evaluation to ``bo_evaluations.jsonl`` as soon as
the objective returns, and each refresh's search checkpoints under
``thread_id=refresh<round>``; ``--resume`` continues from the last node: finished
evaluations are not redone (one finished by the killed node is read back from the log),
a cut refresh continues its search.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from optiforge.agents.kernel_discovery import nodes
from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kernel_discovery.problem import CHECKPOINTS, THREAD_ID, DiscoveryState
from optiforge.agents.kit import AgentRun
from optiforge.agents.kit.context import AgentContext
from optiforge.evals.suites.hdbo.protocol import HDBOTask


def build(task: HDBOTask, config: KernelDiscoveryConfig, budget: int | None) -> AgentRun:
    """BO on an hdbo task with the kernel refreshed by evolutionary search every k rounds
    (the LLM's two-stage proposer when the run has an LLM, else compositional search)."""
    return discovery_run(task, config, budget)


def discovery_run(
    task: HDBOTask, config: KernelDiscoveryConfig, budget: int | None, *, offline: bool = False
) -> AgentRun:
    """The agent's graph: ``design -> (refresh ->) bo_round -> ... -> finish`` (``nodes``).

    ``offline``: refresh with the compositional search whatever the run's LLM (the
    ``compositional`` baseline)."""
    graph = StateGraph(DiscoveryState, context_schema=AgentContext)
    graph.add_node("design", nodes.design)
    graph.add_node("refresh", nodes.refresh)
    graph.add_node("bo_round", nodes.bo_round)
    graph.add_node("finish", nodes.finish)
    after = ["refresh", "bo_round", "finish"]
    graph.add_edge(START, "design")
    graph.add_conditional_edges("design", nodes.route, after)
    graph.add_edge("refresh", "bo_round")
    graph.add_conditional_edges("bo_round", nodes.route, after)
    graph.add_edge("finish", END)
    total = budget or task.budget or 0
    return AgentRun(
        graph=graph, outcome=nodes.outcome, start={"bo": [], **({"offline": True} if offline else {})},
        thread_id=THREAD_ID, checkpoints=CHECKPOINTS, recursion_limit=2 * total + 20,
        what="a kernel-discovery run", task=task, config=config, eval_budget=budget,
    )  # fmt: skip

"""``agent-cbo``: causal BO that learns only the structure the optimizer can feel.

One LangGraph graph (``agent.py``; its nodes in ``nodes.py``, whose docstring walks
through them): LLM edge beliefs and PC (``structure.py``), cost-aware causal BO on the committed graph
(``problem.py``: the numerical session as a cache of the graph state), LLM calibration
and repair (``proposers.py``) and a deterministic commit gate (``gate.py``).
"""

from optiforge.agents.agent_cbo.agent import build, run_agent
from optiforge.agents.agent_cbo.baselines import (
    discovery_only_baseline,
    known_graph_baseline,
    plain_bo_baseline,
)
from optiforge.agents.agent_cbo.config import AgentCBOConfig
from optiforge.agents.spec import AgentSpec
from optiforge.evals.suites.cbo.protocol import CausalBOTask

SPEC = AgentSpec(
    name="agent-cbo",
    description="Causal BO with LLM + PC structure priors, score-gated local repair and a "
    "routing-equivalence commit gate",
    config_model=AgentCBOConfig,
    build=build,
    default_benchmark="cbo",
    task_type=CausalBOTask,
    baselines={
        "known-graph-cbo": known_graph_baseline,
        "plain-bo": plain_bo_baseline,
        "discovery-only": discovery_only_baseline,
    },
    default_budget=30,
    artifact="causal-model",
    offline_equivalent="discovery-only",
)

__all__ = ["SPEC", "AgentCBOConfig", "build", "run_agent"]

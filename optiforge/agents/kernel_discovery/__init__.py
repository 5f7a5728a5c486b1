"""Kernel Discovery: LLM-evolved GP kernels for high-dimensional Bayesian optimization.

BO on an ``hdbo`` task whose GP kernel is refreshed every few rounds by an evolutionary
search (``agent.py``, which also documents the trust boundary and resume; the graph's nodes:
``nodes.py``; one refresh and the final comparison: ``selection.py``). Options:
``config.py``; the refresh's search problem, the state and sandbox glue: ``problem.py``; proposers
(two-stage LLM, offline compositional grammar ``solvers.gp.grammar``): ``proposers.py``;
baselines: ``baselines.py``; outcome, lesson and report notes: ``report.py``.
"""

from __future__ import annotations

from optiforge.agents.kernel_discovery.agent import build
from optiforge.agents.kernel_discovery.baselines import BASELINES
from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kernel_discovery.report import summary_notes
from optiforge.agents.spec import AgentSpec
from optiforge.evals.suites.hdbo.protocol import HDBOTask

SPEC = AgentSpec(
    name="kernel-discovery",
    description="LLM-evolved GP kernels for high-dimensional BO (offline: compositional kernel search)",
    config_model=KernelDiscoveryConfig,
    build=build,
    default_benchmark="hdbo",
    task_type=HDBOTask,
    baselines=BASELINES,
    default_budget=30,
    artifact="gp-kernel",
    offline_equivalent="compositional",
    summary_notes=summary_notes,
)

__all__ = ["SPEC", "KernelDiscoveryConfig", "build"]

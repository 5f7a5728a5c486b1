"""``epb``: distill a black-box neural TSP policy into a readable program portfolio with a
router (Evolving Programmatic Bottlenecks). The programs' per-step distributions are the
bottleneck; the router mixes them (``problem.py``); block I edits the blamed program with
the capacity fixed, block II boosts and prunes (``nodes.py``, wired in ``agent.py``);
offline edits blend the heuristics (``problem.blend``), the LLM rewrites from textual
feedback (``proposers.py``). Tasks: ``NCOTask`` (suite ``nco``).
"""

from optiforge.agents.epb.agent import build
from optiforge.agents.epb.baselines import BASELINES
from optiforge.agents.epb.config import EPBConfig
from optiforge.agents.epb.report import summary_notes
from optiforge.agents.spec import AgentSpec
from optiforge.evals.suites.nco.protocol import NCOTask

SPEC = AgentSpec(
    name="epb",
    description="Distill a neural TSP policy into a program portfolio with a router (blocks I and II)",
    config_model=EPBConfig,
    build=build,
    default_benchmark="nco",
    task_type=NCOTask,
    baselines=BASELINES,
    default_budget=24,
    summary_notes=summary_notes,
    artifact="program-portfolio",
)

__all__ = ["SPEC", "EPBConfig", "build"]

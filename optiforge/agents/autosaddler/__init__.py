"""``autosaddler``: tune an agent's harness from its failure traces (AutoSaddler).

Mini-batches of failed trajectories -> a diagnosis of the root cause (``diagnosis``) ->
one structured patch to one harness part (``proposers``: an LLM, or the rule library
offline) -> a paired validation gate on held-out dev tasks (``problem``) -> memory. The graph:
``agent.py`` (wiring) and ``nodes.py``; its "task" is a ``problem.Target`` (``targets``: the
``terminal`` agent on ``saddle``, driven through its SPEC; ``meta``: another optiforge
agent's config). ``report.measure`` reports pass@1, pass^k, steps and cost per harness
version. CLI: ``optiforge saddle tune`` / ``optiforge saddle measure``.
"""

from optiforge.agents.autosaddler.agent import build, build_tuning, tune
from optiforge.agents.autosaddler.config import SaddlerConfig
from optiforge.agents.autosaddler.problem import Target
from optiforge.agents.autosaddler.report import measure
from optiforge.agents.autosaddler.targets import TerminalTarget
from optiforge.agents.spec import AgentSpec

SPEC = AgentSpec(
    name="autosaddler",
    description="Tune an agent's harness from its failure traces (diagnosis -> one patch -> paired gate)",
    config_model=SaddlerConfig,
    build=build,
    default_benchmark="saddle",
    task_type=Target,
    default_budget=0,
    artifact="harness-patch",
    cli="optiforge.agents.autosaddler.cli:app",
)

__all__ = ["SPEC", "SaddlerConfig", "TerminalTarget", "build_tuning", "measure", "tune"]

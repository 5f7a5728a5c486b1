"""``terminal``: a shell agent driven by a declared harness (``kit.harness.Harness``) on the
``saddle`` suite; the agent AutoSaddler tunes (``optiforge.agents.autosaddler``).
``config.harness`` names a harness folder (default: ``episode.base_harness``)."""

from optiforge.agents.spec import AgentSpec
from optiforge.agents.terminal.agent import build
from optiforge.agents.terminal.baselines import BASELINES
from optiforge.agents.terminal.config import TerminalConfig
from optiforge.agents.terminal.report import summary_notes
from optiforge.evals.suites.saddle.protocol import SaddleTask

SPEC = AgentSpec(
    name="terminal",
    description="Shell agent run through a declared, patchable harness (the agent AutoSaddler tunes)",
    config_model=TerminalConfig,
    build=build,
    default_benchmark="saddle",
    task_type=SaddleTask,
    baselines=BASELINES,
    default_budget=1,
    summary_notes=summary_notes,
    artifact="commands",
)

__all__ = ["SPEC", "TerminalConfig", "build"]

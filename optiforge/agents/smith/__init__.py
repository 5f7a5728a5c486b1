"""``smith``: build tools from examples and use them by function calling (SMITH). Build
rollouts write a tool and are validated on three reward axes (schema, code, outcome:
``optiforge.evals.suites.procedural.rewards``); passing tools join the pool (and memory);
use rollouts call pool tools on new questions (``nodes.py``). Offline: the template
library (``templates.py``), the no-learning baseline. ``grpo.py`` trains a policy on the
same rollouts and rewards. Tasks: ``ProceduralTask`` (suite ``procedural``).
"""

from optiforge.agents.smith.agent import build
from optiforge.agents.smith.baselines import BASELINES
from optiforge.agents.smith.config import SmithConfig
from optiforge.agents.smith.report import summary_notes
from optiforge.agents.spec import AgentSpec
from optiforge.evals.suites.procedural.protocol import ProceduralTask

SPEC = AgentSpec(
    name="smith",
    description="Build tools from examples and use them by function calling (schema/code/outcome rewards)",
    config_model=SmithConfig,
    build=build,
    default_benchmark="procedural",
    task_type=ProceduralTask,
    baselines=BASELINES,
    default_budget=27,
    summary_notes=summary_notes,
    artifact="tool-pool",
    cli="optiforge.agents.smith.cli:app",
)

__all__ = ["SPEC", "SmithConfig", "build"]

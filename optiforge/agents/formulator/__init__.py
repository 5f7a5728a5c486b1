"""``formulator``: from a natural-language black-box problem to a formulation (a search
space and an optimizer); the harness's re-measurement runs that optimization. Offline the
heuristic formulator reads the description and the typed knob list (prunes nuisance knobs,
narrows ranges, picks log scales and the optimizer by dimension and type); the fixed
default (every knob, full ranges, GP-BO), the paper's comparison point, is the ``default``
baseline (and ``agent.offline=default``). With an LLM it reads the description and writes
a space and an optimizer choice (enums of the system's knobs and the portfolio; re-asked
when invalid). On ``train`` tasks it writes a training plan (``formulator.train_plan``),
on ``rl`` tasks a control plan (``formulator.rl_plan``).
"""

from optiforge.agents.formulator.agent import build
from optiforge.agents.formulator.baselines import FAMILIES, default_baseline, human_baseline
from optiforge.agents.formulator.config import FormulatorConfig
from optiforge.agents.formulator.report import summary_notes
from optiforge.agents.spec import AgentSpec
from optiforge.evals.suites.bbowp.protocol import WordProblemTask

SPEC = AgentSpec(
    name="formulator",
    description="Black-box word problems: write the search space and pick the optimizer (offline: a "
    "heuristic reading of the description; baseline: the fixed default); train tasks: pick the "
    "training optimizer and its hyperparameters; rl tasks: pose the control problem and pick "
    "the RL method",
    config_model=FormulatorConfig,
    build=build,
    default_benchmark="bbowp",
    task_type=WordProblemTask,
    baselines={"default": default_baseline, "human": human_baseline},
    families=FAMILIES,
    default_budget=1,
    summary_notes=summary_notes,
    artifact="formulation",
)

__all__ = ["SPEC", "FormulatorConfig", "build"]

"""``autorem``: Automated Reformulation with Experience Memory on AutoRO-Bench.

cvxpy counterparts written by the LLM, run in the sandbox, judged by the suite's verifier
and repaired with its verdict (``agent.py`` wires the graph, ``nodes.py`` holds its nodes,
prompts in ``proposers.py``); on text-only tasks a modelling step first writes the model
(``modeller.py``). Adaptation (``adapt.py``)
reflects failures into experience (``experience.py``); ``curate.py`` consolidates and
prunes it on a validation split. Offline: the reference modeller and reformulator.
"""

from optiforge.agents.autorem.agent import build
from optiforge.agents.autorem.baselines import no_memory_baseline, nominal_baseline
from optiforge.agents.autorem.config import AutoREMConfig
from optiforge.agents.autorem.events import ATTEMPT_EVENT
from optiforge.agents.autorem.report import summary_notes
from optiforge.agents.spec import AgentSpec
from optiforge.evals.suites.autoro.protocol import ROTask

SPEC = AgentSpec(
    name="autorem",
    description=(
        "Robust counterparts as cvxpy code with an experience memory (offline: the "
        "reference reformulator as code, which measures the checker)"
    ),
    config_model=AutoREMConfig,
    build=build,
    default_benchmark="autoro",
    task_type=ROTask,
    baselines={"nominal": nominal_baseline, "no-memory": no_memory_baseline},
    default_budget=3,
    artifact="formulation",
    offline_equivalent="no-memory",
    summary_notes=summary_notes,
    cli="optiforge.agents.autorem.cli:app",
    attempt_event=ATTEMPT_EVENT,
)

__all__ = ["SPEC", "AutoREMConfig", "build"]

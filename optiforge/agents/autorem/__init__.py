"""``autorem``: Automated Reformulation with Experience Memory on AutoRO-Bench.

The LLM writes the deterministic robust counterpart of an instance as cvxpy code; it
runs in the sandbox and the suite's verifier judges it; rejected code is repaired with
the verdict fed back (``agent.py``, a LangGraph graph per instance; prompts in
``proposers.py``). On text-only tasks (the ``app`` splits: words, no JSON) a modelling
step first writes the model from the statement as structured output (``modeller.py``);
the program reads that model and its answer is verified against the hidden JSON.
Offline adaptation (``adapt.py``) reflects failed trajectories into structured experience
entries (``experience.py``) in the shared memory; curation (``curate.py``) consolidates
them by failure key and keeps only the groups with a positive effect on a validation
split; the curated lessons are retrieved into later prompts, also by another base model.
Offline (no LLM) the modeller is the reference modeller (a parser of the model sheet) and
the writer the reference reformulator emitted as a standalone cvxpy program
(``proposers.counterpart_program``): offline accuracy measures the sheet round trip and
the checker, not an LLM. Baselines (``baselines.py``): ``nominal`` and ``no-memory``.
"""

from optiforge.agents.autorem.agent import build
from optiforge.agents.autorem.baselines import no_memory_baseline, nominal_baseline
from optiforge.agents.autorem.config import AutoREMConfig
from optiforge.agents.autorem.report import summary_notes
from optiforge.agents.spec import AgentSpec

SPEC = AgentSpec(
    name="autorem",
    description=(
        "Robust counterparts as cvxpy code with an experience memory (offline: the "
        "reference reformulator as code, which measures the checker)"
    ),
    config_model=AutoREMConfig,
    build=build,
    default_benchmark="autoro",
    baselines={"nominal": nominal_baseline, "no-memory": no_memory_baseline},
    default_budget=3,
    artifact="formulation",
    offline_equivalent="no-memory",
    summary_notes=summary_notes,
)

__all__ = ["SPEC", "AutoREMConfig", "build"]

"""``knowevo``: evolve executable expertise blocks in strategy mutation trees (KnowEvo).

Knowledge is the optimization target: a strategy is a weighted composition of expertise
blocks (``blocks.py``: small programs, each stating the mechanism it encodes), edits are
localized to one block (``problem.py``), and the strategies form a mutation tree
(``tree.py``). A forward phase allocates measurements across the tree by a bandit; a
backward phase turns rollout evidence into a tested localized edit (``nodes.py``,
``proposers.py``: offline rule edits, or the LLM's edit loop in the sandbox). Blocks go
to memory with lineage and measured effect, and later runs seed their trees with them
(``library.py``). Baselines at equal measurement and candidate-test budgets: the initial
heuristics, monolithic evolution, LLM evolution (OpenEvolve-style, ``evolution.py``) and
random mutation (``baselines.py``). Tasks: ``ProteinTask`` (suite ``protein``).
"""

from optiforge.agents.knowevo.agent import build
from optiforge.agents.knowevo.baselines import BASELINES
from optiforge.agents.knowevo.config import KnowEvoConfig
from optiforge.agents.knowevo.report import summary_notes
from optiforge.agents.spec import AgentSpec
from optiforge.evals.suites.protein.protocol import ProteinTask

SPEC = AgentSpec(
    name="knowevo",
    description="Expertise blocks evolved in strategy mutation trees: bandit rollouts, evidence-guided block edits",
    config_model=KnowEvoConfig,
    build=build,
    default_benchmark="protein",
    task_type=ProteinTask,
    baselines=BASELINES,
    default_budget=120,
    summary_notes=summary_notes,
    artifact="strategy",
    cli="optiforge.agents.knowevo.cli:app",
)

__all__ = ["SPEC", "KnowEvoConfig", "build"]

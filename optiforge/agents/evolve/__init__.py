"""``evolve``: a FunSearch-style program evolver on the shared search loop.

Candidates are Python source defining one function; the task's evaluator runs them in
the sandbox (``problem.py``). Two proposers share the ``Proposer`` protocol
(``proposers.py``): ``LLMCodeProposer`` shows the best programs with their scores and
asks for an improved one; ``MutationProposer`` (offline) mutates the syntax tree
(constant jitter, operator swaps, new terms), a real random local search.
"""

from optiforge.agents.evolve.agent import build
from optiforge.agents.evolve.baselines import random_restart_baseline, seed_baseline
from optiforge.agents.evolve.config import EvolveConfig
from optiforge.agents.spec import AgentSpec
from optiforge.evals.protocol import CodeTask

SPEC = AgentSpec(
    name="evolve",
    description="Program evolution on the shared loop (LLM rewrites or AST mutations offline)",
    config_model=EvolveConfig,
    build=build,
    default_benchmark="funcfit",
    task_type=CodeTask,
    baselines={"seed": seed_baseline, "random-programs": random_restart_baseline},
    default_budget=40,
    artifact="program",
)

__all__ = ["SPEC", "EvolveConfig", "build"]

"""``hawkeye``: a Triton kernel optimiser on the shared search loop, driven by a strategy taxonomy.

For a KernelArena task it computes roofline facts (``problem.py``), picks strategies
from ``strategies/``, and iterates propose -> materialize (static checks) -> evaluate
(the task's sandboxed harness) -> reflect (lessons to memory) over ``problem.py``'s
``KernelProblem``. Proposers (``proposers.py``): ``LLMKernelProposer`` (prompt = task,
roofline facts, the strategy's example kernel and test, previous attempts with their
failure reasons, lessons from memory) and ``AutotuneProposer`` (offline local search
over the templated kernels' params). Without a GPU the value is the suite's cost-model
speedup over the starting kernel (counted traffic and launches; an estimate, and every
summary says so).
"""

from optiforge.agents.hawkeye.agent import build
from optiforge.agents.hawkeye.baselines import autotune_baseline, reference_baseline
from optiforge.agents.hawkeye.config import HawkeyeConfig
from optiforge.agents.spec import AgentSpec
from optiforge.evals.suites.kernelarena.protocol import KernelTask

SPEC = AgentSpec(
    name="hawkeye",
    description="Triton kernel optimiser: strategy taxonomy + roofline facts, LLM writer or offline autotuner",
    config_model=HawkeyeConfig,
    build=build,
    default_benchmark="kernelarena",
    task_type=KernelTask,
    baselines={"reference": reference_baseline, "autotune": autotune_baseline},
    default_budget=12,
    artifact="triton-kernel",
    offline_equivalent="autotune",
)

__all__ = ["SPEC", "HawkeyeConfig", "build"]

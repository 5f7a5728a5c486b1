"""``autosaddler``: tune an agent's harness from its failure traces (AutoSaddler).

Mini-batches of failed trajectories -> a diagnosis of the root cause (``diagnosis``) ->
one structured patch to one harness part (``proposers``: an LLM, or the rule library
offline) -> a paired validation gate on held-out dev tasks (``gate``) -> memory. Targets
(``targets``): the ``terminal`` agent on the ``saddle`` suite; ``meta`` tunes another
optiforge agent's config the same way. ``metrics.measure`` reports pass@1, pass^k, steps
and cost per harness version. CLI: ``optiforge saddle tune`` / ``optiforge saddle measure``.
"""

from typing import NoReturn

from optiforge.agents.autosaddler.agent import build_tuning, tune
from optiforge.agents.autosaddler.config import SaddlerConfig
from optiforge.agents.autosaddler.metrics import measure
from optiforge.agents.autosaddler.targets import TerminalTarget
from optiforge.agents.spec import AgentSpec
from optiforge.errors import ConfigError


def build(task: object, config: SaddlerConfig, budget: int | None) -> NoReturn:
    """AutoSaddler tunes a harness over a suite, not one task: ``optiforge saddle tune``."""
    raise ConfigError(
        "autosaddler tunes a harness over the saddle suite: run `optiforge saddle tune`"
    )


# A minimal spec: it carries the verbs the agent owns (``optiforge saddle``). Not in the
# registry's BUILTIN_AGENTS, so `optiforge run` never reaches ``build``; the full spec
# (its task family, a build of the tuning run) replaces this one.
SPEC = AgentSpec(name="autosaddler", description="Tune an agent's harness from its failure traces",
                 config_model=SaddlerConfig, build=build, cli="optiforge.agents.autosaddler.cli:app")  # fmt: skip

__all__ = ["SPEC", "SaddlerConfig", "TerminalTarget", "build_tuning", "measure", "tune"]

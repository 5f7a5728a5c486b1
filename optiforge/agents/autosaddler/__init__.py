"""``autosaddler``: tune an agent's harness from its failure traces (AutoSaddler).

Mini-batches of failed trajectories -> a diagnosis of the root cause (``diagnosis``) ->
one structured patch to one harness part (``proposers``: an LLM, or the rule library
offline) -> a paired validation gate on held-out dev tasks (``gate``) -> memory. Targets
(``targets``): the ``terminal`` agent on the ``saddle`` suite; ``meta`` tunes another
optiforge agent's config the same way. ``metrics.measure`` reports pass@1, pass^k, steps
and cost per harness version. CLI: ``optiforge saddle tune`` / ``optiforge saddle measure``.
"""

from optiforge.agents.autosaddler.agent import build_tuning, tune
from optiforge.agents.autosaddler.config import SaddlerConfig
from optiforge.agents.autosaddler.metrics import measure
from optiforge.agents.autosaddler.targets import TerminalTarget

__all__ = ["SaddlerConfig", "TerminalTarget", "build_tuning", "measure", "tune"]

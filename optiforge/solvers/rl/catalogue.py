"""The RL methods the ``rl`` suite and the formulator can name: ``name ->
"module:attribute"`` of an ``RLMethod`` (``api``), imported on first use (listing the names
imports neither a method nor torch nor gymnasium)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from optiforge.solvers.lazy import load_entry

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.solvers.rl.api import RLMethod

# every planned method has its line from the start; a module not written yet fails on
# ``get`` with an ImportError naming it
ENTRIES: dict[str, str] = {
    "ppo-lag": "optiforge.solvers.rl.baselines:PPO_LAG",
    "cpo": "optiforge.solvers.rl.baselines:CPO",
    "pcpo": "optiforge.solvers.rl.baselines:PCPO",
    "locu": "optiforge.solvers.rl.locu:LOCU",
    "ascpo": "optiforge.solvers.rl.ascpo:ASCPO",
    "aetdice": "optiforge.solvers.rl.aetdice:AETDICE",
    "linear-scalarization": "optiforge.solvers.rl.aetdice:LINEAR_SCALARIZATION",
    "markov-dice": "optiforge.solvers.rl.aetdice:MARKOV_DICE",
}


def names() -> list[str]:
    return list(ENTRIES)


def get(name: str) -> RLMethod:
    """The method called ``name``; ``KeyError`` naming the known ones."""
    method = load_entry(ENTRIES, name, "RL method")
    from optiforge.solvers.rl.api import RLMethod

    assert isinstance(method, RLMethod), ENTRIES[name]
    return method

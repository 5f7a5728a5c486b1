"""Which settings a resumed run keeps and which a ``--resume`` command may change.

A resumed run continues the recorded one: its model, seed, budget, agent options and
services are the manifest's, so the resumed search proposes exactly as an uninterrupted
one would. Spending caps are the exception: they bound what the run may still spend
(its ledger before the interrupt is restored, see ``agents.kit.driver``), so a resume may
raise or lower them without changing what the run measures.
"""

from __future__ import annotations

from typing import Any

from optiforge.config import RunSettings

RESUMABLE = ("max_llm_calls", "max_usd", "max_wall_s", "max_sandbox_s")
"""Settings a resume takes from the command rather than from the recorded run."""


def resumed_settings(recorded: dict[str, Any] | None, given: RunSettings) -> RunSettings:
    """The recorded run's settings, with the spending caps ``given`` sets (not None).

    Args:
        recorded: the manifest's ``config.settings`` (None: a run recorded without them,
            which then keeps ``given``).
        given: the settings of the resuming command.
    """
    if recorded is None:
        return given
    kept = RunSettings.model_validate(recorded)
    caps = {k: getattr(given, k) for k in RESUMABLE if getattr(given, k) is not None}
    return kept.model_copy(update=caps) if caps else kept

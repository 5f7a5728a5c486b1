"""What an epb run reports: its ``AgentOutcome`` (with ``EPBExtra``) from the final state,
and the report lines of epb evals (portfolio sizes and what evolution accepted)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict

from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome


class EPBExtra(BaseModel):
    """``AgentOutcome.extra`` of epb and its baselines (keys a run does not set stay out)."""

    model_config = ConfigDict(extra="forbid")

    portfolio: list[str]
    """The programs of the final portfolio."""
    val_divergence: float | None = None
    """The router's cross-entropy against the teacher on the validation states."""
    accepted: list[bool | str] = []
    """Each accepted edit: block I's as ``True``, block II's as ``"boost NAME"`` / ``"prune NAME"``."""
    history: list[dict[str, Any]] = []
    """The last 40 rounds' events (block I and II)."""
    errors: list[str] = []

    def dump(self) -> dict[str, Any]:
        """The extra as summary.json holds it (only the keys the run set)."""
        return self.model_dump(exclude_unset=True)


def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
    """The run's portfolio (programs, router, sharpness) from its final state."""
    bank, fit = state.get("bank"), state.get("fit")
    if not bank or not fit:
        return AgentOutcome(stop_reason="no portfolio", failure="the run made no portfolio")
    history = state.get("history") or []
    accepted = [h for h in history if h.get("accepted")]
    failure = None
    llm_accepted = any(h.get("accepted") and (h.get("block") == "I" or h.get("proposer") == "llm")
                       for h in history)  # fmt: skip
    if ctx.llm is not None and not llm_accepted and state.get("errors"):
        failure = f"no LLM program edit was accepted ({state['errors'][-1]})"
    extra = EPBExtra(
        portfolio=list(bank), val_divergence=state.get("val"),
        accepted=[h.get("accepted") if h.get("block") == "I" else
                  f"{'boost' if 'boost' in h else 'prune'} {h.get('boost') or h.get('prune')}"
                  for h in accepted],
        history=history[-40:], errors=(state.get("errors") or [])[-5:],
    )  # fmt: skip
    return AgentOutcome(
        best_candidate={"programs": bank, "router": fit["router"], "beta": fit["beta"]},
        claimed_value=state.get("val"), n_evaluations=int(state.get("rounds", 0)),
        stop_reason="rounds spent" if state.get("done") else "stopped", failure=failure,
        extra=extra.dump(),
    )  # fmt: skip


def summary_notes(rows: list[dict[str, Any]]) -> list[str]:
    """Per method: programs per portfolio and the kinds of edit accepted."""
    out = []
    by: dict[str, list[EPBExtra]] = {}
    for r in rows:
        extra = r.get("extra") or {}
        if "portfolio" in extra:
            by.setdefault(str(r.get("method")), []).append(EPBExtra.model_validate(extra))
    for method, extras in sorted(by.items()):
        size = sum(len(e.portfolio) for e in extras) / len(extras)
        kinds: Counter[str] = Counter(str(a).split(" ")[0] for e in extras for a in e.accepted)
        out.append(f"{method}: {size:.1f} programs per portfolio; accepted: "
                   + (", ".join(f"{k} x{v}" for k, v in kinds.most_common()) or "none"))  # fmt: skip
    return out

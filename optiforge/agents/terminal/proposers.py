"""The terminal agent's action writer: one turn of the LLM, with the harness's re-asks.

``next_action`` asks the model for its next action; a reply with no usable action is
re-asked within the turn (the error and the format restated) up to ``harness.retries``
times, and never past ``harness.max_llm_calls``. With ``harness.structured_actions`` the
action is asked for with the ``ActionReply`` JSON schema (the LLM's own schema re-asks
count as calls). There is no offline writer: without an
LLM the agent has nothing to act with (``optiforge.agents.terminal.testing`` simulates one).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from optiforge.agents.kit.ask import Invalid, ask_valid
from optiforge.agents.kit.harness import Harness
from optiforge.agents.terminal.problem import FORMAT_HINT, parse_action
from optiforge.errors import BudgetExceeded, LLMError, StructuredOutputError
from optiforge.llm.base import LLM, BaseLLM
from optiforge.llm.types import Completion


class ActionReply(BaseModel):
    """The action schema of ``harness.structured_actions``."""

    command: str = Field(default="", description="one shell command to run, or empty")
    submit: bool = Field(default=False, description="true when the task is done")


def _structured(reply: Completion) -> tuple[dict[str, Any] | None, str]:
    parsed = reply.parsed
    if isinstance(parsed, ActionReply):
        if parsed.command.strip() and "\x00" not in parsed.command:
            return {"command": parsed.command}, ""
        if parsed.submit:
            return {"submit": True}, ""
        return None, "the reply had an empty command and submit false"
    return parse_action(reply.text or "")


def llm_reasks(llm: LLM) -> int:
    """Schema re-asks an LLM makes before it gives up (``StructuredOutputError``; an LLM
    that is no ``BaseLLM`` has no re-ask loop)."""
    return llm.max_reasks if isinstance(llm, BaseLLM) else 0


def next_action(
    llm: LLM, harness: Harness, msgs: list[dict[str, Any]], *, temperature: float, calls: int
) -> dict[str, Any]:
    """``{"action", "text", "why", "reasks", "calls", "tokens", "stop"}``: the action (None
    when every try was unusable), the last reply, the calls and tokens this turn took, and
    ``stop`` (None, ``"llm-call limit"`` or ``"llm error: ..."``) when the episode must end."""
    out: dict[str, Any] = {"action": None, "text": "", "why": "", "reasks": 0, "calls": 0, "tokens": 0,
                           "stop": None}  # fmt: skip
    schema = ActionReply if harness.structured_actions else None

    class Counted:
        """``llm`` within the episode's call limit, counting this turn's calls and tokens;
        a reply the LLM's own schema re-asks never matched is a refused try."""

        def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
            if harness.max_llm_calls is not None and calls + out["calls"] >= harness.max_llm_calls:
                raise _CallLimit
            try:
                reply = llm.complete(messages, temperature=temperature, schema=schema)
            except StructuredOutputError as e:
                out["calls"] += 1 + llm_reasks(llm)
                raise Invalid(f"no reply matched the action schema ({str(e)[-120:]})") from None
            out["calls"] += 1 + reply.reasks
            out["tokens"] += reply.record.tokens
            out["text"] = reply.text or ""
            return reply

    def parse(reply: Completion) -> dict[str, Any]:
        if schema is not None:
            action, why = _structured(reply)
        else:
            action, why = parse_action(out["text"], harness.parse_codeblocks)
        if action is None:
            raise Invalid(why)
        return action

    asked = ask_valid(Counted(), msgs, parse, tries=harness.retries + 1,
                      reask=lambda why: f"No usable action: {why}. {FORMAT_HINT}",
                      stop_on=(_CallLimit, LLMError, BudgetExceeded))  # fmt: skip
    out["action"] = asked.value if asked.valid else None
    out["why"] = "" if asked.valid or not asked.errors else asked.errors[-1]
    out["reasks"] = asked.asks - 1
    if isinstance(asked.stop, _CallLimit):
        out["stop"] = "llm-call limit"
    elif asked.stop is not None:
        out["stop"] = f"llm error: {type(asked.stop).__name__}: {asked.stop}"[:300]
    return out


class _CallLimit(Exception):
    """The episode's ``harness.max_llm_calls`` is spent."""

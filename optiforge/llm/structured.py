"""Structured output: schema instructions, tolerant JSON extraction, re-ask messages, and
``reask_loop``, the one "ask, validate, re-ask with the error" loop.

Shared by every ``LLM`` implementation (LiteLLM, ScriptedLLM, FunctionLLM) so the
parse/re-ask behaviour tested on one is the behaviour of all; the agents reach the loop
through ``optiforge.agents.kit.ask.ask_valid``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_CODE_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)

CODE_STOP = ["\n```\n"]
"""``stop`` for a request whose answer is one fenced code block: generation ends at the
block's closing fence instead of running on into prose (a small model's reply shrank
from up to 512 tokens to the code). The fence itself is not returned:
``extract_code_block`` takes a block that runs to the end of the reply."""


def extract_code_block(text: str | None) -> str:
    """The first fenced (python) code block of a reply (one left open runs to the end of
    the reply: cut at its closing fence, ``CODE_STOP``, or at the length limit), else the
    whole reply."""
    m = _CODE_FENCE.search(text or "")
    return m.group(1) if m else (text or "")


class Invalid(Exception):
    """A reply that did not parse or validate; ``str(self)`` is the reason (fed back to the
    model by the re-ask)."""


class SchemaParseError(Invalid):
    """The reply did not parse into the schema; ``str(self)`` is fed back to the model."""


R = TypeVar("R")
V = TypeVar("V")
Messages = list[dict[str, Any]]


@dataclass
class Asked(Generic[R, V]):
    """What ``reask_loop`` got: the first valid reply's value, or why every reply failed."""

    messages: Messages
    """The conversation as last sent: the request plus each refused reply and its re-ask."""
    value: V | None = None
    """The parsed value of the valid reply (None when no reply was valid)."""
    valid: bool = False
    """A reply parsed and validated."""
    reply: R | None = None
    """The last reply received (valid or not; None when none came)."""
    asks: int = 0
    """Requests made, the one a ``stop_on`` error ended included."""
    errors: list[str] = field(default_factory=list)
    """Why each refused reply was refused, in order."""
    stop: BaseException | None = None
    """The ``stop_on`` error (a provider failure, a spending cap) that ended the loop."""


def reask_loop(
    send: Callable[[Messages, int], R],
    parse: Callable[[R], V],
    messages: Messages,
    *,
    tries: int,
    reask: Callable[[Messages, R, str], Messages],
    on_invalid: Callable[[int, str], None] | None = None,
    stop_on: tuple[type[BaseException], ...] = (),
) -> Asked[R, V]:
    """Ask (``send(messages, k)`` for try ``k``), ``parse`` the reply, and on ``Invalid``
    re-ask with ``reask(messages, reply, reason)``, for at most ``tries`` replies.

    ``send`` may itself raise ``Invalid`` (a reply the LLM layer already refused): that try
    counts as refused and the conversation is sent again unchanged. An error in
    ``stop_on`` ends the loop (``Asked.stop``); any other error propagates. No re-ask is
    built after the last refused reply.
    """
    out: Asked[R, V] = Asked(messages=list(messages))
    for k in range(tries):
        out.asks = k + 1
        try:
            reply = send(out.messages, k)
        except Invalid as e:
            out.errors.append(str(e))
            if on_invalid is not None:
                on_invalid(k, str(e))
            continue
        except stop_on as e:
            out.stop = e
            return out
        out.reply = reply
        try:
            out.value = parse(reply)
        except Invalid as e:
            out.errors.append(str(e))
            if on_invalid is not None:
                on_invalid(k, str(e))
            if k + 1 < tries:
                out.messages = reask(out.messages, reply, str(e))
            continue
        out.valid = True
        return out
    return out


def schema_instruction(schema: type[BaseModel]) -> str:
    """Prompt text asking for one JSON object that validates against ``schema``."""
    js = json.dumps(schema.model_json_schema(), sort_keys=True)
    return (
        "Reply with a single JSON object only (no prose, no code fences) that validates "
        f"against this JSON schema:\n{js}"
    )


def with_schema_instruction(
    messages: list[dict[str, Any]], schema: type[BaseModel]
) -> list[dict[str, Any]]:
    """Copy of ``messages`` with the schema instruction in the (first) system message."""
    text = schema_instruction(schema)
    out = [dict(m) for m in messages]
    for m in out:
        if m.get("role") == "system" and isinstance(m.get("content"), str):
            m["content"] = f"{m['content']}\n\n{text}"
            return out
    return [{"role": "system", "content": text}, *out]


def extract_json(text: str) -> Any:
    """Decode the JSON value in ``text``, tolerating ```json fences and surrounding prose."""
    candidates: list[str] = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        candidates.append(text[first : last + 1])
    err: json.JSONDecodeError | None = None
    for c in candidates:
        try:
            return json.loads(c)
        except json.JSONDecodeError as e:
            err = err or e
    raise SchemaParseError(f"reply is not valid JSON ({err}): {text[:200]!r}")


def parse_structured(text: str | None, schema: type[BaseModel]) -> BaseModel:
    """Parse ``text`` into ``schema`` or raise SchemaParseError with a model-readable reason."""
    if not text or not text.strip():
        raise SchemaParseError("reply was empty; a JSON object was required")
    obj = extract_json(text)
    try:
        return schema.model_validate(obj)
    except ValidationError as e:
        # Compact error list: location + message per problem, which models act on well.
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in e.errors()
        )
        raise SchemaParseError(
            f"JSON did not validate against {schema.__name__}: {problems}"
        ) from e


def reask_message(error: str) -> dict[str, Any]:
    """User message that tells the model why its reply was rejected."""
    return {
        "role": "user",
        "content": (
            f"Your previous reply could not be used: {error}\n"
            "Answer again with only a JSON object that matches the schema."
        ),
    }

"""Asking the LLM: ``ask_valid`` (one request, validated, re-asked with the error) and
``complete_all`` (a proposer's independent requests of one round, made concurrently).

``ask_valid`` is the kit's face of the one "ask, validate, re-ask with the error" loop
(``optiforge.llm.structured.reask_loop``, which the LLM layer's own schema re-asks use):
an agent hands it a ``parse`` that returns the reply's value or raises ``Invalid(reason)``,
and a ``reask`` that turns the reason into the next user message.

``complete_all``:

A round's proposals (evolve's "variant j of n", hawkeye's strategy rotation) are separate
requests whose prompts do not depend on each other's replies, so they can be in flight
together: with a provider taking seconds per reply, a round of four costs one reply's
time instead of four. Replies are matched to requests by position, so a model whose reply
is a function of the prompt (a cassette, a cache, a deterministic model) gives the same
proposals as asking one after another. An LLM whose replies follow call order
(``ordered_replies``, e.g. ``ScriptedLLM``) is asked one after another.

A spending cap: the batch is cut to ``Budget.calls_left()`` before any call, so which
requests run is deterministic under ``--max-llm-calls``; a request refused by another cap
(USD, wall) is dropped, and the replies already paid for are kept.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.tools import complete_with_tools
from optiforge.errors import BudgetExceeded, LLMError
from optiforge.llm.grammars import python_function_block
from optiforge.llm.structured import CODE_STOP, Asked, Invalid, extract_code_block, reask_loop
from optiforge.llm.types import Completion

__all__ = ["STOP", "Asked", "Invalid", "ask_valid", "code_rewrites", "complete_all"]

MAX_CONCURRENT = 8

STOP: tuple[type[BaseException], ...] = (LLMError, BudgetExceeded)
"""What ends an ``ask_valid`` loop without raising by default: a provider failure (after
its retries) or a spending cap."""

V = TypeVar("V")


class Completes(Protocol):
    """Anything with the ``LLM.complete`` call (an ``LLM``, or an agent's wrapper of one)."""

    def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion: ...


def ask_valid(
    llm: Completes,
    messages: list[dict[str, Any]],
    parse: Callable[[Completion], V],
    *,
    tries: int,
    reask: Callable[[str], str],
    params: Mapping[str, Any] | Callable[[int], Mapping[str, Any]] | None = None,
    on_invalid: Callable[[int, str], None] | None = None,
    stop_on: tuple[type[BaseException], ...] = STOP,
) -> Asked[Completion, V]:
    """Ask ``llm`` with ``messages`` until ``parse`` accepts a reply, at most ``tries`` times.

    Args:
        parse: the reply's value, or ``Invalid(reason)`` for a reply that cannot be used.
        reask: the user message after a refused reply, from its reason (the reply itself
            goes back first as the assistant's turn).
        params: ``complete``'s keyword arguments, or a function of the try (0, 1, ...).
        on_invalid: called with the try and the reason of each refused reply (an event).
        stop_on: errors that end the loop (``Asked.stop``) instead of propagating; ``llm``
            may raise ``Invalid`` itself for a reply it already refused (counted, and the
            conversation sent again unchanged).

    Returns the ``Asked``: ``value``/``valid``, the last ``reply``, ``asks`` (requests
    made), ``errors`` (each refused reply's reason), ``messages``, ``stop``.
    """

    def send(msgs: list[dict[str, Any]], k: int) -> Completion:
        kw = params(k) if callable(params) else (params or {})
        return llm.complete(msgs, **kw)

    def again(msgs: list[dict[str, Any]], reply: Completion, reason: str) -> list[dict[str, Any]]:
        return [*msgs, {"role": "assistant", "content": reply.text or ""},
                {"role": "user", "content": reask(reason)}]  # fmt: skip

    return reask_loop(
        send, parse, messages, tries=tries, reask=again, on_invalid=on_invalid, stop_on=stop_on
    )


def complete_all(
    ctx: RunContext,
    requests: list[list[dict[str, Any]]],
    *,
    tools: Any | None = None,
    max_tool_steps: int = 4,
    **params: Any,
) -> list[Any]:
    """The completion of each request, in order; a request a spending cap refused is left
    out (``BudgetExceeded`` when none could be made).

    ``tools``: a ``ToolRegistry`` (``kit.tools.build_registry``); each request is then a
    tool loop of at most ``max_tool_steps`` turns and its result a ``kit.tools.ToolReply``.

    Raises:
        BudgetExceeded: a cap refused the first request.
        LLMError: a provider failure (after its retries) on any request.
    """
    llm = ctx.llm
    if llm is None:
        raise ValueError("complete_all needs ctx.llm")
    budget = getattr(llm, "budget", None)
    left = budget.calls_left() if budget is not None and hasattr(budget, "calls_left") else None
    todo = requests if left is None else requests[: max(left, 1)]
    ask: Any = llm.complete
    if tools is not None:

        def ask(messages: list[dict[str, Any]], **kw: Any) -> Any:
            return complete_with_tools(ctx, messages, tools, max_tool_steps, **kw)

    if getattr(llm, "ordered_replies", False) or len(todo) <= 1:
        return _one_by_one(ask, todo, params)
    with cf.ThreadPoolExecutor(min(len(todo), MAX_CONCURRENT), thread_name_prefix="llm") as ex:
        futures = [ex.submit(ask, messages, **params) for messages in todo]
        out: list[Any] = []
        refused: BudgetExceeded | None = None
        for fut in futures:
            try:
                out.append(fut.result())
            except BudgetExceeded as err:  # a cap refused this one; the paid ones are kept
                refused = refused or err
        if not out and refused is not None:
            raise refused
        return out


def _one_by_one(
    ask: Any, requests: list[list[dict[str, Any]]], params: dict[str, Any]
) -> list[Any]:
    out: list[Any] = []
    for messages in requests:
        try:
            out.append(ask(messages, **params))
        except BudgetExceeded:
            if not out:
                raise
            break  # replies already paid for are evaluated, not thrown away
    return out


def code_rewrites(ctx: Any, prompt: str, n: int, defines: str) -> tuple[list[str], list[str]]:
    """``n`` code replies to one prompt (the first at temperature 0.2, the others 0.7): the
    code of each reply that defines ``defines`` (e.g. ``score(variant, ctx)``), and why the
    others were refused. Stops at the first provider error or spending cap."""
    name = defines.split("(")[0]
    codes: list[str] = []
    errors: list[str] = []
    for k in range(n):
        try:
            reply = ctx.llm.complete([{"role": "user", "content": prompt}], stop=CODE_STOP,
                                     temperature=0.7 if k else 0.2,
                                     grammar=python_function_block(name))  # fmt: skip
        except (LLMError, BudgetExceeded) as e:
            errors.append(f"{type(e).__name__}: {e}"[:200])
            break
        code = extract_code_block(reply.text)
        if f"def {name}(" not in code:
            errors.append(f"the reply defines no {defines}")
            continue
        codes.append(code.strip() + "\n")
    return codes, errors

"""SMITH's two policies, with an LLM and offline.

- **build**: from solved examples, write a tool ``{"name", "description", "parameters",
  "code"}``. LLM: the examples, the rules of the tool format, and on a retry the last
  validation's verdict (which axis failed, the first failing instance). Offline: the
  template library (``templates.match``).
- **use**: for a question, a function call ``{"name", "arguments"}`` against the pool. LLM:
  function calling with the pool as the tools (a model that cannot call functions, such as
  the embedded ``--model local``, is shown the tools and asked for the call as JSON).
  Offline: the pool tool whose name and description share most words with the question
  and whose schema the question's literals fill (``templates.fill``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from optiforge.agents.kit import RunContext
from optiforge.agents.smith.problem import CallReply, ToolReply, parse_tool
from optiforge.agents.smith.templates import fill, match
from optiforge.memory.provenance import quote_untrusted

_WORD = re.compile(r"[a-z]+")
_STOP = {"the", "a", "an", "of", "is", "what", "how", "and", "to", "in", "as", "by", "with", "are", "be",
         "it", "its", "from", "for", "each", "if", "at", "or", "on", "one", "many", "written"}  # fmt: skip

FORMAT = (
    'Reply with the tool as one ```json block holding {"name": a snake_case function name, '
    '"description": one line, "parameters": a JSON Schema {"type": "object", "properties": '
    '{...}, "required": [...]}} and one ```python block defining the function. Rules: the '
    "function's parameters are the values the question states, in the order they appear, named "
    "and ordered exactly as the schema's properties; it returns the answer with exactly the JSON "
    'type of the examples\' answers (an int stays an int: not "6", not 6.0); standard library '
    "only; no input, files or network; fast (under half a second)."
)


RULES = (
    "The function's parameters are the values the question states, in the order they appear, "
    "named and ordered exactly as the schema's properties; it returns the answer with exactly "
    'the JSON type of the examples\' answers (an int stays an int: not "6", not 6.0); standard '
    "library only; no input, files or network; fast (under half a second)."
)


def build_prompt(
    examples: list[dict[str, Any]], feedback: str | None = None, structured: bool = False
) -> str:
    """The build prompt: the examples, then the reply format (``structured``: the fields of
    ``ToolReply``, the schema itself being sent with the request) and the rules."""
    shown = "\n".join(f"Q: {e['question']}\nA: {json.dumps(e['answer'])}" for e in examples)
    how = (f"Give the tool as name, description, params (each parameter's name and JSON type) and code. {RULES}"
           if structured else FORMAT)  # fmt: skip
    out = f"Write a Python tool that answers questions like these solved examples:\n\n{shown}\n\n{how}"
    if feedback:
        out += f"\n\nYour previous tool failed validation: {feedback}\nFix it."
    return out


def feedback_text(check: dict[str, Any]) -> str:
    """A validation verdict as text for the next attempt."""
    parts = [
        f"schema {check['schema']:.0f}/1, code {check['code']:.2f}, outcome {check['outcome']:.2f}"
    ]
    if check.get("schema_error"):
        parts.append(f"schema problem: {check['schema_error']}")
    if check.get("limits"):
        parts.append(check["limits"])
    bad = check.get("first_failure")
    if bad:
        # what the tool returned or raised is its own output: quoted, data not instructions
        got = (
            "an error: " + str(bad.get("error")) if bad.get("error") else json.dumps(bad.get("got"))
        )
        parts.append(
            f"on {bad['question']!r} the answer is {json.dumps(bad['expected'])}, the tool gave "
            f"(quoted below)\n{quote_untrusted(got, limit=600)}\n"
        )
    return "; ".join(parts)


def llm_build(
    ctx: RunContext, examples: list[dict[str, Any]], feedback: str | None
) -> tuple[dict[str, Any] | None, str]:
    from optiforge.errors import BudgetExceeded, LLMError

    assert ctx.llm is not None
    try:
        reply = ctx.llm.complete([{"role": "user", "content": build_prompt(examples, feedback, structured=True)}],
                                 schema=ToolReply, temperature=0.2)  # fmt: skip
    except (LLMError, BudgetExceeded) as e:
        return None, f"{type(e).__name__}: {e}"[:300]
    if isinstance(reply.parsed, ToolReply):
        return reply.parsed.tool(), ""
    return parse_tool(reply.text)


def offline_build(examples: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str]:
    t = match(examples)
    if t is None:
        return None, "no template matches the examples' signature"
    return t.tool(), ""


def _words(text: str) -> set[str]:
    return {
        w for w in _WORD.findall(text.lower().replace("_", " ")) if w not in _STOP and len(w) > 2
    }


def offline_call(question: str, pool: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The best-matching pool tool's call (see the module doc); None when none fills."""
    qw = _words(question)
    best: tuple[int, dict[str, Any]] | None = None
    for tool in pool:
        params = tool.get("parameters")
        if not isinstance(params, dict):
            continue
        args = fill(params, question)
        if args is None:
            continue
        overlap = len(qw & _words(f"{tool['name']} {tool.get('description', '')}"))
        if overlap and (best is None or overlap > best[0]):
            best = (overlap, {"name": tool["name"], "arguments": args})
    return best[1] if best else None


def tool_specs(pool: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                              "parameters": t["parameters"]}} for t in pool]  # fmt: skip


def call_prompt(question: str, pool: list[dict[str, Any]] | None = None) -> str:
    """The use prompt; with ``pool`` (a model without function calling) the tools are listed
    as JSON and the call is asked for as one JSON object."""
    ask = ("Answer the question by calling exactly one of the tools, with the values the question "
           f"states as its arguments.\n\nQuestion: {question}")  # fmt: skip
    if pool is None:
        return ask
    listing = "\n".join(json.dumps(s["function"]) for s in tool_specs(pool))
    return f'{ask}\n\nTools:\n{listing}\n\nReply with one JSON object {{"name": tool name, "arguments": {{...}}}} and nothing else.'


def llm_call(
    ctx: RunContext, question: str, pool: list[dict[str, Any]], attempt: int
) -> tuple[dict[str, Any] | None, str]:
    """One function call for ``question`` (see the module doc): ``(call, error)``."""
    from optiforge.agents.kit.tools import supports_tools
    from optiforge.errors import BudgetExceeded, LLMError

    assert ctx.llm is not None
    ask = call_prompt(question)
    temperature = 0.0 if attempt == 0 else 0.7
    try:
        if supports_tools(ctx.llm) and pool:
            reply = ctx.llm.complete([{"role": "user", "content": ask}], tools=tool_specs(pool),
                                     temperature=temperature)  # fmt: skip
            if reply.tool_calls:
                c = reply.tool_calls[0]
                valid = bool(c.arguments) or c.raw_arguments.strip() in ("", "{}")
                return {"name": c.name, "arguments": c.arguments if valid else c.raw_arguments}, ""
            text = reply.text
        else:
            reply = ctx.llm.complete([{"role": "user", "content": call_prompt(question, pool)}],
                                     schema=CallReply, temperature=temperature)  # fmt: skip
            if isinstance(reply.parsed, CallReply):
                return reply.parsed.model_dump(), ""
            text = reply.text
    except (LLMError, BudgetExceeded) as e:
        return None, f"{type(e).__name__}: {e}"[:300]
    start, end = text.find("{"), text.rfind("}")
    obj = _loads(text[start : end + 1]) if start >= 0 and end > start else None
    if isinstance(obj, dict) and isinstance(obj.get("name"), str):
        return {"name": obj["name"], "arguments": obj.get("arguments")}, ""
    return None, "the reply holds no function call"


def llm_answer(ctx: RunContext, question: str) -> tuple[Any, str]:
    """The no-tools baseline: the model answers directly, as a JSON value."""
    from optiforge.errors import BudgetExceeded, LLMError

    assert ctx.llm is not None
    try:
        reply = ctx.llm.complete([{"role": "user", "content": f"{question}\nReply with the answer as a JSON value "
                                   "only (a number, a quoted string, true/false or a list)."}], temperature=0.0)  # fmt: skip
    except (LLMError, BudgetExceeded) as e:
        return None, f"{type(e).__name__}: {e}"[:300]
    text = reply.text.strip().strip("`").strip()
    value = _loads(text)
    return (value, "") if value is not None else (None, "the reply is not a JSON value")


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None

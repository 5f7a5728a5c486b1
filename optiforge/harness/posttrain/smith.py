"""SMITH rows on the procedural suite's dev families: the template tools as build replies
and the offline matcher's correct calls as use replies, each validated by the suite.

Formats (what ``--model local`` sends: no function calling, a schema held as a grammar):

- ``build-json``: ``llm_build``'s request (the schema instruction of ``ToolReply`` as the
  system message, ``build_prompt(structured=True)``); the reply is a ``ToolReply`` object.
- ``call-json``: ``llm_call``'s request for a model without function calling (the
  ``CallReply`` schema instruction, ``call_prompt(question, pool)``); the reply is
  ``{"name", "arguments"}``.
- ``build-blocks``: the GRPO hook's build row (``grpo.rollout_dataset``: the user message
  only, ``FORMAT``); the reply is a ```json block and a ```python block.

Episodes are the dev task ``train-families`` at other seeds (``with_seed``, as the GRPO
hook does); the pool a use prompt lists is a subset of the episode's validated template
tools (the right one and ``POOL_OTHERS`` others: an agent that built some of them).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

from optiforge.agents.kit import RunContext
from optiforge.agents.smith.problem import (
    CallReply,
    Param,
    ToolReply,
    parse_tool,
    renamed,
    unique_name,
)
from optiforge.agents.smith.proposers import (
    build_prompt,
    llm_build,
    llm_call,
    offline_build,
    offline_call,
)
from optiforge.agents.smith.templates import TEMPLATES
from optiforge.harness.posttrain.capture import CaptureLLM, prompt_messages
from optiforge.harness.posttrain.data import Row, Verdict, make_row
from optiforge.llm.structured import SchemaParseError, parse_structured

AGENT, SUITE, DEV_TASK = "smith", "procedural", "train-families"
EPISODES = 6
"""Episodes (seeds) per ``scale``."""
USE_PER_EPISODE = 12
"""Use questions kept per episode (of 36): build rows are the scarcer kind."""
POOL_OTHERS = 2
"""Tools besides the right one in a use prompt's pool."""


def _sandbox() -> Any:
    from optiforge.sandboxes import get_sandbox

    return get_sandbox("local")


def _base_task(name: str) -> Any:
    from optiforge.evals.registry import get_benchmark

    for split in ("dev", "heldout"):
        for t in get_benchmark(SUITE).tasks(split):
            if t.name == name:
                return t
    from optiforge.errors import ConfigError

    raise ConfigError(f"no procedural task {name!r}")


def episode(task: str) -> Any:
    """``procedural/NAME#SEED`` (or ``procedural/NAME``: seed 0) as a task."""
    _, _, rest = task.partition("/")
    name, _, seed = rest.partition("#")
    t = _base_task(name)
    return t.with_seed(int(seed)) if seed else t


def tool_reply(tool: dict[str, Any]) -> ToolReply:
    """A tool ``{"name", "description", "parameters", "code"}`` as the structured reply."""
    params = []
    for pname, schema in tool["parameters"]["properties"].items():
        items = (schema.get("items") or {}).get("type") if schema.get("type") == "array" else None
        params.append(Param(name=pname, type=schema["type"], items=items))
    return ToolReply(
        name=tool["name"], description=tool["description"], params=params, code=tool["code"]
    )


def blocks_reply(tool: dict[str, Any]) -> str:
    """A tool as the GRPO build reply: a ```json spec block then a ```python block."""
    spec = {
        "name": tool["name"],
        "description": tool["description"],
        "parameters": tool["parameters"],
    }
    return f"```json\n{json.dumps(spec)}\n```\n```python\n{tool['code'].rstrip()}\n```"


def build_messages(examples: list[dict[str, Any]], reply: ToolReply) -> list[dict[str, str]]:
    """``llm_build``'s request for ``examples`` (first attempt), as the local model gets it."""
    llm = CaptureLLM(lambda _m, _s: reply)
    llm_build(RunContext(llm=llm, agent=AGENT), examples, None)
    return prompt_messages(llm.requests[0])


def call_messages(
    question: str, pool: list[dict[str, Any]], reply: dict[str, Any]
) -> list[dict[str, str]]:
    """``llm_call``'s request (first attempt) for ``question`` against ``pool``."""
    llm = CaptureLLM(lambda _m, _s: CallReply(**reply))
    llm_call(RunContext(llm=llm, agent=AGENT), question, pool, 0)
    return prompt_messages(llm.requests[0])


def episode_pool(t: Any, sandbox: Any) -> list[dict[str, Any]]:
    """The offline agent's pool after its build step: each build task's template tool that
    passed validation (renamed on a clash, as the agent does)."""
    pool: list[dict[str, Any]] = []
    for b in t.build_tasks:
        tool, _ = offline_build(b["examples"])
        if tool is None or not t.validate(b["id"], tool, sandbox)["passed"]:
            continue
        tool = renamed(tool, unique_name(str(tool["name"]), {str(x["name"]) for x in pool}))
        pool.append({"build": b["id"], **tool})
    return pool


def _parse_build(reply: str) -> tuple[dict[str, Any] | None, str]:
    try:
        parsed = parse_structured(reply, ToolReply)
        assert isinstance(parsed, ToolReply)
        return parsed.tool(), ""
    except SchemaParseError:
        return parse_tool(reply)  # llm_build's fallback when the structured parse fails


def _which_build(t: Any, text: str) -> str | None:
    for b in t.build_tasks:
        if all(e["question"] in text for e in b["examples"]):
            return str(b["id"])
    return None


def _which_question(t: Any, text: str) -> str | None:
    for q in t.use_questions:
        if f"Question: {q['question']}\n" in text:
            return str(q["id"])
    return None


def _pool_from_prompt(text: str) -> list[dict[str, Any]]:
    """The pool a use prompt lists, each tool's code from the template of that name."""
    by_name = {tp.name: tp.tool() for tp in TEMPLATES}
    pool = []
    for line in text.split("Tools:\n", 1)[-1].splitlines():
        try:
            spec = json.loads(line)
        except json.JSONDecodeError:
            continue
        base = (
            str(spec.get("name", "")).rsplit("_", 1)[0]
            if spec.get("name") not in by_name
            else spec.get("name")
        )
        if base in by_name:
            pool.append(
                {**renamed(by_name[base], str(spec["name"])), "parameters": spec["parameters"]}
            )
    return pool


def verify(
    task: str, messages: list[dict[str, Any]], reply: str, sandbox: Any | None = None
) -> Verdict:
    """A build reply: parsed as ``llm_build`` does, then the suite's ``validate`` on the
    build task the prompt's examples come from (valid: all three axes; score: outcome).
    A use reply: parsed as ``llm_call`` does, then ``score_calls`` on the question the
    prompt asks, against the pool it lists (valid: the right answer)."""
    sandbox = sandbox or _sandbox()
    t = episode(task)
    text = messages[-1]["content"] if messages else ""
    if text.startswith("Answer the question by calling"):
        qid = _which_question(t, text)
        if qid is None:
            return Verdict(valid=False, detail="the prompt asks no question of this episode")
        call: dict[str, Any] | None = None
        try:
            parsed = parse_structured(reply, CallReply)
            call = parsed.model_dump()
        except SchemaParseError:
            from optiforge.agents.smith.grpo import parse_call

            call = parse_call(reply)
        if call is None:
            return Verdict(valid=False, detail="the reply holds no function call")
        r = t.score_calls({qid: call}, _pool_from_prompt(text), sandbox)[qid]
        ok = r["schema"] == 1.0 and r["code"] == 1.0 and r["outcome"] == 1.0
        return Verdict(valid=ok, score=r["outcome"], detail=f"schema {r['schema']:.0f}, code {r['code']:.0f}, "
                       f"outcome {r['outcome']:.0f}")  # fmt: skip
    bid = _which_build(t, text)
    if bid is None:
        return Verdict(valid=False, detail="the prompt shows no build task of this episode")
    tool, why = _parse_build(reply)
    if tool is None:
        return Verdict(valid=False, detail=why)
    chk = t.validate(bid, tool, sandbox)
    return Verdict(valid=bool(chk["passed"]), score=float(chk["outcome"]),
                   detail=f"schema {chk['schema']:.0f}, code {chk['code']:.2f}, outcome {chk['outcome']:.2f}"
                   + (f"; {chk.get('schema_error') or chk.get('limits') or ''}" if not chk["passed"] else ""))  # fmt: skip


def rows(
    scale: int = 1, progress: Callable[[str], None] | None = None, limit: int | None = None
) -> Iterator[Row]:
    """Build and use rows of ``EPISODES * scale`` episodes of the dev task (``limit``:
    that many episodes, tests)."""
    sandbox = _sandbox()
    base = _base_task(DEV_TASK)
    if base.split != "dev":  # the held-out families must stay out of training
        raise AssertionError(f"{DEV_TASK} is not a dev task")
    for e in range(EPISODES * scale if limit is None else limit):
        t = base.with_seed(e)
        ref = f"{SUITE}/{t.name}"
        made = 0
        pool = episode_pool(t, sandbox)
        built = {p["build"]: p for p in pool}
        for b in t.build_tasks:
            tool = built.get(b["id"])
            if tool is None:
                continue
            spec = {k: tool[k] for k in ("name", "description", "parameters", "code")}
            tr = tool_reply(spec)
            reply = json.dumps(tr.model_dump(exclude_none=True))
            msgs = build_messages(b["examples"], tr)
            v = verify(ref, msgs, reply, sandbox)
            if v.valid:
                made += 1
                yield make_row(
                    AGENT, "build-json", ref, msgs, reply, "smith.templates", v, "three axes"
                )
            gmsgs = [{"role": "user", "content": build_prompt(b["examples"])}]
            greply = blocks_reply(spec)
            v = verify(ref, gmsgs, greply, sandbox)
            if v.valid:
                made += 1
                yield make_row(
                    AGENT, "build-blocks", ref, gmsgs, greply, "smith.templates", v, "three axes"
                )
        specs = [{k: p[k] for k in ("name", "description", "parameters", "code")} for p in pool]
        rng = random.Random(f"smith-use-{e}")
        kept = 0
        for q in t.use_questions:
            if kept >= USE_PER_EPISODE:
                break
            full = offline_call(q["question"], specs)
            if full is None:
                continue
            # the pool of an agent that built some of the tools: the one this question needs
            # and POOL_OTHERS others, in build order (all nine list past the length budget)
            others = [s for s in specs if s["name"] != full["name"]]
            keep = {
                full["name"],
                *(s["name"] for s in rng.sample(others, min(POOL_OTHERS, len(others)))),
            }
            sub = [s for s in specs if s["name"] in keep]
            call = offline_call(q["question"], sub)
            if call is None:
                continue
            msgs = call_messages(q["question"], sub, call)
            reply = json.dumps(call)
            v = verify(ref, msgs, reply, sandbox)
            if v.valid:
                kept += 1
                made += 1
                yield make_row(
                    AGENT, "call-json", ref, msgs, reply, "smith.offline-call", v, "accuracy"
                )
        if progress:
            progress(f"{AGENT}: {ref}: {made} rows (pool {len(pool)}/{len(t.build_tasks)})")


def heldout_texts() -> list[dict[str, Any]]:
    """The held-out tasks: their build prompts (both forms) and use prompts, with the
    examples' and questions' answers as the answers, the questions as distinctive content."""
    from optiforge.evals.registry import get_benchmark

    dummy = ToolReply(name="x", description="x", params=[], code="def x():\n    return 0\n")
    out = []
    for t in get_benchmark(SUITE).tasks("heldout"):
        prompts = []
        answers: list[str] = []
        distinctive: list[str] = []
        for b in t.build_tasks:
            prompts.append(build_messages(b["examples"], dummy))
            prompts.append([{"role": "user", "content": build_prompt(b["examples"])}])
            answers += [json.dumps(e["answer"]) for e in b["examples"]]
            distinctive += [e["question"] for e in b["examples"]]
        pool = [tp.tool() for tp in TEMPLATES]
        for q in t.use_questions:
            prompts.append(call_messages(q["question"], pool, {"name": "x", "arguments": {}}))
            distinctive.append(q["question"])
        answers += [json.dumps(q["answer"]) for q in t._use]
        out.append({"task": f"{SUITE}/{t.name}", "prompts": prompts, "answers": answers,
                    "distinctive": distinctive})  # fmt: skip
    return out

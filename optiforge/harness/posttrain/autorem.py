"""AutoREM rows on AutoRO's dev instances: the reference modeller's models and the
reference reformulator's counterpart programs, each verified by the suite.

Formats (the prompts of ``--model local``, no memory, no tools: the embedded model calls none):

- ``code``: the JSON input form (``first_prompt``: the instance's short description and
  its problem JSON; the held-out eval's ``autorem`` row); the reply is the counterpart
  program in one ```python block.
- ``text-model-json``: the text input form's modelling step (``model_messages`` with the
  ``ModelReply`` schema instruction): the statement and its model sheet in words; the
  reply is the ``ROProblem`` JSON the reference modeller reads from the sheet.
- ``text-code``: the text form's writing step (``first_prompt(model=...)``: the
  statement, the agent's model as JSON, the I/O protocol); the reply is the program.

The text form (a prose statement and its model sheet in words, no JSON: the held-out
eval's ``autorem-prose`` row) exists in the suite only for the application splits, none
of them dev; here each dev instance is also posed text-only, its description followed by
its model sheet (``text.problem_text``), as the application tasks are.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from optiforge.agents.autorem.modeller import (
    MODEL_SYSTEM_PROMPT,
    ModelReply,
    model_messages,
    reference_modeller,
)
from optiforge.agents.autorem.proposers import (
    MODEL_MARKER,
    counterpart_program,
    extract_code,
    first_prompt,
)
from optiforge.harness.posttrain.capture import CaptureLLM, prompt_messages
from optiforge.harness.posttrain.data import Row, Verdict, make_row
from optiforge.llm.structured import SchemaParseError, parse_structured

AGENT, SUITE = "autorem", "autoro"
TEXT_SUFFIX = "#text"
"""Task-name suffix of a dev instance posed text-only (its text form)."""


def _sandbox() -> Any:
    from optiforge.sandboxes import get_sandbox

    return get_sandbox("local")


def text_task(task: Any) -> Any:
    """A JSON-form task posed text-only: its prose then its model sheet, the JSON hidden."""
    from optiforge.evals.suites.autoro.benchmark import AutoROTask
    from optiforge.evals.suites.autoro.text import problem_text

    inst = task.instance.model_copy(
        update={
            "description": f"{task.instance.description}\n\n{problem_text(task.instance.problem)}"
        }
    )
    return AutoROTask(inst, text_only=True)


def find_task(task: str) -> Any:
    """``autoro/NAME`` (any split) or ``autoro/NAME#text`` (its text form)."""
    from optiforge.evals.registry import resolve_task

    name, text, _ = task.partition(TEXT_SUFFIX)
    t = resolve_task(name)
    return text_task(t) if text else t


def model_request(statement: str) -> list[dict[str, str]]:
    """The modelling step's request as the local model gets it (schema instruction added)."""
    from optiforge.llm.structured import with_schema_instruction

    return prompt_messages(with_schema_instruction(model_messages(statement), ModelReply))


def code_request(task: Any, model: Any | None = None) -> list[dict[str, str]]:
    """The first writing attempt's request (no lessons)."""
    return prompt_messages(first_prompt(task, [], model=model))


def _check_model_request(statement: str) -> list[dict[str, str]]:
    """``model_request`` through the agent's own call (``model_with_llm``), for the test
    that pins the two equal."""
    from optiforge.agents.autorem.modeller import model_with_llm

    llm = CaptureLLM(lambda _m, _s: reference_modeller(statement).model_dump_json())
    model_with_llm(llm, model_messages(statement))
    return prompt_messages(llm.requests[0])


def code_reply(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def verify(
    task: str, messages: list[dict[str, Any]], reply: str, sandbox: Any | None = None
) -> Verdict:
    """By the prompt's form: a modelling reply parses into ``ModelReply`` (the agent's
    structured parse) and the reference program run on that model is verified correct with
    ``model_match`` (the model equals the hidden ground truth); a program (extracted as the
    agent does) is run by the suite's ``evaluate``, as a formulation with the model the
    prompt shows on a text-only task."""
    sandbox = sandbox or _sandbox()
    t = find_task(task)
    system = messages[0]["content"] if messages else ""
    user = messages[-1]["content"] if messages else ""
    if system.startswith(MODEL_SYSTEM_PROMPT):
        try:
            parsed = parse_structured(reply, ModelReply)
        except SchemaParseError as e:
            return Verdict(valid=False, detail=str(e)[:300])
        from optiforge.solvers.robust.model import ROProblem

        model = ROProblem.model_validate(parsed.model_dump())
        s = t.evaluate({"model": model, "code": counterpart_program(model)}, sandbox)
        match = s.metrics.get("model_match", 0.0)
        ok = bool(s.passed) and match == 1.0
        return Verdict(valid=ok, score=float(match), detail=f"model_match {match:.0f}, reference program "
                       f"{'correct' if s.passed else 'wrong'}")  # fmt: skip
    code = extract_code(reply)
    if MODEL_MARKER in user:
        from optiforge.solvers.robust.model import parse_problem

        shown = user.split(MODEL_MARKER, 1)[1].strip().split("\n\n", 1)[0]
        try:
            cand: Any = {"model": parse_problem(json.loads(shown)), "code": code}
        except Exception as e:  # noqa: BLE001 - a prompt without a readable model is no task state
            return Verdict(valid=False, detail=f"the prompt's model does not parse: {e}"[:300])
    else:
        cand = code
    s = t.evaluate(cand, sandbox)
    reasons = "; ".join(s.details.get("reasons", [])[:2]) if not s.passed else "correct"
    return Verdict(valid=bool(s.passed), score=float(s.value), detail=reasons[:300])


def rows(
    scale: int = 1, progress: Callable[[str], None] | None = None, limit: int | None = None
) -> Iterator[Row]:
    """The three formats on every dev instance (``scale`` has no effect: the set is fixed;
    ``limit``: the first instances only, tests)."""
    from optiforge.evals.registry import get_benchmark

    sandbox = _sandbox()
    made = 0
    for t in get_benchmark(SUITE).tasks("dev")[:limit]:
        ref = f"{SUITE}/{t.name}"
        program = code_reply(counterpart_program(t.instance.problem))
        msgs = code_request(t)
        v = verify(ref, msgs, program, sandbox)
        if v.valid:
            made += 1
            yield make_row(
                AGENT, "code", ref, msgs, program, "autorem.reference-reformulator", v, t.metric
            )
        st = text_task(t)
        sref = ref + TEXT_SUFFIX
        try:
            model = reference_modeller(st.statement)
        except Exception as e:  # noqa: BLE001 - a sheet the modeller cannot read gives no row
            if progress:
                progress(f"{AGENT}: {sref}: reference modeller failed: {e}"[:200])
            continue
        mmsgs = model_request(st.statement)
        mreply = json.dumps(model.model_dump(mode="json", exclude_none=True))
        v = verify(sref, mmsgs, mreply, sandbox)
        if v.valid:
            made += 1
            yield make_row(
                AGENT,
                "text-model-json",
                sref,
                mmsgs,
                mreply,
                "autorem.reference-modeller",
                v,
                "model_match",
            )
        cmsgs = code_request(st, model)
        cprog = code_reply(counterpart_program(model))
        v = verify(sref, cmsgs, cprog, sandbox)
        if v.valid:
            made += 1
            yield make_row(
                AGENT,
                "text-code",
                sref,
                cmsgs,
                cprog,
                "autorem.reference-reformulator",
                v,
                t.metric,
            )
    if progress:
        progress(f"{AGENT}: {made} rows")


def heldout_texts() -> list[dict[str, Any]]:
    """Every non-dev split (test, heldout, the application splits): each task's prompts in
    the forms it has, its model JSON as the answer, its statement and problem JSON as
    distinctive content."""
    from optiforge.evals.registry import get_benchmark

    b = get_benchmark(SUITE)
    out = []
    for split in b.splits:
        if split in ("dev", "app"):  # ``app`` is the union of the app-* splits
            continue
        for t in b.tasks(split):
            prompts = [code_request(t)] if not t.text_only else []
            st = t if t.text_only else text_task(t)
            prompts.append(model_request(st.statement))
            prompts.append(code_request(st, t.instance.problem))
            # the reference program is no answer here: it reads instance.json, the same text
            # for every instance of the same set types; the model (its JSON) is the answer
            model = json.dumps(t.instance.problem.model_dump(mode="json", exclude_none=True))
            out.append({"task": f"{SUITE}/{t.name}", "prompts": prompts,
                        "answers": [model, t.instance.problem.to_json()],
                        "distinctive": [t.instance.description, t.instance.problem.to_json()]})  # fmt: skip
    return out

"""``evolve`` rows on funcfit's dev tasks: the offline mutation search's improving programs
as replies to the LLM proposer's prompt for the population the search had then.

Format ``code``: one ```python block defining ``f`` (the reply the proposer extracts with
``extract_code_block``; ``CODE_STOP`` ends generation at the closing fence).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from optiforge.agents.evolve.problem import SEED_CODE, CodeProblem
from optiforge.agents.evolve.proposers import LLMCodeProposer, mutate_code
from optiforge.agents.kit import Evaluated, RunContext
from optiforge.errors import InvalidCandidate
from optiforge.harness.posttrain.capture import CaptureLLM, prompt_messages
from optiforge.harness.posttrain.data import Row, Verdict, make_row
from optiforge.llm.structured import extract_code_block

AGENT, FORMAT, SUITE = "evolve", "code", "funcfit"
ROUNDS = 12
"""Search rounds per dev task (``scale`` multiplies them)."""
PROPOSALS = 4
"""Prompts per round: the agent's ``proposals_per_round``."""
SEARCHES = 3
"""Independent searches per dev task (their own mutation draws and run seeds)."""
CHILDREN = 12
"""Mutations evaluated per round."""
POPULATION = 8


def _sandbox() -> Any:
    from optiforge.sandboxes import get_sandbox

    return get_sandbox("local", warm=["numpy", "json", "math", "random"])


def _task(name: str) -> Any:
    from optiforge.evals.registry import resolve_task

    return resolve_task(f"{SUITE}/{name}")


def reply_text(code: str) -> str:
    """A program as the reply the proposer asks for."""
    return f"```python\n{code.rstrip()}\n```"


def prompts(
    task: Any, population: list[Evaluated], round_: int, seed: int = 0
) -> list[list[dict[str, str]]]:
    """The ``PROPOSALS`` requests ``LLMCodeProposer`` sends for ``population`` at
    ``round_`` (the agent's defaults, no tools: the embedded model calls none)."""
    llm = CaptureLLM(lambda _m, _s: reply_text(SEED_CODE))
    ctx = RunContext(llm=llm, seed=seed, agent=AGENT)
    problem = CodeProblem(task, SEED_CODE)
    LLMCodeProposer().propose(problem, population, PROPOSALS, round_, ctx)
    by_variant: dict[int, list[dict[str, str]]] = {}
    for req in llm.requests:
        m = re.search(r"Variant (\d+) of", req[-1]["content"])
        by_variant[int(m.group(1)) if m else len(by_variant) + 1] = prompt_messages(req)
    return [by_variant[k] for k in sorted(by_variant)]


def _best_shown(messages: list[dict[str, str]]) -> float | None:
    m = re.search(r"Program 1 \(score ([^)]+)\)", messages[-1]["content"])
    try:
        return float(m.group(1)) if m else None
    except ValueError:
        return None


def verify(
    task: str, messages: list[dict[str, Any]], reply: str, sandbox: Any | None = None
) -> Verdict:
    """The proposer's extraction and ``CodeProblem.materialize`` (parses, defines ``f``),
    then the task's evaluation in the sandbox: valid when it passed with a finite MSE.
    The detail says whether it beats the best program the prompt shows."""
    suite, _, name = task.partition("/")
    if suite != SUITE:
        return Verdict(valid=False, detail=f"evolve data covers {SUITE}, not {suite}")
    t = _task(name)
    try:
        cand = CodeProblem(t, SEED_CODE).materialize(
            _proposal(extract_code_block(reply)), RunContext(seed=0)
        )
    except InvalidCandidate as e:
        return Verdict(valid=False, detail=f"invalid: {e}")
    score = t.evaluate(cand, sandbox or _sandbox())
    if not score.passed or not math.isfinite(score.value):
        return Verdict(
            valid=False, detail=f"evaluation failed: {score.details.get('reason', '')}"[:300]
        )
    best = _best_shown(messages)
    better = best is not None and score.value < best
    return Verdict(valid=True, score=float(score.value),
                   detail=f"mse {score.value:.6g}" + (f"; {'beats' if better else 'does not beat'} the best shown {best:.6g}"
                                                      if best is not None else ""))  # fmt: skip


def _proposal(code: str) -> Any:
    from optiforge.agents.kit import Proposal

    return Proposal(payload={"code": code}, origin="llm")


def _evaluated(i: int, code: str, value: float, round_: int) -> Evaluated:
    return Evaluated(
        id=f"c{i}", key=code, payload={"code": code}, passed=True, value=value, round=round_
    )


def rows(
    scale: int = 1, progress: Callable[[str], None] | None = None, limit: int | None = None
) -> Iterator[Row]:
    """Per dev task, ``SEARCHES`` mutation searches (``ROUNDS * scale`` rounds); at each round the
    proposer's prompts for the population it has, each answered with a distinct child of
    that round that passed and beats the best program the prompt shows (re-verified).
    limit: the first ``limit`` tasks only (tests)."""
    from optiforge.evals.registry import get_benchmark

    sandbox = _sandbox()
    for t, search in [
        (t, k) for t in get_benchmark(SUITE).tasks("dev")[:limit] for k in range(SEARCHES)
    ]:
        ref = f"{SUITE}/{t.name}"
        rng = np.random.default_rng(41 + search)
        seed_score = t.evaluate({"code": SEED_CODE}, sandbox)
        pop = [_evaluated(0, SEED_CODE, float(seed_score.value), 0)]
        seen = {SEED_CODE}
        n = 1
        made = 0
        for rnd in range(1, ROUNDS * scale + 1):
            asks = prompts(t, pop, rnd, seed=search)
            children: list[Evaluated] = []
            for _ in range(CHILDREN):
                w = np.array([1.0 / (i + 1) for i in range(len(pop))])
                parent = pop[int(rng.choice(len(pop), p=w / w.sum()))]
                try:
                    code = CodeProblem(t, SEED_CODE).materialize(
                        _proposal(mutate_code(parent.payload["code"], rng)), RunContext()
                    )["code"]
                except InvalidCandidate:
                    continue
                if code in seen:
                    continue
                seen.add(code)
                s = t.evaluate({"code": code}, sandbox)
                if s.passed and math.isfinite(s.value):
                    children.append(_evaluated(n, code, float(s.value), rnd))
                    n += 1
            children.sort(key=lambda e: float(e.value or 0.0))
            used: set[str] = set()
            for msgs in asks:
                best = _best_shown(msgs)
                pick = next((c for c in children if c.key not in used and best is not None
                             and float(c.value or 0.0) < best), None)  # fmt: skip
                if pick is None:
                    continue
                used.add(pick.key)
                reply = reply_text(pick.payload["code"])
                v = verify(ref, msgs, reply, sandbox)
                if v.valid:
                    made += 1
                    yield make_row(
                        AGENT, FORMAT, ref, msgs, reply, "evolve.mutation-search", v, t.metric
                    )
            pop = sorted([*pop, *children], key=lambda e: float(e.value or 0.0))[:POPULATION]
        if progress:
            progress(f"{AGENT}: {ref} search {search}: {made} rows, best mse {pop[0].value:.4g}")


def heldout_texts() -> list[dict[str, Any]]:
    """funcfit's held-out tasks: their first-round prompts, and their target expressions
    (the answer a program could copy) as distinctive content."""
    from optiforge.evals.registry import get_benchmark

    out = []
    sandbox = _sandbox()
    for t in get_benchmark(SUITE).tasks("heldout"):
        # the first round's prompts: the seed program and its score on this target
        pop = [_evaluated(0, SEED_CODE, float(t.evaluate({"code": SEED_CODE}, sandbox).value), 0)]
        # the description is not distinctive (cubic's equals quadratic's: same domain)
        out.append({"task": f"{SUITE}/{t.name}", "prompts": prompts(t, pop, 1), "answers": [t.target],
                    "distinctive": [t.target]})  # fmt: skip
    return out

"""Glue steps of a pipeline: small nodes between agents.

``diagnose`` reads a finished (or failed) agent node's run directory — its evaluations,
rejected candidates, LLM errors and stop reason — and writes a ``diagnosis`` artifact:
the failure modes with counts and one example each, the dominant one, and the harness
changes that address it (the first step of AutoSaddler's trace-driven harness tuning:
diagnosis; structured patches and validation-gated updates are that agent's issue). With
an LLM the step also asks it for a root cause and changes, as a JSON schema; offline the
changes come from a rule per failure mode. The diagnosis is stored in the pipeline's
memory as an ``Experience`` (so a later run of the same task can read it).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents import get_agent
from optiforge.agents.kit.events import AttemptEvent
from optiforge.harness.pipelines.optimize import optimize, report
from optiforge.harness.pipelines.step_input import StepInput
from optiforge.harness.pipelines.tune import tune_step
from optiforge.harness.summary import RunSummary
from optiforge.memory.provenance import Provenance, quote_untrusted
from optiforge.runs import read_jsonl

# (mode, pattern, harness change) — first match wins; patterns read error strings
FAILURE_MODES: list[tuple[str, re.Pattern[str], str]] = [
    ("timeout", re.compile(r"timed? ?out|timeout|deadline", re.I),
     "tell the proposer the per-evaluation time limit, or raise the evaluation timeout"),
    ("resource", re.compile(r"MemoryError|out of memory|killed by|signal \d|RLIMIT", re.I),
     "state the memory and process limits in the prompt; reject oversized candidates statically"),
    ("format", re.compile(r"SyntaxError|IndentationError|invalid syntax|no code block|"
                          r"could not parse|unterminated|not valid json|StructuredOutput", re.I),
     "enforce the output shape (a JSON schema or one fenced block with a stop sequence) "
     "and re-ask with the parse error"),
    ("static check", re.compile(r"^invalid:|must define|not allowed|forbidden|static", re.I),
     "state the static checks (required names, banned calls) in the prompt"),
    ("wrong result", re.compile(r"mismatch|wrong|not close|incorrect|differs|max abs|"
                                r"infeasible|not robust|does not match", re.I),
     "show the failing check's expected vs. actual values in the next prompt"),
    ("runtime error", re.compile(r"\b\w+Error\b|Traceback|exception|exit \d+|returncode", re.I),
     "feed the traceback's last line back to the proposer; add a smoke test before scoring"),
    ("llm", re.compile(r"LLM error|rate limit|LLMProvider|LLMTimeout|connection", re.I),
     "retry the provider with backoff, or lower the concurrent requests"),
    ("budget", re.compile(r"budget", re.I),
     "raise the budget, or spend it on fewer proposals per round"),
]  # fmt: skip


class FailureMode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: str
    count: int
    example: str
    change: str


class LLMDiagnosis(BaseModel):
    """What the LLM is asked for (a JSON schema enforced where the provider can)."""

    model_config = ConfigDict(extra="forbid")

    root_cause: str = Field(max_length=400)
    harness_changes: list[str] = Field(default_factory=list, max_length=5)


class Diagnosis(BaseModel):
    """The ``diagnosis`` artifact."""

    model_config = ConfigDict(extra="forbid")

    of: str
    """The node diagnosed."""
    agent: str | None
    task: str | None
    status: str
    status_reason: str
    candidates: int
    failed: int
    modes: list[FailureMode]
    dominant: str | None
    changes: list[str]
    root_cause: str | None = None
    """The LLM's reading of the failures (None offline or when it gave none)."""
    llm_changes: int = 0
    """How many of ``changes`` (the first ones) the LLM wrote after reading the candidates'
    output: text distilled from untrusted data."""


def ask(inp: StepInput, messages: list[dict[str, Any]], schema: type[BaseModel], what: str) -> Any:
    """The step's LLM asked for ``schema``; None (and a ``WHAT_llm_failed`` event) when the
    provider or the reply fails: a step then falls back to its rule."""
    from optiforge.errors import LLMError, StructuredOutputError

    assert inp.llm is not None
    try:
        parsed = inp.llm.complete(messages, schema=schema).parsed
    except (LLMError, StructuredOutputError) as e:
        inp.tracer.event(f"{what}_llm_failed", error=f"{type(e).__name__}: {e}"[:300])
        return None
    return parsed if isinstance(parsed, schema) else None


def failure_texts(run_dir: Path | None, result: dict[str, Any]) -> tuple[int, list[str]]:
    """``(candidates, error strings)`` of one agent run: failed evaluations, rejected
    candidates, failed LLM calls and attempts (the agent's ``AgentSpec.attempt_event``),
    and a failed run's own reason."""
    agent = result.get("agent")
    attempt = get_agent(str(agent)).attempt_event if agent else None
    texts: list[str] = []
    n = 0
    if run_dir is not None:
        for name in ("evaluations.jsonl", "rejected.jsonl"):
            for row in read_jsonl(run_dir / name):
                n += 1
                if not row.get("passed"):
                    texts.append(str(row.get("error") or "failed without an error message"))
        for e in read_jsonl(run_dir / "events.jsonl"):
            if e.get("kind") == "llm_call" and e.get("ok") is False:
                texts.append(f"LLM error: {e.get('error')}")
            elif attempt is not None and e.get("kind") == attempt:
                n += 1
                att = AttemptEvent.model_validate(e)
                if not att.passed:
                    texts.append("; ".join(att.reasons) or "attempt failed")
    if result.get("status") == "failed" and not texts:
        texts.append(str(result.get("status_reason") or result.get("error") or "failed"))
    return n, texts


def classify(texts: list[str]) -> list[FailureMode]:
    """Failure modes by count (most first), each with its first example."""
    counts: Counter[str] = Counter()
    examples: dict[str, str] = {}
    changes = {m: c for m, _, c in FAILURE_MODES}
    for text in texts:
        mode = next((m for m, pat, _ in FAILURE_MODES if pat.search(text)), "other")
        counts[mode] += 1
        examples.setdefault(mode, text.strip().splitlines()[0][:300] if text.strip() else "")
    return [
        FailureMode(mode=m, count=c, example=examples[m],
                    change=changes.get(m, "read the examples: no rule covers them"))
        for m, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]  # fmt: skip


def diagnose(inp: StepInput) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``diagnose`` step: ``(result, artifact)``."""
    res = inp.result
    n, texts = failure_texts(inp.run_dir, res)
    modes = classify(texts)
    diag = Diagnosis(
        of=inp.node, agent=res.get("agent"), task=res.get("task"),
        status=str(res.get("status")), status_reason=str(res.get("status_reason") or ""),
        candidates=n, failed=len(texts), modes=modes,
        dominant=modes[0].mode if modes else None, changes=[m.change for m in modes[:3]],
    )  # fmt: skip
    if inp.llm is not None and modes:
        diag = _ask_llm(inp, diag)
    inp.out_dir.mkdir(parents=True, exist_ok=True)
    (inp.out_dir / "diagnosis.json").write_text(diag.model_dump_json(indent=2) + "\n")
    (inp.out_dir / "diagnosis.md").write_text(render(diag))
    _remember(inp, diag)
    inp.tracer.event("diagnosis", of=inp.node, dominant=diag.dominant, failed=diag.failed,
                     candidates=diag.candidates, modes={m.mode: m.count for m in modes})  # fmt: skip
    result = {
        "status": "finished",
        "status_reason": f"{diag.failed} of {diag.candidates} candidates failed"
        + (f"; mostly {diag.dominant}" if diag.dominant else ""),
    }
    return result, {"kind": "diagnosis", **diag.model_dump(mode="json")}


def _ask_llm(inp: StepInput, diag: Diagnosis) -> Diagnosis:
    # the examples are candidates' own output: quoted as data, never instructions
    lines = "\n".join(
        f"- {m.mode} x{m.count}, example:\n{quote_untrusted(m.example)}" for m in diag.modes[:6]
    )
    # no task name: the reply may reach a lesson, and lessons reach later prompts
    messages = [
        {"role": "system", "content": "You diagnose why an optimization agent's candidates "
         "failed and propose changes to the agent's harness (prompts, tools, checks)."},
        {"role": "user", "content": f"Agent {diag.agent}: {diag.failed} of {diag.candidates} "
         f"candidates failed. Failure modes with an example each:\n{lines}\n"
         "Reply as JSON: root_cause (one sentence) and harness_changes (at most 5 short items)."},
    ]  # fmt: skip
    parsed = ask(inp, messages, LLMDiagnosis, "diagnosis")
    if not isinstance(parsed, LLMDiagnosis):
        return diag
    changes = [c.strip()[:200] for c in parsed.harness_changes if c.strip()]
    return diag.model_copy(
        update={"root_cause": parsed.root_cause.strip() or None, "changes": changes + diag.changes,
                "llm_changes": len(changes)}
    )  # fmt: skip


def render(diag: Diagnosis) -> str:
    out = [f"# Diagnosis of node {diag.of}: {diag.agent} on {diag.task}", "",
           f"status: {diag.status} ({diag.status_reason})", "",
           f"{diag.failed} of {diag.candidates} candidates failed.", ""]  # fmt: skip
    if diag.modes:
        out += ["| failure mode | count | example |", "|---|---|---|"]
        out += [
            f"| {m.mode} | {m.count} | {m.example.replace('|', '/')[:160]} |" for m in diag.modes
        ]
        out.append("")
    if diag.root_cause:
        out += [f"root cause (LLM): {diag.root_cause}", ""]
    if diag.changes:
        out += ["Harness changes to try:", *[f"- {c}" for c in diag.changes], ""]
    return "\n".join(out)


def _remember(inp: StepInput, diag: Diagnosis) -> None:
    # The lesson holds counts, the failure mode (one of FAILURE_MODES' names) and the
    # change to try; the candidates' examples stay out of it. The change is the rule's
    # (agent text) or the LLM's, which read those examples: then the lesson is distilled.
    if not diag.modes:
        return
    lesson = (f"{diag.agent}: {diag.failed}/{diag.candidates} candidates failed, mostly "
              f"{diag.dominant}; try: {diag.changes[0]}")  # fmt: skip
    provenance: Provenance = "distilled" if diag.llm_changes else "agent"
    store_lesson(inp, "diagnose", lesson, "; ".join(f"{m.mode} x{m.count}" for m in diag.modes),
                 f"{diag.status}: {diag.status_reason}", ["diagnosis", str(diag.agent)],
                 provenance=provenance)  # fmt: skip


def store_lesson(
    inp: StepInput,
    agent: str,
    lesson: str,
    summary: str,
    outcome: str,
    tags: list[str],
    *,
    provenance: Provenance,
) -> str | None:
    """Store a step's lesson as an ``Experience`` in the pipeline's memory, once per node
    run, under the task's opaque signature (lessons reach later prompts: never a CLI id
    that names the answer). Returns its id (None without memory or a task).

    ``provenance``: the least trusted origin of the text (``memory.provenance``); the
    status reason in ``outcome`` is the harness's."""
    task_ref = inp.result.get("task")
    if inp.memory_url is None or not task_ref:
        return None
    import hashlib

    from optiforge.agents.kit.lineage import task_signature
    from optiforge.evals.registry import resolve_task
    from optiforge.memory import Experience, Store

    signature = task_signature(resolve_task(str(task_ref)))
    key = f"{inp.out_dir.resolve()}:{agent}".encode()
    exp_id = f"exp_{agent}_{hashlib.sha256(key).hexdigest()[:20]}"
    with Store(inp.memory_url, embedder=None) as store:  # embedded when first searched
        if store.find(exp_id) is None:
            store.add_experience(
                Experience(
                    id=exp_id,
                    agent=agent,
                    task_signature=signature,
                    trajectory_summary=summary[:1000],
                    outcome=outcome[:300],
                    lesson=lesson[:1000],
                    tags=tags,
                    provenance=provenance,
                )  # fmt: skip
            )
    return exp_id


class LLMLesson(BaseModel):
    """What ``reflect`` asks the LLM for."""

    model_config = ConfigDict(extra="forbid")

    lesson: str = Field(max_length=400)


def reflect(inp: StepInput) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``reflect`` step: one reusable lesson from a node's run (what it reached against
    its baseline, what it ended on, how its candidates failed), stored in the pipeline's
    memory, where later nodes' searches recall it (AutoREM's reflection, for any agent).
    With an LLM the lesson is phrased by it from those facts."""
    res = inp.result
    n, texts = failure_texts(inp.run_dir, res)
    modes = classify(texts)
    best, base = res.get("best_score"), res.get("baseline_score")
    facts = [f"status {res.get('status')}"]
    if best is not None:
        verdict = ""
        if base is not None:
            better = best > base if res.get("higher_is_better") else best < base
            verdict = f", {'better' if better else 'no better'} than {res.get('baseline_name')} ({base:.4g})"
        facts.append(f"reached {best:.4g}{verdict}")
    extra = _summary_extra(inp.run_dir)
    if extra.get("final_kernel"):
        facts.append(f"ended on the kernel {extra['final_kernel']}")
    if modes:
        # the mode's name only: its example is a candidate's output, and this lesson (and
        # the LLM that phrases it) sees measured facts and agent text only
        facts.append(f"{len(texts)}/{n} candidates failed, mostly {modes[0].mode}")
    lesson = f"{res.get('agent')}: " + "; ".join(facts)
    if inp.llm is not None:
        lesson = _phrase(inp, lesson)
    mem_id = store_lesson(inp, "reflect", lesson, "; ".join(facts),
                          f"{res.get('status')}: {res.get('status_reason')}", ["reflection", str(res.get("agent"))],
                          provenance="agent")  # fmt: skip
    inp.tracer.event("reflection", of=inp.node, lesson=lesson[:400], memory_id=mem_id)
    inp.out_dir.mkdir(parents=True, exist_ok=True)
    (inp.out_dir / "lesson.md").write_text(f"# Lesson from node {inp.node}\n\n{lesson}\n")
    return ({"status": "finished", "status_reason": "lesson stored" if mem_id else "lesson (no memory)"},
            {"kind": "lesson", "of": inp.node, "lesson": lesson, "memory_id": mem_id})  # fmt: skip


def _summary_extra(run_dir: Path | None) -> dict[str, Any]:
    summary = RunSummary.load_if_any(run_dir)
    return dict(summary.extra) if summary is not None else {}


def _phrase(inp: StepInput, facts: str) -> str:
    messages = [{"role": "user", "content": "An optimization agent's run ended. Facts: "
                 f"{facts}\nWrite ONE lesson (at most two sentences) a later run on a related "
                 "task should follow. Reply as JSON with the key lesson."}]  # fmt: skip
    parsed = ask(inp, messages, LLMLesson, "reflection")
    text = parsed.lesson.strip() if isinstance(parsed, LLMLesson) else ""
    return f"{text} ({facts})" if text else facts


# An HDBO task's optimizers, as Kernel Discovery's methods (the agent and its baselines).
OPTIMIZERS = {
    "sobol": "quasi-random design: no model; right when the budget is a handful of points",
    "gp_rbf_ard": "GP-BO with an RBF-ARD kernel (qLogEI): low to moderate dimension",
    "vanilla_bo": "GP-BO with the dimension-scaled lengthscale prior: high dimension, "
                  "few effective inputs",
    "turbo": "TuRBO-1 trust region: high dimension, larger budgets",
    "kernel-discovery": "GP-BO whose kernel is searched during the run (compositional kernels)",
}  # fmt: skip


class LLMFormulation(BaseModel):
    """What ``formulate`` asks the LLM for (the method is an enum of ``OPTIMIZERS``)."""

    model_config = ConfigDict(extra="forbid")

    method: str
    rationale: str = Field(default="", max_length=300)


def choose_optimizer(dim: int, budget: int, n_init: int) -> tuple[str, str]:
    """The rule the step follows offline: ``(method, why)``."""
    if budget - n_init < 5:
        return "sobol", f"only {budget - n_init} evaluations after the initial design"
    if dim > 20:
        return "vanilla_bo", f"{dim} inputs: a dimension-scaled lengthscale prior"
    return "gp_rbf_ard", f"{dim} inputs: an ARD kernel can learn each input's scale"


def formulate(inp: StepInput) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``formulate`` step (minimal; BBOWP is the full version): from what an agent may
    know of a black-box task — its description, input dimension and evaluation budget,
    never its hidden facts — pick the optimizer; the search space is the task's own unit
    cube. With an LLM it chooses among ``OPTIMIZERS`` (an enum it cannot leave), else the
    rule of ``choose_optimizer``. The ``formulation`` artifact's ``method`` feeds the next
    node (``method: ${ID.artifact.method}``)."""
    from optiforge.evals.registry import resolve_task

    task = resolve_task(str(inp.task))
    dim_of = getattr(task, "dim", None)
    dim = int((dim_of() if callable(dim_of) else dim_of) or 0)
    budget, n_init = int(task.budget or 0), int(getattr(task, "n_init", 0) or 0)
    if not dim or not budget:
        raise ValueError(f"formulate: {task.suite} tasks declare no dimension and budget")
    method, why, by = *choose_optimizer(dim, budget, n_init), "rule"
    if inp.llm is not None:
        method, why, by = _llm_formulation(inp, task, dim, budget, n_init, (method, why))
    inp.tracer.event("formulation", task=f"{task.suite}/{getattr(task, 'agent_name', '') or '?'}",
                     method=method, by=by)  # fmt: skip
    space = {
        "dim": dim,
        "bounds": [0.0, 1.0],
        "scale": "linear",
        "budget": budget,
        "n_init": n_init,
    }
    inp.out_dir.mkdir(parents=True, exist_ok=True)
    (inp.out_dir / "formulation.json").write_text(
        json.dumps({"method": method, "why": why, "by": by, "search_space": space}, indent=2) + "\n"
    )
    return ({"status": "finished", "status_reason": f"{method} ({by}: {why})"},
            {"kind": "formulation", "method": method, "why": why, "by": by,
             "search_space": space})  # fmt: skip


def _llm_formulation(
    inp: StepInput, task: Any, dim: int, budget: int, n_init: int, fallback: tuple[str, str]
) -> tuple[str, str, str]:
    from typing import Literal

    from pydantic import create_model

    choice = Literal[tuple(OPTIMIZERS)]  # type: ignore[valid-type]
    schema = create_model("Formulation", __base__=LLMFormulation, method=(choice, ...))  # type: ignore[arg-type]
    options = "\n".join(f"- {k}: {v}" for k, v in OPTIMIZERS.items())
    messages = [{"role": "user", "content": f"Task: {task.description} Budget: {budget} "
                 f"evaluations, the first {n_init} a space-filling design. Which optimizer "
                 f"suits it?\n{options}\nReply as JSON with keys method and rationale."}]  # fmt: skip
    parsed = ask(inp, messages, schema, "formulation")
    if parsed is None:
        return (*fallback, "rule")
    return str(parsed.method), str(getattr(parsed, "rationale", ""))[:300], "llm"  # type: ignore[attr-defined]


STEPS: dict[str, Callable[[StepInput], tuple[dict[str, Any], dict[str, Any]]]] = {
    "diagnose": diagnose,
    "reflect": reflect,
    "formulate": formulate,
    "optimize": optimize,
    "report": report,
    "tune": tune_step,
}
"""Glue steps by name: ``StepInput -> (result, artifact)``."""

"""Kernel Discovery's proposers: compositional search (offline) and the two-stage LLM proposer."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kernel_discovery.problem import KernelSearchProblem, describe, validate_source
from optiforge.agents.kit import Evaluated, Proposal, RunContext
from optiforge.agents.kit.ask import Invalid, ask_valid
from optiforge.agents.kit.recall import lessons_block
from optiforge.errors import BudgetExceeded, InvalidCandidate, LLMError, StructuredOutputError
from optiforge.llm.structured import CODE_STOP, extract_code_block
from optiforge.llm.types import Completion
from optiforge.solvers.gp import grammar

CODE_PROTOCOL = """Write Python (torch only; `torch` and `math` are available, no imports) defining:

    NAME = "short name"
    HYPERPARAMETERS = {
        "lengthscale": {"shape": "ard", "init": 1.0, "bounds": [0.01, 100.0]},
        "alpha": {"shape": "scalar", "init": 1.0, "bounds": [0.01, 100.0]},
    }
    def kernel(x1, x2, params):
        # x1: n x d, x2: m x d float64 tensors in the unit cube; params: dict of positive
        # tensors (shape () for "scalar", (d,) for "ard"). Return the n x m Gram block.
        ...

The kernel must be symmetric and positive semi-definite for any inputs, finite with finite
gradients, and must not depend on which batch it is called with. Do not include a signal
variance (the GP has one). Reply with exactly one ```python code block."""

KERNEL_GRAMMAR = "\n".join(
    [
        'root ::= "```python\\nNAME = \\"" [A-Za-z0-9_ +*()-]{1,40} "\\"\\n" hps kernel "```"',
        'hps ::= "HYPERPARAMETERS = {\\n" hp{1,4} "}\\n"',
        'hp ::= "    \\"" [a-z_]{1,20} "\\": {\\"shape\\": \\"" ("scalar" | "ard") '
        '"\\", \\"init\\": " num ", \\"bounds\\": [" num ", " num "]},\\n"',
        'num ::= [0-9]{1,3} ("." [0-9]{1,4})?',
        'kernel ::= "def kernel(x1, x2, params):\\n" ("    " [^\\n]{1,100} "\\n"){0,7} '
        '"    return " [^.\\n] [^\\n]{0,99} "\\n"',
        "",
    ]
)
"""The shape ``CODE_PROTOCOL`` asks for (NAME, HYPERPARAMETERS with 1-4 entries, then
``def kernel(x1, x2, params):`` and at most 8 indented lines of 100 characters, the
last a ``return`` of something other than the template's ``...``: it ends within the
384-token reply limit) as a llama.cpp grammar,
enforced by the local model when ``llm.local.code_grammars`` is on (others ignore it)."""


def _rank_biased(population: list[Evaluated], rng: np.random.Generator) -> Evaluated:
    w = np.array([1.0 / (i + 1) for i in range(len(population))])
    return population[int(rng.choice(len(population), p=w / w.sum()))]


class CompositionalProposer:
    """Offline: compositional kernel search (mutations S+B, S*B, B->B', and crossover)."""

    name = "compositional"

    def __init__(self, config: KernelDiscoveryConfig) -> None:
        self.config = config

    def propose(
        self, problem: Any, population: list[Evaluated], n: int, round_: int, ctx: RunContext
    ) -> list[Proposal]:
        rng = ctx.rng("compositional", round_, len(population))
        parents = [p for p in population if "expression" in p.payload] or []
        if not parents:
            parents_expr = ["RBF_ARD"]
            return [
                Proposal(
                    payload={
                        "expression": grammar.mutate(
                            parents_expr[0], rng, self.config.bases, self.config.max_complexity
                        )
                    },
                    origin="mutation",
                )
                for _ in range(n)
            ]
        out = []
        for _ in range(n):
            if len(parents) >= 2 and rng.random() < 0.3:
                i, j = rng.choice(len(parents), size=2, replace=False)
                a, b = parents[int(i)], parents[int(j)]
                expr = grammar.crossover(
                    a.payload["expression"],
                    b.payload["expression"],
                    rng,
                    self.config.max_complexity,
                )
                out.append(
                    Proposal(
                        payload={"expression": expr}, parent_ids=[a.id, b.id], origin="crossover"
                    )
                )
            else:
                a = _rank_biased(parents, rng)
                expr = grammar.mutate(
                    a.payload["expression"], rng, self.config.bases, self.config.max_complexity
                )
                out.append(
                    Proposal(payload={"expression": expr}, parent_ids=[a.id], origin="mutation")
                )
        return out


class KernelForm(BaseModel):
    """Stage one of the LLM proposer: a kernel's mathematical form."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=80)
    form: str = Field(max_length=400)
    """The kernel as mathematics, e.g. ``k(x,x') = (1 + r^2/(2a))^-a * exp(-|x-x'|_1 / l)``."""
    rationale: str = Field(default="", max_length=500)


class LLMKernelProposer:
    """Two stages: form (mutation/crossover of scored parents) -> validated code (with re-asks)."""

    name = "llm"

    def __init__(self, config: KernelDiscoveryConfig) -> None:
        self.config = config

    def propose(
        self, problem: Any, population: list[Evaluated], n: int, round_: int, ctx: RunContext
    ) -> list[Proposal]:
        if ctx.llm is None:
            raise InvalidCandidate("LLMKernelProposer needs an LLM")
        rng = ctx.rng("llm-kernels", round_)
        out: list[Proposal] = []
        for _ in range(n):
            if len(population) >= 2 and rng.random() < 0.4:
                i, j = rng.choice(len(population), size=2, replace=False)
                parents = [population[int(i)], population[int(j)]]
                op = "crossover: combine the strengths of these two kernels into one new form"
            else:
                parents = [_rank_biased(population, rng)] if population else []
                op = "mutation: change this kernel's form to fit the data better"
            try:
                form = self._form(problem, population, parents, op, ctx)
                src = self._code(problem, form, ctx)
            except BudgetExceeded:
                if out:  # kernels already paid for are evaluated, not thrown away
                    break
                raise
            except LLMError as err:  # a reply that never matched KernelForm, or a failed call
                # (after its retries): either costs this proposal, not the refresh
                why = (f"unusable reply: {err}" if isinstance(err, StructuredOutputError)
                       else f"LLM call failed: {type(err).__name__}: {err}"[:400])  # fmt: skip
                out.append(
                    Proposal(
                        payload={}, parent_ids=[p.id for p in parents], origin="llm", error=why
                    )
                )
                continue
            out.append(
                Proposal(
                    payload={"source": src, "form": f"{form.name}: {form.form}"},
                    parent_ids=[p.id for p in parents],
                    origin="llm",
                    rationale=form.rationale[:300],
                )
            )
        return out

    def _form(
        self,
        problem: KernelSearchProblem,
        population: list[Evaluated],
        parents: list[Evaluated],
        op: str,
        ctx: RunContext,
    ) -> KernelForm:
        msg = form_prompt(problem, population, parents, op) + lessons_block(ctx)
        assert ctx.llm is not None  # propose() refuses to run without an LLM
        reply = ctx.llm.complete([{"role": "user", "content": msg}], schema=KernelForm)
        assert isinstance(reply.parsed, KernelForm)
        return reply.parsed

    def _code(self, problem: Any, form: KernelForm, ctx: RunContext) -> str:
        messages: list[dict[str, Any]] = [
            {
                "role": "user",
                "content": code_prompt(form),
            }
        ]
        assert ctx.llm is not None  # propose() refuses to run without an LLM

        def parse(reply: Completion) -> str:
            src = extract_code_block(reply.text)
            reason = validate_source(
                src, int(problem.X.shape[1]), ctx, problem.task.max_hyperparameters
            )
            if reason is not None:
                raise Invalid(reason)
            return src

        def rejected(attempt: int, reason: str) -> None:
            ctx.tracer.event("kernel_code_rejected", form=form.name, attempt=attempt, reason=reason)

        # NAME and HYPERPARAMETERS come before the def (CODE_PROTOCOL): a preamble
        asked = ask_valid(ctx.llm, messages, parse, tries=self.config.max_code_reasks + 1,
                          params={"stop": CODE_STOP, "grammar": KERNEL_GRAMMAR},
                          # the reason may be a quoted block: the instruction goes on its own line
                          reask=lambda reason: f"That code was rejected: {reason}\nFix it and reply with one ```python block.",
                          on_invalid=rejected, stop_on=())  # fmt: skip
        if asked.valid and asked.value is not None:
            return asked.value
        # still invalid: the loop's evaluation rejects it and logs the reason
        return extract_code_block(asked.reply.text) if asked.reply is not None else ""


def _parents_text(parents: list[Evaluated]) -> str:
    return "\n".join(f"- {describe(p)}: LOO-CRPS {p.value:.4f}" for p in parents)


def form_prompt(
    problem: KernelSearchProblem, population: list[Evaluated], parents: list[Evaluated], op: str
) -> str:
    """Stage-one prompt: the data's size, the scored kernels, the operation.

    Of the task it shows only ``agent_name`` and ``description`` (the input dimension);
    never ``task.name`` (the CLI id names the function) or ``task.hidden``.
    """
    n, d = problem.X.shape
    task = problem.task
    return (
        f"We run Bayesian optimization on a {d}-dimensional black-box function "
        f"(task {task.agent_name or 'unnamed'}: {task.description}). A GP "
        f"surrogate is fitted to {n} observations in the unit "
        "cube; kernels are scored by leave-one-out CRPS (lower is better: it penalizes "
        "overconfident fits).\n\nKernels scored so far (best first):\n"
        f"{_parents_text(population[:6]) or '- none yet'}\n\n"
        f"Operation: {op}\n{_parents_text(parents)}\n\n"
        "Propose ONE novel kernel as a mathematical form (not code). It must be a valid "
        "positive semi-definite kernel. Do not repeat a form above under another name: "
        "functionally identical kernels are wasted. Answer as JSON with keys name, form, rationale."
    )


def code_prompt(form: KernelForm) -> str:
    """Stage-two prompt: implement ``form`` under ``CODE_PROTOCOL`` (nothing about the task)."""
    return f"Implement this GP kernel.\n\nForm: {form.name}: {form.form}\n\n{CODE_PROTOCOL}"

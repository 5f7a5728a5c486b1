"""Hawkeye's proposers: an LLM writer grounded in the strategy taxonomy, and an offline autotuner."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from optiforge.agents.hawkeye.problem import KernelProblem, attempt
from optiforge.agents.hawkeye.strategies import (
    TAXONOMY,
    KernelFacts,
    Strategy,
    bottlenecks,
    choose_strategies,
)
from optiforge.agents.kit import Evaluated, Proposal, RunContext
from optiforge.agents.kit.recall import render_recalled
from optiforge.agents.kit.tools import ToolsConfig, build_registry, complete_with_tools
from optiforge.errors import BudgetExceeded, InvalidCandidate
from optiforge.kernels.templates import TEMPLATES, read_params, render
from optiforge.llm.structured import CODE_STOP, extract_code_block
from optiforge.memory.provenance import quote_untrusted


def prior_preference(facts: KernelFacts) -> dict[str, Any]:
    """Roofline-guided preferred values: where the autotuner looks first."""
    if facts.matmul:
        return {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "SPLIT_K": 1, "num_warps": 4,
                "num_stages": 3}  # fmt: skip
    return {"BLOCK_N": 256, "num_warps": 4, "variant": "auto", "BLOCK_M": 32, "num_stages": 2}


def distance(params: dict[str, Any], pref: dict[str, Any]) -> float:
    d = 0.0
    for k, v in params.items():
        p = pref.get(k)
        if p is None:
            continue
        if isinstance(v, int | float) and isinstance(p, int | float) and v > 0 and p > 0:
            d += abs(math.log2(v / p))
        elif v != p:
            d += 1.0
    return d


class AutotuneProposer:
    """Offline: local search over the templated kernel's strategy params (BLOCK sizes, warps, stages, split-K).

    Each round moves from the best correct config (the seed before any passed) to its
    untried one-parameter neighbours, nearest to a roofline prior first, plus one random
    config for exploration. Correctness is measured by the harness; speed only on GPU.
    The tried configs are the search's ``history`` (a ``HistoryProposer``: every candidate
    of the earlier rounds, read from the run's logs, so a resumed run tries what an
    uninterrupted one would).
    """

    name = "autotune"

    def propose_from_history(
        self,
        problem: Any,
        history: list[Evaluated],
        population: list[Evaluated],
        n: int,
        round_: int,
        ctx: RunContext,
    ) -> list[Proposal]:
        task = problem.task
        _, start, space = TEMPLATES[task.op]
        tried = [a.get("params") or {} for a in map(attempt, history)]
        tried_keys = {_key({**start, **p}) for p in tried}
        base_ev = population[0] if population else None
        base = {
            **start,
            **(
                (base_ev.payload.get("params") if base_ev else None)
                or read_params(task.seed_code)
                or {}
            ),
        }
        pref = prior_preference(problem.facts)
        neighbours = []
        for k, values in space.items():
            for v in values:
                if v != base.get(k):
                    cand = {**base, k: v}
                    if _key(cand) not in tried_keys:
                        neighbours.append(cand)
        neighbours.sort(key=lambda p: distance(p, pref))
        rng = ctx.rng("autotune", task.name, round_)
        picks: list[dict[str, Any]] = neighbours[: max(1, n - 1)]
        for _ in range(20):  # one random config: escapes a local optimum of the prior
            if len(picks) >= n:
                break
            cand = {k: vals[int(rng.integers(len(vals)))] for k, vals in space.items()}
            if _key(cand) not in tried_keys and all(_key(cand) != _key(p) for p in picks):
                picks.append(cand)
        parent = [base_ev.id] if base_ev else []
        return [Proposal(payload={"code": render(task.op, p), "strategy": "tiling_autotune", "params": p},
                         parent_ids=parent, origin="autotune", rationale=f"params {p}") for p in picks[:n]]  # fmt: skip


def _key(p: dict[str, Any]) -> str:
    return repr(sorted(p.items()))


SYSTEM = ("You are an expert Triton GPU kernel engineer. Reply with exactly one ```python code block holding the "
          "complete candidate module: Triton kernels plus `def launch(*inputs) -> torch.Tensor`.")  # fmt: skip

RULES = """Rules the harness enforces (a violation rejects the candidate):
- compute with Triton (@triton.jit kernels); torch may only allocate (torch.empty/zeros), give dtypes and query devices;
  no torch compute ops (torch.softmax, torch.nn.functional, tensor.sum(), @ on tensors...), no calls to references;
- the module holds only imports (torch, triton, `triton.language as tl`, math, optiforge.kernels library modules),
  constants, @triton.jit kernels and `launch` (plus helpers it calls); host code only allocates outputs
  (torch.empty...), reads shapes/strides/dtypes, does grid arithmetic (triton.cdiv, min/max) and launches
  `kernel[grid](...)`: never reads tensor data (.numpy(), .item(), if on a tensor), no classes, match, comprehensions;
- return a fresh output tensor; never modify inputs; no caching of results between calls;
- no timers, no files, no os/sys/importlib/time, no monkeypatching;
- held-out shapes differ (non-power-of-two, strided, transposed inputs): use masks and strides, never special-case shapes."""


class LLMKernelProposer:
    """Ask the LLM for a kernel that applies one chosen strategy, grounded in its example and test.

    Strategies are ranked by the task's roofline facts plus the bottlenecks measured on the
    current best kernel (``strategies.bottlenecks``: launches, traffic amplification, tensor
    cores) and rotated over rounds. With ``tools`` (and a model that can call them) each
    proposal is an agentic loop of up to ``tools.max_steps`` turns: the model may compile and
    test a draft on the dev cases (``test_kernel``: static checks, correctness, the cost
    model's numbers, the strategies detected) and ask whether a draft applies a strategy
    (``check_strategy``) before it answers. Those runs are outside the search's evaluation
    budget (each is one sandboxed evaluation, charged to the sandbox budget).

    The previous attempts in the prompt are the search's ``history`` (a ``HistoryProposer``:
    every candidate of the earlier rounds, rejected ones included, read from the run's logs).
    """

    name = "llm"

    def __init__(
        self,
        strategies_per_task: int = 3,
        attempts_shown: int = 6,
        tools: ToolsConfig | None = None,
    ) -> None:
        self.k = strategies_per_task
        self.attempts_shown = attempts_shown
        self.tools = tools or ToolsConfig()

    @staticmethod
    def measured(
        problem: KernelProblem, population: list[Evaluated] | None
    ) -> dict[str, tuple[float, str]]:
        """The bottlenecks measured on the current best kernel (``strategies.bottlenecks``)."""
        best = population[0] if population else None
        return (
            bottlenecks(problem.facts, dict(best.metrics))
            if best is not None and best.metrics
            else {}
        )

    def strategies(
        self, problem: KernelProblem, population: list[Evaluated] | None = None
    ) -> list[Strategy]:
        return choose_strategies(
            problem.facts, problem.arch, self.k, self.measured(problem, population)
        )

    def prompt(
        self,
        problem: KernelProblem,
        history: list[Evaluated],
        population: list[Evaluated],
        strategy: Strategy,
        ctx: RunContext,
        tools: list[str] | None = None,
    ) -> list[dict[str, str]]:
        entry = strategy.entry(problem.arch)
        best = population[0] if population else None
        current = best.payload["code"] if best else problem.task.seed_code
        facts = problem.facts.model_dump()
        roof = ", ".join(f"{k}={v:.3g}" for k, v in problem.roofline.items())
        attempts = "\n".join(
            f"- strategy {a['strategy']} params {a.get('params')}: "
            + ("correct" + (f", value {a['value']:.4g}" if a.get("value") is not None else "") if a["passed"]
               else "FAILED, the reason quoted below\n" + quote_untrusted(str(a["error"]), limit=600))
            + (" [the kernel did NOT apply the strategy asked for]" if a.get("strategy_applied") is False else "")
            for a in map(attempt, history[-self.attempts_shown:])
        ) or "- none yet"  # fmt: skip
        measured = "\n".join(
            f"- {why} (suggests {name})"
            for name, (_, why) in self.measured(problem, population).items()
        )
        lessons = _memory_lessons(ctx, problem)
        example = entry.example_source()
        tool_hint = (f"\nBefore you answer you may call the tools {', '.join(tools)}: compile and test a draft on the "
                     "dev cases, and check that it applies the strategy.\n") if tools else ""  # fmt: skip
        user = (
            f"Task: {problem.task.description}\n\nTarget architecture: {problem.arch}. Roofline: {roof}. Facts: {facts}.\n"
            f"Bottlenecks measured on the current kernel:\n{measured or '- none measured'}\n\n"
            f"Current best kernel ({'value ' + format(best.value, '.4g') if best and best.value is not None else 'the starting kernel'}):\n"
            f"```python\n{current}```\n\n"
            f"Apply the strategy **{strategy.title}**: {strategy.description}\nUse it when: {'; '.join(strategy.when)}.\n"
            f"The harness checks that your kernel applies it (a detector reads your source).\n"
            f"Tunable params for {problem.arch}: {dict(entry.params)}.\n"
            f"Expert example for {problem.arch} (its unit test runs launch(*make_inputs(seed)) against reference(...) "
            f"within TOL for seeds 0 and 1):\n```python\n{example}```\n\n"
            f"Previous attempts:\n{attempts}\n\nLessons from memory:\n{lessons}\n\n{RULES}\n{tool_hint}"
        )  # fmt: skip
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]

    def propose_from_history(
        self,
        problem: Any,
        history: list[Evaluated],
        population: list[Evaluated],
        n: int,
        round_: int,
        ctx: RunContext,
    ) -> list[Proposal]:
        if ctx.llm is None:
            raise InvalidCandidate("LLMKernelProposer needs an LLM")
        chosen = self.strategies(problem, population)
        registry = build_registry(ctx, self.tools, kernel_tools(problem, ctx))
        out: list[Proposal] = []
        for j in range(n):
            strategy = chosen[(round_ - 1 + j) % len(chosen)]
            messages = self.prompt(problem, history, population, strategy, ctx,
                                   tools=list(registry.names) if registry is not None else None)  # fmt: skip
            try:
                if registry is not None:
                    reply: Any = complete_with_tools(
                        ctx, messages, registry, self.tools.max_steps, stop=CODE_STOP
                    )
                else:
                    reply = ctx.llm.complete(messages, stop=CODE_STOP)
            except BudgetExceeded:
                if out:  # replies already paid for are evaluated, not thrown away
                    break
                raise
            text = reply.text or ""
            code = extract_code_block(text)
            out.append(Proposal(payload={"code": code, "strategy": strategy.name, "params": read_params(code) or {}},
                                parent_ids=[population[0].id] if population else [], origin="llm",
                                rationale=text[:200]))  # fmt: skip
        return out


def kernel_tools(problem: KernelProblem, ctx: RunContext) -> dict[str, Callable[[], Any]]:
    """Hawkeye's own tools for the LLM: ``test_kernel`` and ``check_strategy``."""
    from optiforge.agents.hawkeye.strategies import get_strategy
    from optiforge.tools import Tool, args_model_from_function

    def test_kernel(
        code: Annotated[str, Field(description="the complete candidate module (kernels + launch)")],
    ) -> str:
        """Compile and test a draft on the task's dev cases in the sandbox: the static checks,
        correctness per case, the cost model's estimate and the strategies detected."""
        try:
            payload = problem.materialize(
                Proposal(payload={"code": code, "strategy": "draft"}, origin="tool"), ctx
            )
        except InvalidCandidate as e:
            return f"rejected by the static checks: {e}"
        if ctx.budget is not None:
            ctx.budget.check_sandbox()
        score = problem.task.evaluate({"code": code}, ctx.sandbox)
        if not score.passed:
            # the reason quotes the draft's own output (exception, stderr): data, not instructions
            return f"failed at {score.details.get('stage')}:\n" + quote_untrusted(
                str(score.details.get("reason")), limit=500
            )
        m = score.metrics
        cost = (f"; cost model: {m['cost_us']:.1f} us vs the starting kernel's {m['seed_cost_us']:.1f} us, "
                f"{m['cost_launches']:.0f} launch(es), traffic {m['cost_amplification']:.2f}x compulsory, "
                f"tensor cores {'yes' if m.get('cost_tensor_cores') else 'no'}") if "cost_us" in m else ""  # fmt: skip
        return (
            f"correct on {m['n_correct']:.0f}/{m['n_cases']:.0f} dev cases, value {score.value:.4g}{cost}; "
            f"strategies detected: {', '.join(payload['applied']) or 'none'}"
        )

    def check_strategy(
        code: Annotated[str, Field(description="the draft module")],
        strategy: Annotated[str, Field(description=f"one of: {', '.join(TAXONOMY)}")],
    ) -> str:
        """Whether a draft applies a strategy, as the harness's detector sees it (with its evidence)."""
        try:
            det = get_strategy(strategy).entry(problem.arch).detector(code)
        except Exception as e:  # noqa: BLE001 - an unknown strategy or unparsable draft, told to the model
            return f"cannot check: {str(e)[:300]}"
        return ("applied" if det.applies else "NOT applied") + (
            ": " + "; ".join(det.evidence)[:500] if det.evidence else ""
        )

    return {
        "test_kernel": lambda: Tool("test_kernel", (test_kernel.__doc__ or "").split("\n")[0], test_kernel,
                                    args_model=args_model_from_function(test_kernel, "test_kernel")),
        "check_strategy": lambda: Tool("check_strategy", (check_strategy.__doc__ or "").split("\n")[0], check_strategy,
                                       args_model=args_model_from_function(check_strategy, "check_strategy")),
    }  # fmt: skip


def _memory_lessons(ctx: RunContext, problem: KernelProblem) -> str:
    """Lessons recalled for this task from earlier runs, any agent (``kit.recall``)."""
    lines = [render_recalled(r, limit=300) for r in ctx.recalled]
    return "\n".join(lines) or "- none"

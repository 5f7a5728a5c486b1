"""Kernel Discovery: LLM-evolved GP kernels for high-dimensional Bayesian optimization.

The agent runs BO on an ``hdbo`` task; every ``refresh_every`` BO rounds it refreshes the
GP kernel by a short evolutionary search on the shared loop (population, selection by
leave-one-out CRPS on the BO data seen so far, mutation and crossover), and the
acquisition (qLogEI) uses the best kernel found.

Proposers:

- ``LLMKernelProposer`` works in two stages, as in the paper: one call proposes a novel
  *mathematical form* (shown the parents' forms and scores; mutation or crossover), a
  second call turns that form into code (``def kernel(x1, x2, params)`` plus
  ``HYPERPARAMETERS``), which is validated in the sandbox (symmetric, PSD, finite values
  and gradients, hyperparameter bound) and re-asked with the reason when invalid.
- ``CompositionalProposer`` (offline) is the classic compositional kernel search over base
  kernels with ``+`` and ``*`` (see ``grammar``).

Functional duplicates (kernels whose fitted, normalised Gram matrices agree on the data)
are counted per refresh and kept out of the carried population.

Selection margin: a refresh keeps the incumbent kernel (the previous refresh's choice,
RBF-ARD at round 0) unless the search's best beats the incumbent's LOO-CRPS by more than
``selection_margin * |incumbent|`` (selection on 10-25 points overfits).

Trust boundary: LLM-written kernel code never runs in this process. The parent handles it
as text, and as numbers computed by trusted code here or received from a harness program
the candidate runs in, inside the sandbox:

- validation for the re-ask loop: ``optiforge.solvers.gp.validate_cli`` in the sandbox
  (shipped with ``package_files``; its verdict only decides whether to re-ask);
- scoring: the hdbo harness (``evals.suites.hdbo.scoring``) fits the kernel in one sandbox
  run, has its Gram matrix computed in another (which never sees ``y``) and computes the
  LOO-CRPS itself from that matrix; a printed score is never read;
- BO with a selected LLM kernel: each round's GP fit and qLogEI optimisation run in one
  sandbox run (``harness/bo_round.py``, ``SandboxedKernel``); the loop gets back only the
  proposed points, checks them and evaluates the objective here.

Library kernels (the compositional grammar) are parsed by ``grammar`` (an AST whitelist of
base-kernel names, ``+`` and ``*``, no exec) and built here from library code. The prompt
shows the LLM the task's opaque ``agent_name`` and leak-free ``description`` only, never
the CLI id (``levy4_in_25``), the function, its effective dimensions or the embedding.

Resume: with a run directory, the BO loop appends each evaluation to
``bo_evaluations.jsonl`` and each refresh's search checkpoints under
``thread_id=refresh<round>``; ``--resume`` reloads the evaluations (the objective is not
called again for them), replays finished refreshes from their checkpoints and continues.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.kernel_discovery import grammar
from optiforge.agents.kit import Evaluated, Proposal, RunContext, SearchConfig, run_search
from optiforge.agents.kit.lineage import record_lesson
from optiforge.agents.spec import AgentOutcome, AgentSpec, Baseline
from optiforge.errors import ConfigError, InvalidCandidate
from optiforge.evals.protocol import Score
from optiforge.llm.structured import extract_code_block

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


class KernelDiscoveryConfig(BaseModel):
    """Options of the ``kernel-discovery`` agent."""

    model_config = ConfigDict(extra="forbid")

    refresh_every: int = Field(default=5, ge=1)
    """BO rounds between kernel refreshes (the kernel's hyperparameters are refitted every round)."""
    kernel_evals_per_refresh: int = Field(default=6, ge=1)
    """Kernel fits (LOO-CRPS scorings) per refresh, seeds included."""
    proposals_per_round: int = Field(default=3, ge=1)
    population_size: int = Field(default=6, ge=1)
    carry_over: int = Field(default=3, ge=0)
    """Best distinct kernels of a refresh re-scored as seeds of the next one."""
    seed_kernels: list[str] = Field(default_factory=lambda: ["RBF_ARD", "Matern52_ARD"])
    """Expressions every refresh starts from (RBF_ARD is always added: it is the reference)."""
    bases: list[str] = Field(
        default_factory=lambda: [
            "RBF",
            "RBF_ARD",
            "Matern12_ARD",
            "Matern32_ARD",
            "Matern52",
            "Matern52_ARD",
            "RQ",
            "RQ_ARD",
            "Periodic",
            "Linear",
        ]
    )
    """Base kernels the compositional search may use."""
    max_complexity: int = Field(default=3, ge=1)
    """Most base-kernel occurrences in one expression."""
    gp_restarts: int = Field(default=1, ge=1)
    """Random restarts of each kernel's marginal-likelihood fit."""
    max_code_reasks: int = Field(default=2, ge=0)
    """Re-asks when LLM kernel code fails validation."""
    dedup_tol: float = Field(default=2e-2, gt=0)
    """Max |difference| of normalised fitted Gram matrices for two kernels to be duplicates."""
    acq_restarts: int = Field(default=2, ge=1)
    acq_raw_samples: int = Field(default=64, ge=8)
    selection_margin: float = Field(default=0.0, ge=0.0)
    """Relative LOO-CRPS improvement over the incumbent kernel a new kernel needs to replace it."""


BO_EVALUATIONS = "bo_evaluations.jsonl"
"""The BO loop's evaluation log in the run directory (what ``--resume`` reloads)."""


# ----------------------------------------------------------------------------- evaluation


class KernelEvaluator:
    """Picklable: LOO-CRPS of one kernel payload on fixed data (runs in executor workers)."""

    def __init__(
        self,
        task: Any,
        X: torch.Tensor,
        y: torch.Tensor,
        *,
        seed: int,
        restarts: int,
        backend: str = "local",
        events_path: str | None = None,
    ) -> None:
        self.task, self.X, self.y = task, X, y
        self.seed, self.restarts = seed, restarts
        self.backend, self.events_path = backend, events_path

    def __call__(self, payload: dict[str, Any]) -> Score:
        if "expression" in payload:
            # Library kernels are trusted code: fitted in this process.
            spec = grammar.build_kernel(payload["expression"])
            return self.task.score_kernel(
                spec, self.X, self.y, seed=self.seed, n_restarts=self.restarts
            )
        from optiforge.runs import FileTracer
        from optiforge.sandboxes import get_sandbox

        tracer = FileTracer(self.events_path) if self.events_path else None
        sandbox = get_sandbox(self.backend, tracer=tracer)
        return self.task.score_kernel(
            {"source": payload["source"]},
            self.X,
            self.y,
            sandbox,
            seed=self.seed,
            n_restarts=self.restarts,
        )


class KernelSearchProblem:
    """One refresh: search kernels for the current BO data (`n x D` unit cube, `n` standardised)."""

    def __init__(
        self,
        task: Any,
        X: torch.Tensor,
        y: torch.Tensor,
        seeds: list[dict[str, Any]],
        config: KernelDiscoveryConfig,
        *,
        seed: int,
        events_path: str | None,
        backend: str = "local",
    ):
        self.task = task
        self.higher_is_better = False
        self.X, self.y = X, y
        self.seeds = seeds
        self.config = config
        self.seed = seed
        self.events_path = events_path
        self.backend = backend

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    def initial(self, ctx: RunContext) -> list[Proposal]:
        return [Proposal(payload=p, origin="seed") for p in self.seeds]

    def materialize(self, proposal: Proposal, ctx: RunContext) -> dict[str, Any]:
        p = proposal.payload
        if "expression" in p:
            expr = grammar.canonical(str(p["expression"]))
            n_hyp = grammar.build_kernel(expr).n_hyperparameters(self.d)
            if n_hyp > self.task.max_hyperparameters:
                raise InvalidCandidate(
                    f"{expr}: {n_hyp} hyperparameters > bound {self.task.max_hyperparameters} (d={self.d})"
                )
            return {"expression": expr}
        src = p.get("source")
        if not isinstance(src, str) or "def kernel" not in src or "HYPERPARAMETERS" not in src:
            raise InvalidCandidate(
                "kernel code must define kernel(x1, x2, params) and HYPERPARAMETERS"
            )
        # Text only here: parsing, validating and running it happen in the sandbox.
        return {"source": src, "form": str(p.get("form", ""))}

    def evaluator(self) -> Callable[[dict[str, Any]], Score]:
        return KernelEvaluator(
            self.task,
            self.X,
            self.y,
            seed=self.seed,
            restarts=self.config.gp_restarts,
            backend=self.backend,
            events_path=self.events_path,
        )

    def reflect(
        self, batch: list[Evaluated], population: list[Evaluated], ctx: RunContext
    ) -> list[str]:
        lessons = []
        for ev in batch:
            if "source" in ev.payload and ev.error:
                lessons.append(
                    f"LLM kernel form {ev.payload.get('form', '')[:120]!r} was rejected: {ev.error[:200]}"
                )
        return lessons


def describe(ev: Evaluated | dict[str, Any]) -> str:
    """Human-readable form of a kernel candidate."""
    p = ev.payload if isinstance(ev, Evaluated) else ev
    if "expression" in p:
        return str(p["expression"])
    return str(p.get("form") or "custom kernel")


# ----------------------------------------------------------------------------- proposers


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

    name: str
    form: str
    """The kernel as mathematics, e.g. ``k(x,x') = (1 + r^2/(2a))^-a * exp(-|x-x'|_1 / l)``."""
    rationale: str = ""


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
            form = self._form(problem, population, parents, op, ctx)
            src = self._code(problem, form, ctx)
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
        problem: Any,
        population: list[Evaluated],
        parents: list[Evaluated],
        op: str,
        ctx: RunContext,
    ) -> KernelForm:
        msg = form_prompt(problem, population, parents, op)
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
        src = ""
        assert ctx.llm is not None  # propose() refuses to run without an LLM
        for attempt in range(self.config.max_code_reasks + 1):
            reply = ctx.llm.complete(messages)
            src = extract_code_block(reply.text)
            reason = validate_source(
                src, int(problem.X.shape[1]), ctx, problem.task.max_hyperparameters
            )
            if reason is None:
                return src
            ctx.tracer.event("kernel_code_rejected", form=form.name, attempt=attempt, reason=reason)
            messages += [
                {"role": "assistant", "content": reply.text or ""},
                {
                    "role": "user",
                    "content": f"That code was rejected: {reason}. Fix it and reply with one ```python block.",
                },
            ]
        return src  # still invalid: the loop's evaluation rejects it and logs the reason


def _parents_text(parents: list[Evaluated]) -> str:
    return "\n".join(f"- {describe(p)}: LOO-CRPS {p.value:.4f}" for p in parents)


def form_prompt(
    problem: Any, population: list[Evaluated], parents: list[Evaluated], op: str
) -> str:
    """Stage-one prompt: the data's size, the scored kernels, the operation.

    Of the task it shows only ``agent_name`` and ``description`` (the input dimension);
    never ``task.name`` (the CLI id names the function) or ``task.hidden``.
    """
    n, d = problem.X.shape
    task = problem.task
    return (
        f"We run Bayesian optimization on a {d}-dimensional black-box function "
        f"(task {getattr(task, 'agent_name', '') or 'unnamed'}: {task.description}). A GP "
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


_SHIPPED = ("optiforge.errors", "optiforge.solvers.gp", "optiforge.solvers.bo")
"""The optiforge modules the sandboxed validator and BO round import (shipped as files)."""


_NUMERICS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "MKL_CBWR", "ATEN_CPU_CAPABILITY")
"""Host settings that pick BLAS code paths: passed on so a sandboxed round rounds as here."""


def _sandbox_env() -> dict[str, str]:
    import os

    return {"OMP_NUM_THREADS": "1", **{k: os.environ[k] for k in _NUMERICS_ENV if k in os.environ}}


def _sandbox_of(ctx: RunContext) -> Any:
    if ctx.sandbox is not None:
        return ctx.sandbox
    from optiforge.sandboxes import get_sandbox

    return get_sandbox("local")


def validate_source(src: str, d: int, ctx: RunContext, max_hyperparameters: int) -> str | None:
    """Run the kernel validator on ``src`` in the sandbox; the reason it fails, or None.

    Only decides whether to re-ask the LLM; scoring re-checks everything in the harness.
    """
    import sys

    from optiforge.sandboxes.payload import package_files

    if "def kernel" not in src:
        return "no `def kernel(x1, x2, params)` found in the reply"
    req = json.dumps({"source": src, "d": d, "max_hyperparameters": max_hyperparameters})
    res = _sandbox_of(ctx).run(
        f"{sys.executable} -m optiforge.solvers.gp.validate_cli < request.json",
        files={**package_files(*_SHIPPED), "request.json": req},
        timeout_s=120,
        env=_sandbox_env(),
    )
    if res.timed_out:
        return "validation timed out"
    try:
        rep = json.loads(res.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return f"validator crashed: {res.stderr[-300:]}"
    return None if rep.get("ok") else str(rep.get("reason", "rejected"))


# ----------------------------------------------------------------------------- dedup


def functional_clusters(evaluated: list[Evaluated], tol: float) -> list[list[Evaluated]]:
    """Group passing candidates whose fingerprints agree within ``tol`` (greedy, best first)."""
    clusters: list[tuple[torch.Tensor, list[Evaluated]]] = []
    for ev in sorted(
        [e for e in evaluated if e.passed and e.value is not None],
        key=lambda e: cast(float, e.value),  # None filtered out above
    ):
        fp = ev.details.get("fingerprint")
        if fp is None:
            clusters.append((torch.empty(0), [ev]))
            continue
        f = torch.tensor(fp, dtype=torch.float64)
        for ref, members in clusters:
            if ref.shape == f.shape and ref.numel() and float((ref - f).abs().max()) <= tol:
                members.append(ev)
                break
        else:
            clusters.append((f, [ev]))
    return [m for _, m in clusters]


# ----------------------------------------------------------------------------- the agent


def solve(
    task: Any, ctx: RunContext, config: BaseModel, budget: int | None, resume: bool
) -> AgentOutcome:
    """BO on an hdbo task with the kernel refreshed by evolutionary search every k rounds."""
    assert isinstance(config, KernelDiscoveryConfig)
    proposer: Any = (
        LLMKernelProposer(config) if ctx.llm is not None else CompositionalProposer(config)
    )
    return _discover(task, ctx, config, budget, resume, proposer)


def _discover(
    task: Any,
    ctx: RunContext,
    config: KernelDiscoveryConfig,
    budget: int | None,
    resume: bool,
    proposer: Any,
) -> AgentOutcome:
    from optiforge.solvers.bo import AcqConfig, BOLoop

    seeds = [
        {"expression": grammar.canonical(e)}
        for e in dict.fromkeys(["RBF_ARD", *config.seed_kernels])
    ]
    carried: list[dict[str, Any]] = []
    incumbent: dict[str, Any] = {"expression": "RBF_ARD"}
    refreshes: list[dict[str, Any]] = []
    events = str(ctx.run_dir / "events.jsonl") if ctx.run_dir else None
    progress, ctx.progress = ctx.progress, None  # the kernel searches' rounds are not BO progress
    total = budget or task.budget
    resume_path = ctx.run_dir / BO_EVALUATIONS if ctx.run_dir else None
    if resume_path is not None and resume_path.exists() and not resume:
        raise ConfigError(
            f"{ctx.run_dir} already holds BO evaluations; pass resume=True (--resume)"
        )

    def provider(Xu: torch.Tensor, y: torch.Tensor, rnd: int) -> Any:
        nonlocal carried, incumbent
        # The incumbent is always re-scored on the new data: the margin compares like with like.
        start = list(dict.fromkeys(map(_key, [*seeds, incumbent, *carried])))
        start_payloads = [json.loads(k) for k in start]
        problem = KernelSearchProblem(
            task,
            Xu.detach().clone(),
            y.detach().clone(),
            start_payloads,
            config,
            seed=ctx.seed,
            events_path=events,
        )
        search = SearchConfig(
            max_evaluations=max(config.kernel_evals_per_refresh, len(start)),
            proposals_per_round=config.proposals_per_round,
            population_size=config.population_size,
        )
        res = run_search(problem, proposer, ctx, search, thread_id=f"refresh{rnd}", resume=resume)
        clusters = functional_clusters(res.history, config.dedup_tol)
        distinct = [c[0] for c in clusters]
        ref = next(
            (e for e in res.history if e.payload.get("expression") == "RBF_ARD" and e.passed), None
        )
        inc = next(
            (e for e in res.history if e.payload == incumbent and e.passed and e.value is not None),
            None,
        )
        best = res.best
        chosen = select_kernel(best, inc, config.selection_margin)
        # Payloads, not identity: res.best and the history entries are separate objects.
        kept = chosen is not None and best is not None and chosen.payload != best.payload
        if chosen is not None:
            incumbent = chosen.payload
        # The chosen kernel heads the carried set (the final comparison refits carried[0]).
        rest = [ev.payload for ev in distinct if chosen is None or ev.payload != chosen.payload]
        head = [chosen.payload] if chosen is not None else []
        carried = (head + rest)[: max(config.carry_over, len(head))]
        info = {
            "round": rnd,
            "n_data": int(Xu.shape[0]),
            "evaluated": res.n_evaluations,
            "invalid": res.n_invalid,
            "syntactic_duplicates": res.n_duplicates,
            "functional_duplicates": sum(len(c) - 1 for c in clusters),
            "best": describe(chosen) if chosen else None,
            "best_loo_crps": chosen.value if chosen else None,
            "search_best": describe(best) if best else None,
            "search_best_loo_crps": best.value if best else None,
            "kept_incumbent": kept,
            "rbf_ard_loo_crps": ref.value if ref else None,
            "stop": res.stop_reason,
        }
        refreshes.append(info)
        ctx.tracer.event("kernel_refresh", **info)
        if progress is not None:
            progress({"evaluations": int(Xu.shape[0]), "best": None})
        if chosen is None:
            return grammar.build_kernel("RBF_ARD")
        return _spec_of(chosen.payload, ctx, acq)

    # BOLoop directly rather than task.run_bo: same settings, plus the resumable evaluation log.
    acq = AcqConfig(num_restarts=config.acq_restarts, raw_samples=config.acq_raw_samples)
    trace = BOLoop(
        task.problem(ctx.seed),
        budget=total,
        n_init=task.n_init,
        kernel_provider=provider,
        refresh_every=config.refresh_every,
        seed=ctx.seed,
        acq_config=acq,
        name="kernel-discovery",
        resume_path=resume_path,
    ).run()
    ctx.progress = progress
    if progress is not None:
        progress({"evaluations": int(trace.y.numel()), "best": trace.best_value})
    final = _final_comparison(task, trace, carried, ctx, config)
    _remember_lesson(task, ctx, refreshes, final)
    totals = {
        k: sum(r[k] for r in refreshes)
        for k in ("evaluated", "invalid", "syntactic_duplicates", "functional_duplicates")
    }
    return AgentOutcome(
        best_candidate={"X": trace.X.tolist(), "y": trace.y.tolist(), "name": trace.name},
        claimed_value=trace.best_value,
        trace=[float(v) for v in trace.best_trace.tolist()],
        n_evaluations=int(trace.y.numel()),
        stop_reason="evaluation budget spent",
        extra={
            "proposer": proposer.name,
            "refreshes": refreshes,
            "kernel_evaluations": totals,
            "final_kernel": refreshes[-1]["best"] if refreshes else None,
            "final_loo_crps": final,
            "kernels_used": sorted(set(trace.kernels)),
            "n_fallbacks": trace.n_fallbacks,
        },
    )


def _key(payload: dict[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True)


def select_kernel(
    best: Evaluated | None, incumbent: Evaluated | None, margin: float
) -> Evaluated | None:
    """The search's best unless it beats the incumbent's LOO-CRPS by no more than ``margin * |inc|``."""
    if incumbent is None or best is None or best.value is None or incumbent.value is None:
        return best or incumbent
    if best.value < incumbent.value - margin * abs(incumbent.value):
        return best
    return incumbent


def _spec_of(payload: dict[str, Any], ctx: RunContext, acq: Any) -> Any:
    """The BO loop's kernel: library kernels built here, LLM code as a ``SandboxedKernel``."""
    if "expression" in payload:
        return grammar.build_kernel(payload["expression"])
    return SandboxedKernel(payload["source"], describe(payload)[:160], _sandbox_of(ctx), acq)


class SandboxedKernel:
    """An LLM-written kernel as the BO loop sees it: source text and a sandboxed round.

    ``solvers.bo.loop`` calls ``propose_round`` instead of fitting the kernel itself: the
    GP fit and the qLogEI optimisation run in one sandbox run per round
    (``harness/bo_round.py``), with the same seeds as the in-process loop; only the
    proposed points come back (``candidate.npy``, loaded without pickle), and the loop
    checks them before it evaluates the objective here. Any failure is a ``SolverError``:
    the loop falls back to a random point and counts it.
    """

    def __init__(
        self, source: str, expression: str, sandbox: Any, acq: Any, *, timeout_s: float = 300.0
    ) -> None:
        self.source, self.expression = source, expression
        self.sandbox, self.acq, self.timeout_s = sandbox, acq, timeout_s

    def propose_round(
        self,
        Xu: torch.Tensor,
        target: torch.Tensor,
        rnd: int,
        *,
        fit_seed: int,
        round_seed: int,
        gp_restarts: int,
    ) -> Any:
        """`1 x D` proposed points for round ``rnd`` (``ProposedPoints``), computed in the sandbox."""
        import dataclasses
        import io
        import sys
        from pathlib import Path

        from optiforge.errors import SolverError
        from optiforge.sandboxes.payload import package_files
        from optiforge.solvers.bo.loop import ProposedPoints

        req = {
            "source": self.source,
            "X": Xu.tolist(),
            "target": target.tolist(),
            "fit_seed": fit_seed,
            "round_seed": round_seed,
            "gp_restarts": gp_restarts,
            "q": 1,
            "acq": dataclasses.asdict(self.acq),
        }
        program = (Path(__file__).parent / "harness" / "bo_round.py").read_text()
        res = self.sandbox.run(
            f"{sys.executable} bo_round.py",
            files={
                **package_files(*_SHIPPED),
                "bo_round.py": program,
                "request.json": json.dumps(req),
            },
            timeout_s=self.timeout_s,
            env=_sandbox_env(),
            collect=["candidate.npy"],
        )
        raw = res.files.get("candidate.npy")
        if res.timed_out or raw is None:
            tail = (res.stderr or "").strip().splitlines()[-1:] or [f"exit {res.returncode}"]
            why = "timed out" if res.timed_out else tail[0][:300]
            raise SolverError(f"sandboxed BO round with kernel {self.expression!r} failed: {why}")
        data = raw.encode("utf-8") if isinstance(raw, str) else raw
        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise SolverError(f"sandboxed BO round returned no numeric array: {e}") from e
        if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":
            raise SolverError("sandboxed BO round returned a non-float array")
        return ProposedPoints(torch.from_numpy(arr.astype(np.float64, copy=True)))


def _final_comparison(
    task: Any,
    trace: Any,
    carried: list[dict[str, Any]],
    ctx: RunContext,
    config: KernelDiscoveryConfig,
) -> dict[str, float | str | None]:
    """LOO-CRPS of the discovered kernel vs RBF-ARD on the final BO data (same data, same fit)."""
    from optiforge.solvers.bo.loop import standardize

    bounds = task.problem(0).bounds
    lo, hi = (
        torch.as_tensor(bounds[0], dtype=torch.float64),
        torch.as_tensor(bounds[1], dtype=torch.float64),
    )
    Xu = (trace.X - lo) / (hi - lo)
    y = standardize(trace.y)
    ev = KernelEvaluator(
        task,
        Xu,
        y,
        seed=ctx.seed,
        restarts=config.gp_restarts,
        events_path=str(ctx.run_dir / "events.jsonl") if ctx.run_dir else None,
    )
    out: dict[str, float | str | None] = {}
    rbf = ev({"expression": "RBF_ARD"})
    out["RBF_ARD"] = rbf.value if rbf.passed else None
    best = carried[0] if carried else {"expression": "RBF_ARD"}
    disc = ev(best)
    out["discovered"] = disc.value if disc.passed else None
    out["discovered_kernel"] = describe(best)
    return out


def _remember_lesson(
    task: Any, ctx: RunContext, refreshes: list[dict[str, Any]], final: dict[str, Any]
) -> None:
    if ctx.memory is None or not refreshes:
        return

    d, r = final.get("discovered"), final.get("RBF_ARD")
    better = d is not None and r is not None and d < r
    lesson = (
        f"On {task.suite}/{_agent_name(task)} ({task.description}) the kernel {final.get('discovered_kernel')} "
        f"{'beat' if better else 'did not beat'} RBF_ARD by LOO-CRPS on the final BO data "
        f"({_fmt(d)} vs {_fmt(r)})."
    )
    summary = "; ".join(
        f"round {x['round']}: {x['best']} ({_fmt(x['best_loo_crps'])})" for x in refreshes
    )
    record_lesson(
        ctx,
        agent="kernel-discovery",
        task=f"{task.suite}/{_agent_name(task)}",
        trajectory_summary=summary,
        outcome="better than RBF_ARD" if better else "no better than RBF_ARD",
        score=d,
        lesson=lesson,
        tags=["kernel-discovery", task.suite],
    )


def _agent_name(task: Any) -> str:
    # Lessons may reach later prompts: the opaque name, never the CLI id that names the function.
    return str(getattr(task, "agent_name", "") or "task")


def _fmt(v: Any) -> str:
    return f"{v:.4f}" if isinstance(v, float) and math.isfinite(v) else "n/a"


# ----------------------------------------------------------------------------- baselines


def _bo_baseline(name: str) -> Baseline:
    def run(task: Any, ctx: RunContext, budget: int | None, config: Any = None) -> AgentOutcome:
        from optiforge.solvers.bo import AcqConfig, run_baseline

        trace = run_baseline(
            name,
            task.problem(ctx.seed),
            budget or task.budget,
            ctx.seed,
            n_init=task.n_init,
            acq_config=AcqConfig(num_restarts=2, raw_samples=64),
        )
        return AgentOutcome(
            best_candidate={"X": trace.X.tolist(), "y": trace.y.tolist(), "name": name},
            claimed_value=trace.best_value,
            trace=[float(v) for v in trace.best_trace.tolist()],
            n_evaluations=int(trace.y.numel()),
            stop_reason="baseline",
        )

    run.__name__ = f"baseline_{name}"
    return run


def compositional_baseline(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """The classic compositional kernel search in the same loop (no LLM, whatever --model says)."""
    config = KernelDiscoveryConfig()
    return _discover(task, ctx, config, budget, False, CompositionalProposer(config))


def _baselines() -> dict[str, Baseline]:
    names = ["gp_rbf_ard", "random", "sobol", "gp_matern52_ard", "gp_rq", "vanilla_bo", "turbo"]
    out = {n: _bo_baseline(n) for n in names}
    out["compositional"] = compositional_baseline
    return out


def summary_notes(rows: list[dict[str, Any]]) -> list[str]:
    """Report lines: discovered kernel vs RBF-ARD by LOO-CRPS, and duplicate counts."""
    mine = [r for r in rows if r.get("method") == "kernel-discovery" and r.get("extra")]
    if not mine:
        return []
    in_sample = out_sample = n_out = 0
    n_refresh = 0
    per_task: dict[str, list[bool]] = {}
    dup = {"evaluated": 0, "functional_duplicates": 0, "syntactic_duplicates": 0, "invalid": 0}
    for r in mine:
        ex = r["extra"]
        for ref in ex.get("refreshes", []):
            if ref.get("best_loo_crps") is not None and ref.get("rbf_ard_loo_crps") is not None:
                n_refresh += 1
                in_sample += ref["best_loo_crps"] < ref["rbf_ard_loo_crps"] - 1e-12
        fin = ex.get("final_loo_crps") or {}
        if fin.get("discovered") is not None and fin.get("RBF_ARD") is not None:
            n_out += 1
            win = fin["discovered"] < fin["RBF_ARD"]
            out_sample += win
            per_task.setdefault(r["task"], []).append(win)
        for k in dup:
            dup[k] += int((ex.get("kernel_evaluations") or {}).get(k, 0))
    majority = sum(1 for v in per_task.values() if sum(v) > len(v) / 2)
    return [
        f"Kernel selection (LOO-CRPS, lower is better): at {in_sample} of {n_refresh} refreshes the "
        "selected kernel beat RBF-ARD on the data it was selected on (RBF-ARD is always a candidate, so "
        "ties mean RBF-ARD won).",
        f"Out of sample: the last selected kernel, refitted on the final BO data it was not selected on, "
        f"beat RBF-ARD's LOO-CRPS in {out_sample} of {n_out} runs; on {majority} of {len(per_task)} tasks "
        "in most seeds.",
        f"Kernel proposals evaluated: {dup['evaluated']}; functional duplicates (fitted normalised Gram "
        f"matrices within the dedup tolerance) {dup['functional_duplicates']}; syntactic duplicates skipped "
        f"{dup['syntactic_duplicates']}; invalid {dup['invalid']}.",
    ]


SPEC = AgentSpec(
    name="kernel-discovery",
    description="LLM-evolved GP kernels for high-dimensional BO (offline: compositional kernel search)",
    config_model=KernelDiscoveryConfig,
    solve=solve,
    default_benchmark="hdbo",
    baselines=_baselines(),
    default_budget=30,
    offline_equivalent="compositional",
    summary_notes=summary_notes,
)

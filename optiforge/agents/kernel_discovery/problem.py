"""Kernel Discovery's domain: the graph's state, one kernel refresh as a search problem,
and its sandbox glue.

``DiscoveryState`` is what the graph checkpoints (``nodes.py`` reads and writes it);
``KernelSearchProblem`` is one refresh's search (kernels for the current BO data);
``KernelEvaluator`` scores a kernel payload by held-out (k-fold, refit per fold) CRPS or
LOO-CRPS (library kernels in process, LLM code through the hdbo harness in the sandbox); ``validate_source`` runs the kernel
validator in the sandbox for the re-ask loop; ``SandboxedKernel`` is an LLM kernel as a BO
round sees it (``spec_of``); ``functional_clusters`` groups functional duplicates.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict, cast

import numpy as np
import torch

from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kit import Evaluated, Proposal, RunContext
from optiforge.agents.kit.lineage import Lesson
from optiforge.errors import InvalidCandidate, SolverError
from optiforge.evals.protocol import Score
from optiforge.evals.suites.hdbo.protocol import HDBOTask
from optiforge.memory.provenance import quote_untrusted
from optiforge.solvers.gp import grammar

if TYPE_CHECKING:  # BoTorch loads with the first BO round, not with the agent's spec
    from optiforge.sandboxes.base import Sandbox
    from optiforge.solvers.bo.loop import AcqConfig, ProposedPoints
    from optiforge.solvers.gp.kernels import KernelSpec

BO_EVALUATIONS = "bo_evaluations.jsonl"
"""The BO session's evaluation log in the run directory: each evaluation as soon as the
objective returns (a resume reads back one that a killed node finished)."""

CHECKPOINTS = "kernel_discovery_checkpoints.sqlite"
"""The agent graph's checkpoints (each refresh's search checkpoints in ``checkpoints.sqlite``)."""
THREAD_ID = "kernel_discovery"


class DiscoveryState(TypedDict, total=False):
    """Serializable graph state: the BO session's rows and the kernel search's record."""

    bo: list[dict[str, Any]]
    """``BOSession.rows``: the initial design, then one row per BO round."""
    kernel: dict[str, Any] | None
    """The payload of the kernel BO rounds use (None until a refresh succeeds)."""
    refresh_failed: int | None
    """The round whose refresh raised: that round is a fallback (the loop's rule)."""
    incumbent: dict[str, Any]
    carried: list[dict[str, Any]]
    refreshes: list[dict[str, Any]]
    final: dict[str, Any]
    offline: bool
    """Refresh with the compositional search whatever the run's LLM (the
    ``compositional`` baseline); absent: the LLM proposer when the run has an LLM."""


# ----------------------------------------------------------------------------- evaluation


class KernelEvaluator:
    """Picklable: the selection score of one kernel payload on fixed data (runs in executor workers).

    Without ``heldout`` the score is the LOO-CRPS (hyperparameters at the full-data fit);
    with test-index sets (``kfold_splits``) it is the mean held-out CRPS, each set predicted
    with hyperparameters fitted without it (``hdbo.scoring.heldout_score``). Either way
    ``complexity_penalty`` multiplies the value by ``1 + penalty * (groups - 1)``
    (``hyperparameter_groups``); the unpenalised value stays in ``metrics["unpenalized"]``.
    """

    def __init__(
        self,
        task: HDBOTask,
        X: torch.Tensor,
        y: torch.Tensor,
        *,
        seed: int,
        restarts: int,
        backend: str = "local",
        events_path: str | None = None,
        heldout: list[list[int]] | None = None,
        complexity_penalty: float = 0.0,
    ) -> None:
        self.task, self.X, self.y = task, X, y
        self.seed, self.restarts = seed, restarts
        self.backend, self.events_path = backend, events_path
        self.heldout, self.complexity_penalty = heldout, complexity_penalty

    def __call__(self, payload: dict[str, Any]) -> Score:
        if "expression" in payload:
            # Library kernels are trusted code: fitted in this process.
            spec = grammar.build_kernel(payload["expression"])
            score = self.task.score_kernel(
                spec, self.X, self.y, seed=self.seed, n_restarts=self.restarts,
                heldout=self.heldout,
            )  # fmt: skip
            return self._penalized(score, len(spec.hyperparameters))
        from optiforge.runs import FileTracer
        from optiforge.sandboxes import get_sandbox

        tracer = FileTracer(self.events_path) if self.events_path else None
        # local: the suite makes its own (warm) sandbox for its many Gram-oracle rounds
        sandbox = None if self.backend == "local" else get_sandbox(self.backend, tracer=tracer)
        score = self.task.score_kernel(
            {"source": payload["source"]},
            self.X,
            self.y,
            sandbox,
            seed=self.seed,
            n_restarts=self.restarts,
            heldout=self.heldout,
            tracer=tracer,
        )
        return self._penalized(score, len(score.details.get("params") or {}))

    def _penalized(self, score: Score, groups: int) -> Score:
        if not score.passed:
            return score
        score.metrics["unpenalized"] = score.value
        score.metrics["hyperparameter_groups"] = float(groups)
        score.value = score.value * (1.0 + self.complexity_penalty * max(0, groups - 1))
        return score


def selection_splits(n: int, config: KernelDiscoveryConfig, seed: int) -> list[list[int]] | None:
    """The held-out sets a refresh scores every candidate on (None: ``loo`` scoring)."""
    if config.selection_score == "loo":
        return None
    from optiforge.solvers.gp.folds import kfold_splits

    return kfold_splits(n, config.selection_folds, seed)


class KernelSearchProblem:
    """One refresh: search kernels for the current BO data (`n x D` unit cube, `n` standardised)."""

    def __init__(
        self,
        task: HDBOTask,
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
        self.recalled: list[dict[str, Any]] = []
        """The payloads among ``seeds`` that came from memory (``memory_kernels``)."""

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    def initial(self, ctx: RunContext) -> list[Proposal]:
        # recalled kernels (``memory_kernels``) arrive in ``seeds`` at the first refresh
        # only, with evaluations of their own: scored like any seed, never forced
        return [
            Proposal(payload=p, origin="memory" if p in self.recalled else "seed")
            for p in self.seeds
        ]

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
            heldout=selection_splits(int(self.X.shape[0]), self.config, self.seed),
            complexity_penalty=self.config.complexity_penalty,
        )

    def reflect(
        self, batch: list[Evaluated], population: list[Evaluated], ctx: RunContext
    ) -> list[Lesson]:
        lessons = []
        for ev in batch:
            if "source" in ev.payload and ev.error:
                # the error is the sandboxed kernel code's output: candidate provenance
                lessons.append(Lesson(
                    text=f"LLM kernel form {ev.payload.get('form', '')[:120]!r} was rejected: {ev.error[:200]}",
                    provenance="candidate"))  # fmt: skip
        return lessons


def memory_kernels(
    ctx: RunContext, task: HDBOTask, have: list[dict[str, Any]], k: int = 4
) -> list[dict[str, Any]]:
    """Kernels earlier Kernel Discovery runs on related tasks ended on (``kernel=`` tags of
    their lessons), as payloads not in ``have``.

    Only trusted lessons (``measured`` / ``agent`` provenance) of ``kernel-discovery`` runs
    on a task with the same input dimension whose kernel beat RBF-ARD on that run's final
    data count: a record of unknown or candidate origin
    never picks what this run evaluates, and the dimension is the one task feature an
    agent may see (every hdbo description differs only in it)."""
    from optiforge.agents.kit.recall import recall
    from optiforge.memory.provenance import TRUSTED

    dim = f"of {task.dim} inputs"
    seen = {json.dumps(p, sort_keys=True) for p in have}
    out: list[dict[str, Any]] = []
    for r in recall(ctx, task, k, provenance=TRUSTED):
        text = str(r.get("lesson", ""))
        # "did not beat": a record written before only winners were tagged
        if r.get("agent") != "kernel-discovery" or dim not in text or "did not beat" in text:
            continue
        for tag in r.get("tags", []):
            if tag.startswith("kernel="):
                payload = {"expression": grammar.canonical(tag.removeprefix("kernel="))}
                if json.dumps(payload, sort_keys=True) not in seen:
                    seen.add(json.dumps(payload, sort_keys=True))
                    out.append(payload)
    return out


def describe(ev: Evaluated | dict[str, Any]) -> str:
    """Human-readable form of a kernel candidate."""
    p = ev.payload if isinstance(ev, Evaluated) else ev
    if "expression" in p:
        return str(p["expression"])
    return str(p.get("form") or "custom kernel")


# ----------------------------------------------------------------------------- sandbox


_SHIPPED = ("optiforge.errors", "optiforge.solvers.gp", "optiforge.solvers.bo")
"""The optiforge modules the sandboxed validator and BO round import (shipped as files)."""


_NUMERICS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "MKL_CBWR", "ATEN_CPU_CAPABILITY")
"""Host settings that pick BLAS code paths: passed on so a sandboxed round rounds as here."""


def _sandbox_env() -> dict[str, str]:
    import os

    return {"OMP_NUM_THREADS": "1", **{k: os.environ[k] for k in _NUMERICS_ENV if k in os.environ}}


def _sandbox_of(ctx: RunContext) -> Sandbox:
    if ctx.sandbox is not None:
        return ctx.sandbox
    from optiforge.sandboxes import get_sandbox

    return get_sandbox("local")


def spec_of(
    payload: dict[str, Any], ctx: RunContext, acq: AcqConfig
) -> KernelSpec | SandboxedKernel:
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
        self,
        source: str,
        expression: str,
        sandbox: Sandbox,
        acq: AcqConfig,
        *,
        timeout_s: float = 300.0,
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
    ) -> ProposedPoints:
        """`1 x D` proposed points for round ``rnd`` (``ProposedPoints``), computed in the sandbox."""
        import dataclasses
        import io
        import sys
        from pathlib import Path

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
    # Everything below comes out of a process that ran the candidate's code (which can
    # print, raise, or write the report line itself): candidate output, shown quoted.
    try:
        rep = json.loads(res.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return "the validator crashed; its stderr:\n" + quote_untrusted(res.stderr[-300:])
    if not isinstance(rep, dict):
        return "the validator wrote no report"
    if rep.get("ok") is True:
        return None
    return "the sandboxed validator's reason:\n" + quote_untrusted(
        str(rep.get("reason", "rejected"))
    )


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

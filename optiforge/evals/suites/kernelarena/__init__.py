"""``kernelarena``: 26 Triton kernel tasks (triton2triton and torch2triton) with an anti-cheat harness.

A candidate is ``{"code": <Triton source defining launch(*inputs) -> Tensor>, ...}``.
``KernelTask.evaluate`` never trusts the agent:

1. static checks (:mod:`.static_checks`): parse, entry point, no torch compute ops, no
   timer/harness access, no monkeypatching;
2. a fresh sandbox work dir holding only the harness files (``harness.py``,
   ``references.py``, ``spec.json``, the trusted starting kernel) and the candidate;
   sha256 of every harness file is recorded before and re-checked after the run;
3. inside the sandbox (:mod:`.harness`): seeded inputs for every case x seed, a torch
   tripwire, input-mutation hashes, aliasing/cached-output checks, dtype-aware
   tolerances plus a relative-norm bound, constant/zero output rejection, timer
   identity checks, and on CUDA paired/interleaved timing whose outputs are validated.

Splits: ``dev`` (small shapes the agent sees) and ``heldout`` (unseen shapes: other
sizes, non-power-of-two, strided / transposed layouts). On held-out cases the score
reports conditional correctness P(candidate correct | reference correct). Without a
GPU the value is correctness-only (1.0 when every case passes) and the summary says
performance was not measured.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from optiforge.errors import ConfigError, InvalidCandidate
from optiforge.evals.protocol import Score
from optiforge.evals.suites.kernelarena.specs import SPECS, Case, TaskSpec
from optiforge.evals.suites.kernelarena.static_checks import check_candidate_source
from optiforge.evals.suites.kernelarena.templates import TEMPLATES, render

_HERE = Path(__file__).parent
HARNESS_FILES = ("harness.py", "references.py")
NOT_MEASURED = "not measured without GPU"


def _sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def cuda_available() -> bool:
    """True when the evaluating machine has CUDA (imports torch)."""
    import torch

    return bool(torch.cuda.is_available())


class KernelTask:
    """One KernelArena task bound to a split."""

    suite = "kernelarena"
    higher_is_better = True

    def __init__(
        self, spec: TaskSpec, split: str, timeout_s: float = 240.0, memory_mb: int = 6144
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.split = split
        self.family = spec.family
        self.op = spec.op
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        # Honest metric name: without CUDA the value is correctness only (1.0 = all cases pass).
        self.metric = "speedup" if cuda_available() else "correct_no_gpu"
        self.cases: list[Case] = spec.dev if split == "dev" else spec.heldout
        seed_body = render(spec.op, {})
        self.seed_code = seed_body
        self.param_space: dict[str, tuple[Any, ...]] = dict(TEMPLATES[spec.op][2])
        shapes = "; ".join(f"{c.shape} {c.dtype}" for c in spec.dev)
        self.description = (
            f"[{spec.family}] {spec.description} Entry point: `def launch(*inputs) -> torch.Tensor` taking the "
            f"inputs positionally and returning a fresh output tensor. Dev shapes: {shapes}. "
            "Held-out shapes differ (non-power-of-two sizes, strided and transposed inputs): do not special-case shapes."
        )

    def for_split(self, split: str) -> KernelTask:
        """The same task bound to another split (agents search on ``dev``, verified on ``heldout``)."""
        return KernelTask(self.spec, split, self.timeout_s, self.memory_mb)

    # -- the harness -------------------------------------------------------------

    def harness_files(self, *, timing: bool) -> dict[str, str]:
        """The files copied into each fresh sandbox work dir (besides the candidate)."""
        files = {name: (_HERE / name).read_text() for name in HARNESS_FILES}
        spec = {
            "op": self.op,
            "family": self.family,
            "cases": [c.model_dump(mode="json") for c in self.cases],
            "tolerances": {k: list(v) for k, v in self.spec.tolerances.items()},
            "rel_norm": self.spec.rel_norm,
            "timing": self.spec.timing if timing else None,
            # Held-out triton2triton cases also run the starting kernel: P(cand ok | ref ok).
            "reference_kernel": self.family == "triton2triton" and (self.split != "dev" or timing),
        }
        files["spec.json"] = json.dumps(spec, indent=1)
        # The sandbox does not see the project: kernels import ``optiforge.kernels``
        # (the library kernels candidates build on), shipped as files of the run.
        from optiforge.sandboxes.payload import package_files

        files.update(package_files("optiforge.kernels"))
        if spec["reference_kernel"]:
            files["reference_kernel.py"] = self.seed_code
        return files

    def evaluate(
        self, candidate: Any, sandbox: Any | None = None, *, static_checks: bool = True
    ) -> Score:
        """Score a candidate ``{"code": ...}`` (or bare source) in a fresh sandbox run.

        static_checks: False only in tests that exercise the run-time defences alone.
        """
        code = candidate.get("code") if isinstance(candidate, dict) else candidate
        if static_checks:
            try:
                check_candidate_source(code if isinstance(code, str) else "")
            except InvalidCandidate as err:
                return Score(value=0.0, passed=False, metrics={"correctness": 0.0},
                             details={"reason": f"static check: {err}", "stage": "static"})  # fmt: skip
        if sandbox is None:
            from optiforge.sandboxes import get_sandbox

            sandbox = get_sandbox("local")
        gpu = cuda_available()
        files = self.harness_files(timing=gpu)
        files["candidate.py"] = str(code)
        guarded = {k: _sha(v) for k, v in files.items() if k != "candidate.py"}
        env = {} if gpu else {"TRITON_INTERPRET": "1"}
        res = sandbox.run([sys.executable, "harness.py"], files=dict[str, str | bytes](files), timeout_s=self.timeout_s,
                          memory_mb=self.memory_mb, env=env, collect=[*guarded, "result.json"])  # fmt: skip
        metrics: dict[str, float] = {"sandbox_s": float(res.duration_s)}
        fail = self._fail
        if res.timed_out:
            return fail(metrics, f"timed out after {self.timeout_s:.0f} s", "run")
        for name, digest in guarded.items():
            back = res.files.get(name)
            if back is None or _sha(back) != digest:
                return fail(
                    metrics,
                    f"harness file {name} was modified or removed during the run (hash guard)",
                    "hash",
                )
        raw = res.files.get("result.json")
        if raw is None:
            tail = (res.stderr or "")[-400:]
            return fail(
                metrics, f"no result from the harness (exit {res.returncode}): {tail}", "run"
            )
        try:
            result = json.loads(raw)
        except json.JSONDecodeError:
            return fail(metrics, "harness result is not JSON", "run")
        return self._score(result, metrics, gpu)

    @staticmethod
    def _fail(metrics: dict[str, float], reason: str, stage: str) -> Score:
        return Score(value=0.0, passed=False, metrics={**metrics, "correctness": 0.0},
                     details={"reason": reason, "stage": stage, "performance": NOT_MEASURED})  # fmt: skip

    def _score(self, result: dict[str, Any], metrics: dict[str, float], gpu: bool) -> Score:
        if result.get("fatal"):
            return self._fail(metrics, str(result["fatal"]), "compile")
        cases = result.get("cases") or []
        expected = sum(len(c.seeds) for c in self.cases)
        if len(cases) != expected:
            return self._fail(metrics, f"harness ran {len(cases)} of {expected} cases", "run")
        n_ok = sum(1 for c in cases if c["ok"])
        ref_ok = [c for c in cases if c.get("ref_ok")]
        metrics.update(
            correctness=n_ok / len(cases), n_cases=float(len(cases)), n_correct=float(n_ok)
        )
        if ref_ok:
            metrics["conditional_correctness"] = sum(1 for c in ref_ok if c["ok"]) / len(ref_ok)
        failures = [
            f"{c['shape']} {c['dtype']} seed {c['seed']}: {c['reason']}"
            for c in cases
            if not c["ok"]
        ]
        details: dict[str, Any] = {"failures": failures[:5], "split": self.split}
        timing = result.get("timing") or {}
        if failures:
            details.update(reason=failures[0], stage="correctness", performance=NOT_MEASURED)
            return Score(value=0.0, passed=False, metrics=metrics, details=details)
        if not gpu:
            details["performance"] = NOT_MEASURED
            # Correctness-only value: performance cannot be measured under the interpreter.
            return Score(value=1.0, passed=True, metrics=metrics, details=details)
        if timing.get("status") != "measured":
            details.update(
                reason=f"timing: {timing.get('reason', timing.get('status'))}", stage="timing"
            )
            return Score(value=0.0, passed=False, metrics=metrics, details=details)
        metrics.update(speedup=float(timing["speedup"]), reference_ms=float(timing["reference_ms"]),
                       candidate_ms=float(timing["candidate_ms"]))  # fmt: skip
        details["performance"] = (
            f"paired CUDA-event median of {timing['samples']} samples vs {timing['baseline']}"
        )
        return Score(value=float(timing["speedup"]), passed=True, metrics=metrics, details=details)


class KernelArenaBenchmark:
    """The ``kernelarena`` suite."""

    name = "kernelarena"
    splits = ("dev", "heldout")
    description = (
        "Triton kernel optimisation (triton2triton, torch2triton) with an anti-cheat harness"
    )

    def tasks(self, split: str = "dev") -> list[KernelTask]:
        if split not in self.splits:
            raise ConfigError(
                f"kernelarena has no split {split!r} (choose from {', '.join(self.splits)})"
            )
        return [KernelTask(s, split) for s in SPECS]

    def suite_metrics(self, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Per method: correctness, conditional correctness and (GPU) fast_p / clipped geomean speedup."""
        by_method: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_method.setdefault(str(r.get("method")), []).append(r)
        return {m: aggregate(rs) for m, rs in by_method.items()}

    def notes(self, split: str, settings: Any = None) -> list[str]:
        """Lines for the eval summary (the runner's ``summary["notes"]``); ``settings`` is unused."""
        out = [f"kernelarena/{split}: correctness = fraction of case x seed runs correct; "
               "conditional_correctness = P(candidate correct | reference correct) per case (in Score.metrics)."]  # fmt: skip
        if not cuda_available():
            out.append(
                "Performance: not measured without GPU (values are correctness-only: 1.0 = all cases correct)."
            )
        return out


def clipped_geomean_speedup(
    speedups: list[float | None], lo: float = 0.1, hi: float = 10.0
) -> float:
    """Geometric mean of per-task speedups clipped to [lo, hi]; an incorrect task (None) counts as ``lo``.

    Clipping keeps one outlier (or one exploited task) from dominating the mean.
    """
    if not speedups:
        return math.nan
    vals = [min(max(s, lo), hi) if s is not None and math.isfinite(s) else lo for s in speedups]
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def fast_p(speedups: list[float | None], p: float = 1.0) -> float:
    """KernelBench fast_p: fraction of tasks that are correct AND faster than ``p`` x the baseline."""
    if not speedups:
        return math.nan
    return sum(1 for s in speedups if s is not None and s > p) / len(speedups)


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Suite metrics from runner rows (``results.jsonl``) of one method.

    Returns correctness (fraction of tasks verified), mean conditional correctness, and —
    only when timings exist — fast_p (p = 1.0, 1.5) and the clipped geomean speedup.
    """
    if not rows:
        return {}
    verified = [bool(r.get("verified")) for r in rows]
    cond = [r["verification"]["metrics"]["conditional_correctness"] for r in rows
            if r.get("verification", {}).get("metrics", {}).get("conditional_correctness") is not None]  # fmt: skip
    speedups = [
        r.get("verification", {}).get("metrics", {}).get("speedup") if r.get("verified") else None
        for r in rows
    ]
    out: dict[str, Any] = {"correctness": sum(verified) / len(rows),
                           "conditional_correctness": sum(cond) / len(cond) if cond else None}  # fmt: skip
    if any(s is not None for s in speedups):
        out.update(fast_1=fast_p(speedups, 1.0), fast_1_5=fast_p(speedups, 1.5),
                   geomean_speedup=clipped_geomean_speedup(speedups))  # fmt: skip
    else:
        out["performance"] = NOT_MEASURED
    return out


__all__ = [
    "KernelArenaBenchmark",
    "KernelTask",
    "aggregate",
    "clipped_geomean_speedup",
    "fast_p",
    "SPECS",
]

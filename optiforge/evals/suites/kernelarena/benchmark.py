"""``kernelarena``: 26 Triton kernel tasks (triton2triton and torch2triton) with an anti-cheat harness.

A candidate is ``{"code": <Triton source defining launch(*inputs) -> Tensor>, ...}``.
``KernelTask.evaluate`` never trusts the agent, and never trusts the candidate's process:

1. static checks (:mod:`optiforge.kernels.checks`): an allow-list grammar (Triton kernels and
   one launch path of allocations, grid arithmetic and kernel launches; see its docstring),
   so no host compute, no timer/harness access, no monkeypatching (the run-time guards
   below do not rely on it);
2. the parent generates every input from a seed and computes the reference itself
   (:mod:`.judge`, :mod:`.references`);
3. a **candidate run**: a fresh sandbox work dir with the runner (:mod:`.runner`), the
   inputs, ``optiforge.kernels`` and the candidate, *not* the references. The runner
   loads before the candidate, guards it (audit hook, dispatcher-level denial of torch
   compute, tripwire, mutation/aliasing/timer checks) and only saves the output tensors
   (and, on a GPU, timings of samples it took);
4. a **baseline run** (only when needed) with trusted code alone: the starting kernel's
   outputs for held-out triton2triton cases (conditional correctness), and on a GPU
   the baseline timings, the reference outputs of the timing inputs and a device
   calibration;
5. the parent checks the sha256 of every shipped harness file after each run, accepts
   ``out.meta`` only with the run's nonce, loads tensors with ``weights_only=True``,
   validates and compares them, and bounds any timing (:func:`.judge.timing_verdict`).
   A ``result.json`` (or anything else a candidate writes) is never read.

Splits: ``dev`` (small shapes the agent sees) and ``heldout`` (unseen shapes: other
sizes, non-power-of-two, strided / transposed layouts). On held-out cases the score
reports conditional correctness P(candidate correct | reference correct).

Without a GPU nothing is timed. The runner counts, under the interpreter, each launch's
requested bytes, ``tl.dot`` FLOPs and launches (:mod:`optiforge.kernels.traffic`; kernel
code that touches the counter is refused), and a correct candidate's value is its
**cost-model speedup** over the task's starting kernel (``seed_code``, counted the same
way in a trusted run): the estimated time of each at the task's timing shape, from the
traffic counted on each dev case and carried there by a tile/launch model
(``traffic.cost_estimate``, target sm90: a matmul's loads per FLOP, so tile sizes change
the re-reads of A and B); the value is the worst ratio over the task's counting cases
(``Case.cost``, shapes that are multiples of every tile; every dev case where a task has
none) (:func:`cost_over_cases`). It is a model, named ``cost_speedup`` (GPU runs report
measured ``speedup``), and tells kernels apart by re-reads, padding and launch count, not
by anything a cache or the hardware decides: tile order (``GROUP_M``), ``num_warps`` and
``num_stages`` do not change it.
"""

from __future__ import annotations

import json
import math
import secrets
import sys
from pathlib import Path
from typing import Any

from optiforge.errors import ConfigError, InvalidCandidate
from optiforge.evals.protocol import Score, SuiteHooks
from optiforge.evals.suites.kernelarena import judge
from optiforge.evals.suites.kernelarena.specs import SPECS, Case, TaskSpec
from optiforge.kernels.checks import check_candidate_source
from optiforge.kernels.templates import TEMPLATES, render

_HERE = Path(__file__).parent
RUNNER = "runner.py"
NOT_MEASURED = "not measured without GPU"


_SEED_TRAFFIC: dict[tuple[str, str, str], list[dict[str, float]]] = {}
"""(task, split, sha of the starting kernel) -> its per-case traffic counts (trusted runs)."""
_TARGET: dict[str, tuple[float, float]] = {}
"""task -> (flops, bytes) it must do at its timing shape."""


def cuda_available() -> bool:
    """True when the evaluating machine has CUDA (imports torch)."""
    import torch

    return bool(torch.cuda.is_available())


def cost_over_cases(rows: list[dict[str, float]], seed_rows: list[dict[str, float]],
                    bounds: list[tuple[float, float]], target: tuple[float, float],
                    decide: list[bool] | None = None) -> tuple[dict[str, float], str | None]:  # fmt: skip
    """Cost-model metrics over every dev case (or why there are none).

    rows, seed_rows: the candidate's and the starting kernel's counts per case;
    bounds: ``(bytes, flops)`` the op must do on each case; target: ``(flops, bytes)`` at
    the timing shape. Each case gives its own estimate of both kernels at the target
    shape; the candidate's ``cost_speedup`` is its *worst* case's ratio (a launch that is
    cheaper on one shape than on the others gains nothing), and the other metrics are
    those of that case. A case without a Triton launch is a failure, not a free case.

    decide: which cases decide (the counting cases, ``Case.cost``: shapes that are multiples
    of every tile, where re-reads are counted as they are at the timing shape; on smaller
    cases a tile wider than the shape hides its re-reads). None or no True: every case.
    ``cost_speedup_geomean`` is over every case either way."""
    from optiforge.kernels.traffic import cost_estimate

    worst: tuple[float, int, dict[str, float], dict[str, float]] | None = None
    ratios = []
    deciders = decide if decide is not None and any(decide) else [True] * len(rows)
    if len(deciders) != len(rows):
        raise ValueError(f"decide has {len(deciders)} flags for {len(rows)} cases")
    for k, (row, seed_row, (nbytes, flops)) in enumerate(zip(rows, seed_rows, bounds, strict=True)):
        compulsory = (flops, nbytes)
        est, base = (
            cost_estimate(row, compulsory, target),
            cost_estimate(seed_row, compulsory, target),
        )
        if est["launches"] < 1:
            return {}, f"the candidate launched no Triton kernel on dev case {k}"
        ratio = base["estimate_us"] / est["estimate_us"]
        ratios.append(ratio)
        if deciders[k] and (worst is None or ratio < worst[0]):
            worst = (ratio, k, est, base)
    if worst is None:
        return {}, "no dev cases were counted"
    ratio, k, est, base = worst
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return {"cost_speedup": ratio, "cost_us": est["estimate_us"], "seed_cost_us": base["estimate_us"],
            "cost_amplification": est["amplification"], "cost_launches": est["launches"],
            "cost_tensor_cores": est["tensor_cores"], "cost_worst_case": float(k),
            "cost_speedup_geomean": geo, "cost_cases": float(len(ratios))}, None  # fmt: skip


class KernelTask:
    """One KernelArena task bound to a split."""

    suite = "kernelarena"
    higher_is_better = True
    budget: int | None = None
    """No budget of its own: the agent's default."""

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
        # Honest metric name: without CUDA the value is the cost model's speedup estimate.
        self.metric = "speedup" if cuda_available() else "cost_speedup"
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

    # -- the runs ------------------------------------------------------------------

    def run_files(self, mode: str, entry_code: str, inputs: bytes, *, timing: bool) -> tuple[dict[str, str | bytes], dict[str, str]]:  # fmt: skip
        """(files of one run, sha256 of every harness file in it). ``mode`` is
        ``candidate`` (``entry_code`` is the candidate's; the references are not shipped)
        or ``baseline`` (trusted code: the starting kernel or the torch reference)."""
        from optiforge.sandboxes.payload import package_files

        files: dict[str, str | bytes] = {RUNNER: (_HERE / RUNNER).read_text(), "inputs.pt": inputs}
        # The sandbox does not see the project: kernels import ``optiforge.kernels``
        # (the library kernels candidates build on), shipped as files of the run.
        files.update(package_files("optiforge.kernels"))
        entry = "candidate.py" if mode == "candidate" else "baseline.py"
        if mode == "baseline" and timing:
            files["references.py"] = (_HERE / "references.py").read_text()
        guarded = {k: judge.sha(v) for k, v in files.items()}
        job = {"mode": mode, "entry": entry, "op": self.op, "guarded": sorted(guarded),
               "timing": self.spec.timing if timing else None}  # fmt: skip
        files["job.json"] = json.dumps(job)
        guarded["job.json"] = judge.sha(files["job.json"])
        if mode == "baseline":
            guarded[entry] = judge.sha(entry_code)
        files[entry] = entry_code
        return files, guarded

    def _sandbox_run(self, sandbox: Any, files: dict[str, str | bytes], guarded: dict[str, str],
                     counts: set[int], gpu: bool) -> tuple[judge.RunRead | None, str, str, float]:  # fmt: skip
        nonce = secrets.token_hex(16)
        # CPU path: the interpreter, and no GPU visible even where one exists (the counter
        # only runs under the interpreter; benchmarks/cost_model_gpu.py relies on this)
        env = {} if gpu else {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
        env["TRITON_CACHE_DIR"] = "/tmp/kernelarena-triton-cache"
        res = sandbox.run([sys.executable, RUNNER], files={**files, "nonce.txt": nonce}, timeout_s=self.timeout_s,
                          memory_mb=self.memory_mb, env=env, collect=[*guarded, "out.meta", "outputs.pt"])  # fmt: skip
        read, why, stage = judge.read_run(res, nonce, guarded, counts)
        if why == "timed out":
            why = f"timed out after {self.timeout_s:.0f} s"
        return read, why, stage, float(res.duration_s)

    def _baseline_code(self) -> str:
        if self.family == "triton2triton":
            return self.seed_code
        return f"from references import REFERENCES\n\nlaunch = REFERENCES[{self.op!r}]\n"

    def evaluate(
        self, candidate: Any, sandbox: Any | None = None, *, static_checks: bool = True
    ) -> Score:
        """Score a candidate ``{"code": ...}`` (or bare source): a candidate run, and a
        baseline run when the verdict needs one.

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
        timed = gpu and bool(self.spec.timing)
        inputs = judge.case_inputs(self.op, self.cases)
        tsets = judge.timing_inputs(self.op, self.spec.timing) if timed else []
        packed = judge.pack_inputs(inputs, tsets)
        refs = [judge.reference(self.op, i) for i in inputs]
        n_cases = len(inputs)
        metrics: dict[str, float] = {}

        files, guarded = self.run_files("candidate", str(code), packed, timing=timed)
        cand, why, stage, dur = self._sandbox_run(
            sandbox, files, guarded, {n_cases, n_cases + len(tsets)}, gpu
        )
        metrics["sandbox_s"] = dur
        if cand is None:
            return self._fail(metrics, why, stage)
        denied = cand.meta.get("denied")
        if isinstance(denied, list) and denied:
            return self._fail(
                metrics, f"kernel code attempted {denied[0]} (refused by the harness)", "guard"
            )
        if cand.meta.get("fatal"):
            return self._fail(metrics, str(cand.meta["fatal"]), "compile")
        rows = []
        keys = [(c, seed) for c in self.cases for seed in c.seeds]
        for k, (case, seed) in enumerate(keys):
            tol = tuple(self.spec.tolerances[case.dtype])
            rel_eps = float(self.spec.rel_norm[case.dtype])
            why_k = (
                cand.meta["reasons"][k]
                if k < len(cand.meta["reasons"])
                else "no result for this case"
            )
            stats: dict[str, float] = {}
            if why_k is None:
                why_k, stats = judge.compare(cand.outputs[k], refs[k], tol, rel_eps)  # type: ignore[arg-type]
            rows.append({"shape": case.shape, "dtype": case.dtype, "seed": seed, "ok": why_k is None,
                         "reason": why_k, "ref_ok": judge.finite(refs[k]), **stats})  # fmt: skip
        all_ok = all(r["ok"] for r in rows)
        need_ref_kernel = self.family == "triton2triton" and (self.split != "dev" or timed)
        base = None
        b_cases = inputs if need_ref_kernel else []
        b_tsets = tsets if all_ok else []
        if b_cases or b_tsets:
            bfiles, bguard = self.run_files("baseline", self._baseline_code(), judge.pack_inputs(b_cases, b_tsets),
                                            timing=bool(b_tsets))  # fmt: skip
            base, bwhy, _, bdur = self._sandbox_run(
                sandbox, bfiles, bguard, {len(b_cases) + len(b_tsets)}, gpu
            )
            metrics["sandbox_s"] += bdur
            if base is None or base.meta.get("fatal"):
                reason = bwhy if base is None else str(base.meta["fatal"])
                return self._fail(metrics, f"baseline run failed: {reason}", "baseline")
            if need_ref_kernel:
                for k, r in enumerate(rows):
                    case = keys[k][0]
                    ok = base.meta["reasons"][k] is None and judge.compare(
                        base.outputs[k], refs[k], self.spec.tolerances[case.dtype],
                        float(self.spec.rel_norm[case.dtype]))[0] is None  # fmt: skip
                    r["ref_ok"] = r["ref_ok"] and ok
        cost_note = None
        if not gpu and all_ok:
            cost, cost_note = self._cost(cand, inputs, refs, sandbox)
            metrics.update(cost)
        return self._score(
            rows, metrics, gpu, cand, base, tsets, n_cases, need_ref_kernel, cost_note
        )

    def _cost(self, cand: judge.RunRead, inputs: list[Any], refs: list[Any], sandbox: Any) -> tuple[dict[str, float], str | None]:  # fmt: skip
        """Cost-model metrics of a correct candidate on CPU (see the module doc), or why none."""
        rows = cand.meta.get("traffic")
        if not isinstance(rows, list) or len(rows) != len(inputs):
            return {}, "the run reported no traffic counts"
        seed_rows, why = self._seed_traffic(sandbox, inputs)
        if seed_rows is None:
            return {}, f"the starting kernel's counting run failed: {why}"
        bounds = [
            judge.work_bounds(self.op, inp, ref) for inp, ref in zip(inputs, refs, strict=True)
        ]
        decide = [c.cost for c in self.cases for _ in c.seeds]
        return cost_over_cases(rows, seed_rows, bounds, self._target_bounds(), decide)

    def _seed_traffic(
        self, sandbox: Any, inputs: list[Any]
    ) -> tuple[list[dict[str, float]] | None, str]:
        """The starting kernel's per-case traffic (a trusted run; cached per task and split)."""
        key = (self.name, self.split, judge.sha(self.seed_code))
        if key not in _SEED_TRAFFIC:
            files, guarded = self.run_files(
                "baseline", self.seed_code, judge.pack_inputs(inputs, []), timing=False
            )
            read, why, _, _ = self._sandbox_run(sandbox, files, guarded, {len(inputs)}, False)
            if read is None or read.meta.get("fatal"):
                return None, why if read is None else str(read.meta["fatal"])
            rows = read.meta.get("traffic")
            if not isinstance(rows, list) or len(rows) != len(inputs):
                return None, "no traffic counts"
            _SEED_TRAFFIC[key] = rows
        return _SEED_TRAFFIC[key], ""

    def _target_bounds(self) -> tuple[float, float]:
        """(flops, bytes) the op must do at the task's timing shape."""
        if self.name not in _TARGET:
            import torch

            tset = judge.timing_inputs(self.op, self.spec.timing, n_sets=1)[0]
            meta = tuple(t.to("meta") if isinstance(t, torch.Tensor) else t for t in tset)
            out = judge.reference(self.op, meta)
            nbytes, flops = judge.work_bounds(self.op, tset, out)
            _TARGET[self.name] = (flops, nbytes)
        return _TARGET[self.name]

    @staticmethod
    def _fail(metrics: dict[str, float], reason: str, stage: str) -> Score:
        return Score(value=0.0, passed=False, metrics={**metrics, "correctness": 0.0},
                     details={"reason": reason, "stage": stage, "performance": NOT_MEASURED})  # fmt: skip

    def _score(self, rows: list[dict[str, Any]], metrics: dict[str, float], gpu: bool, cand: judge.RunRead,
               base: judge.RunRead | None, tsets: list[Any], n_cases: int, ref_kernel: bool,
               cost_note: str | None = None) -> Score:  # fmt: skip
        n_ok = sum(1 for c in rows if c["ok"])
        ref_ok = [c for c in rows if c.get("ref_ok")]
        metrics.update(
            correctness=n_ok / len(rows), n_cases=float(len(rows)), n_correct=float(n_ok)
        )
        if ref_ok:
            metrics["conditional_correctness"] = sum(1 for c in ref_ok if c["ok"]) / len(ref_ok)
        failures = [
            f"{c['shape']} {c['dtype']} seed {c['seed']}: {c['reason']}"
            for c in rows
            if not c["ok"]
        ]
        details: dict[str, Any] = {"failures": failures[:5], "split": self.split}
        if failures:
            details.update(reason=failures[0], stage="correctness", performance=NOT_MEASURED)
            return Score(value=0.0, passed=False, metrics=metrics, details=details)
        if not gpu or not tsets:
            if "cost_speedup" in metrics:
                details["performance"] = (f"cost model (no GPU): estimated {metrics['cost_us']:.1f} us vs the "
                                          f"starting kernel's {metrics['seed_cost_us']:.1f} us at the timing shape "
                                          f"on sm90 from counted traffic; not a measurement (no cache, warps "
                                          f"or stages are modelled: GROUP_M, num_warps, num_stages do not "
                                          f"change it)")  # fmt: skip
                return Score(
                    value=float(metrics["cost_speedup"]),
                    passed=True,
                    metrics=metrics,
                    details=details,
                )
            details["performance"] = NOT_MEASURED + (f" ({cost_note})" if cost_note else "")
            # Correctness-only value: neither timed nor counted.
            return Score(value=1.0, passed=True, metrics=metrics, details=details)
        assert base is not None
        off = n_cases if ref_kernel else 0
        if len(cand.outputs) < n_cases + len(tsets):
            details.update(
                reason="timing: the candidate run returned no timed outputs", stage="timing"
            )
            return Score(value=0.0, passed=False, metrics=metrics, details=details)
        spec_t = self.spec.timing
        for j in range(len(tsets)):
            why, _ = judge.compare(cand.outputs[n_cases + j], base.outputs[off + j],  # type: ignore[arg-type]
                                   self.spec.tolerances[spec_t["dtype"]], float(self.spec.rel_norm[spec_t["dtype"]]))  # fmt: skip
            if why:
                details.update(reason=f"timing: timed run on set {j}: {why}", stage="timing")
                return Score(value=0.0, passed=False, metrics=metrics, details=details)
        work = max((judge.work_bounds(self.op, s, base.outputs[off + j]) for j, s in enumerate(tsets)),  # type: ignore[arg-type]
                   key=lambda w: w[0])  # fmt: skip
        timing, why = judge.timing_verdict(cand, base, int(spec_t.get("samples", 50)), *work)
        if timing is None:
            details.update(reason=f"timing: {why}", stage="timing")
            return Score(value=0.0, passed=False, metrics=metrics, details=details)
        metrics.update(speedup=float(timing["speedup"]), reference_ms=float(timing["reference_ms"]),
                       candidate_ms=float(timing["candidate_ms"]))  # fmt: skip
        baseline = "reference kernel" if self.family == "triton2triton" else "torch reference"
        details["performance"] = (f"CUDA-event median of {timing['samples']} samples each, candidate and {baseline} "
                                  f"in separate runs, bounded by wall clock and the device roofline "
                                  f"({timing['device']})")  # fmt: skip
        return Score(value=float(timing["speedup"]), passed=True, metrics=metrics, details=details)


class KernelArenaBenchmark(SuiteHooks):
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
                "Performance: no GPU, so not timed. A correct kernel's value is its cost-model speedup over the "
                "starting kernel (cost_speedup: requested bytes, dot FLOPs and launches counted under the "
                "interpreter, carried to the timing shape on sm90); a model, not a measurement."
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
    only when timings exist — fast_p (p = 1.0, 1.5) and the clipped geomean speedup; without
    timings, the clipped geomean of the cost model's speedups when there are any.
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
        costs = [r.get("verification", {}).get("metrics", {}).get("cost_speedup") if r.get("verified") else None
                 for r in rows]  # fmt: skip
        if any(c is not None for c in costs):
            out["geomean_cost_speedup"] = clipped_geomean_speedup(costs)
            out["performance"] = (
                "cost model (no GPU): geomean_cost_speedup is an estimate, not a timing"
            )
    return out


__all__ = [
    "KernelArenaBenchmark",
    "KernelTask",
    "aggregate",
    "clipped_geomean_speedup",
    "fast_p",
    "SPECS",
    "cost_over_cases",
]

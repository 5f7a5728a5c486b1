"""KernelArena harness: runs ONE candidate inside a fresh sandbox work dir (a harness file).

Usage (inside the sandbox): ``python harness.py`` with ``spec.json``, ``references.py``,
``candidate.py`` and optionally ``reference_kernel.py`` next to it. Writes
``result.json``. It never reads a number from the candidate: correctness and timing
are measured here, and the parent re-checks the sha256 of every harness file after
the run (a candidate that rewrites this file is rejected there).

Per case (shape x dtype x seed): fresh seeded inputs; a torch-function tripwire during
the launch (calling a torch compute op such as ``torch.softmax`` is rejected); input
hashes before/after (mutation); output aliasing (an input, or an earlier call's
output: a cached result); dtype-aware atol/rtol plus a relative-norm bound; constant
or all-zero outputs rejected when the reference is not; timer identity checks
(``time.perf_counter``, ``torch.cuda.Event``, ``triton.testing.do_bench``...).

Timing (CUDA only): reference and candidate measured in this process, paired and
interleaved (alternating order), after warm-up, with CUDA events, the L2 flushed by
writing a 256 MB buffer before every sample, rotating fresh input sets; the median of
``samples`` is reported and every timed output is validated. Without CUDA the result
says ``not measured without GPU``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import statistics
import sys
import time
import traceback
from typing import Any

import references as R  # noqa: N812 - the harness-side reference module in the work dir
import torch
from torch.overrides import TorchFunctionMode

#: torch functions/methods a candidate may not call during its launch: the candidate
#: must compute with Triton, not delegate to (or re-implement with) torch ops.
FORBIDDEN_TORCH = frozenset(
    [
        "softmax",
        "log_softmax",
        "_softmax",
        "matmul",
        "mm",
        "bmm",
        "addmm",
        "baddbmm",
        "linear",
        "layer_norm",
        "rms_norm",
        "group_norm",
        "batch_norm",
        "gelu",
        "relu",
        "relu_",
        "silu",
        "sigmoid",
        "tanh",
        "exp",
        "log",
        "sum",
        "mean",
        "amax",
        "amin",
        "max",
        "min",
        "logsumexp",
        "scaled_dot_product_attention",
        "cross_entropy",
        "nll_loss",
        "einsum",
        "cumsum",
        "norm",
        "var",
        "std",
        "__matmul__",
        "__rmatmul__",
        "__mul__",
        "__rmul__",
        "__add__",
        "__radd__",
        "__sub__",
        "__rsub__",
        "__truediv__",
        "__rtruediv__",
        "mul",
        "add",
        "sub",
        "div",
        "where",
        "maximum",
        "minimum",
        "clamp",
        "pow",
        "rsqrt",
        "sqrt",
        "erf",
        "abs",
        "neg",
        "dot",
        "inner",
        "outer",
        "tensordot",
        "conv1d",
        "conv2d",
    ]
)


class Tripwire(TorchFunctionMode):
    """Records forbidden torch calls made while the candidate runs."""

    def __init__(self) -> None:
        super().__init__()
        self.hits: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", str(func))
        if name in FORBIDDEN_TORCH:
            self.hits.append(name)
        return func(*args, **(kwargs or {}))


def _timer_ids() -> dict[str, int]:
    import triton.testing

    return {
        "time.perf_counter": id(time.perf_counter), "time.perf_counter_ns": id(time.perf_counter_ns),
        "time.time": id(time.time), "time.monotonic": id(time.monotonic),
        "torch.cuda.Event": id(torch.cuda.Event), "torch.cuda.Event.elapsed_time": id(torch.cuda.Event.elapsed_time),
        "torch.cuda.synchronize": id(torch.cuda.synchronize), "triton.testing.do_bench": id(triton.testing.do_bench),
    }  # fmt: skip


def _tensor_hash(t: Any) -> str:
    if not isinstance(t, torch.Tensor):
        return repr(t)
    c = t.detach().cpu().contiguous()
    if c.dtype == torch.bfloat16:
        c = c.view(torch.int16)
    return hashlib.sha256(
        c.numpy().tobytes() + repr((tuple(t.shape), t.stride())).encode()
    ).hexdigest()


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def compare(
    out: Any, ref: torch.Tensor, tol: tuple[float, float], rel_eps: float
) -> tuple[str | None, dict[str, float]]:
    """None when ``out`` matches ``ref``; else the reason. Also returns error stats."""
    if not isinstance(out, torch.Tensor):
        return f"output is {type(out).__name__}, not a tensor", {}
    if tuple(out.shape) != tuple(ref.shape):
        return f"output shape {tuple(out.shape)} != reference {tuple(ref.shape)}", {}
    if out.dtype != ref.dtype:
        return f"output dtype {out.dtype} != reference {ref.dtype}", {}
    o, r = out.detach().double().cpu(), ref.detach().double().cpu()
    if torch.isfinite(r).all() and not torch.isfinite(o).all():
        return "output has non-finite values", {}
    if r.numel() > 1 and float(r.std()) > 0 and float(o.std()) == 0:
        what = "all zeros" if float(o.abs().max()) == 0 else f"constant {float(o.flatten()[0]):.4g}"
        return f"output is {what} but the reference is not constant", {}
    err = (o - r).abs()
    atol, rtol = tol
    bad = err > atol + rtol * r.abs()
    rel = float(torch.linalg.vector_norm(o - r) / max(float(torch.linalg.vector_norm(r)), 1e-30))
    stats = {"max_abs_err": float(err.max()) if err.numel() else 0.0, "rel_err": rel}
    if bad.any():
        return (f"{int(bad.sum())}/{bad.numel()} elements off, max abs err {stats['max_abs_err']:.3g} "
                f"(atol {atol}, rtol {rtol})"), stats  # fmt: skip
    if rel > rel_eps:
        return f"relative error norm {rel:.3g} > {rel_eps}", stats
    return None, stats


def _load(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class Guarded:
    """Runs one launch with every runtime check; ``run`` returns (output, reason)."""

    def __init__(self, fn: Any, timers: dict[str, int]) -> None:
        self.fn = fn
        self.timers = timers
        self.kept: list[torch.Tensor] = []  # earlier outputs stay alive so aliasing is visible

    def run(self, inputs: tuple[Any, ...]) -> tuple[Any, str | None]:
        before = [_tensor_hash(t) for t in inputs]
        wire = Tripwire()
        try:
            with wire:
                out = self.fn(*inputs)
        except Exception as err:  # noqa: BLE001 - a crashing launch fails its case
            return None, f"launch raised {type(err).__name__}: {str(err)[:300]}"
        now = _timer_ids()
        patched = [k for k, v in self.timers.items() if now.get(k) != v]
        if patched:
            return None, f"patched the timer: {', '.join(patched)} replaced"
        if wire.hits:
            return (
                None,
                f"called torch.{wire.hits[0]} during the launch (a torch compute op; the kernel must compute with Triton)",
            )
        for i, (t, h) in enumerate(zip(inputs, before, strict=True)):
            if _tensor_hash(t) != h:
                return None, f"mutated input {i} in place"
        if isinstance(out, torch.Tensor):
            ins = {_storage(t) for t in inputs if isinstance(t, torch.Tensor)}
            if _storage(out) in ins:
                return None, "output aliases an input tensor"
            if any(_storage(out) == _storage(k) for k in self.kept):
                return None, "output reuses the storage of an earlier call's output (cached result)"
            self.kept.append(out)
        return out, None


def measure_paired(ref_fn: Any, cand_fn: Any, input_sets: list[tuple[Any, ...]], refs: list[torch.Tensor],
                   tol: tuple[float, float], rel_eps: float, samples: int, warmup: int,
                   event_cls: Any, sync: Any) -> dict[str, Any]:  # fmt: skip
    """Paired, interleaved CUDA-event timing with L2 flushes; validates every timed output."""
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    for i in range(warmup):
        inp = input_sets[i % len(input_sets)]
        ref_fn(*inp)
        cand_fn(*inp)
    sync()
    times: dict[str, list[float]] = {"reference": [], "candidate": []}
    for i in range(samples):
        j = i % len(input_sets)
        order = [("reference", ref_fn), ("candidate", cand_fn)]
        if i % 2:
            order.reverse()  # alternate who runs first: neither side always gets a warm clock
        for who, fn in order:
            flush.zero_()
            start, end = event_cls(enable_timing=True), event_cls(enable_timing=True)
            start.record()
            out = fn(*input_sets[j])
            end.record()
            sync()
            times[who].append(start.elapsed_time(end))
            if who == "candidate":
                why, _ = compare(out, refs[j], tol, rel_eps)
                if why:
                    return {"status": "invalid", "reason": f"timed run {i}: {why}"}
    ref_ms, cand_ms = statistics.median(times["reference"]), statistics.median(times["candidate"])
    return {"status": "measured", "reference_ms": ref_ms, "candidate_ms": cand_ms,
            "speedup": ref_ms / cand_ms if cand_ms > 0 else math.inf, "samples": samples}  # fmt: skip


def main() -> None:
    spec = json.load(open("spec.json"))  # noqa: SIM115
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    result: dict[str, Any] = {
        "cases": [],
        "fatal": None,
        "timing": {"status": "not measured without GPU"},
    }
    event_cls, sync = (
        torch.cuda.Event,
        torch.cuda.synchronize,
    )  # captured before the candidate loads
    timers = _timer_ids()
    reference = R.REFERENCES[spec["op"]]
    ref_kernel = None
    if spec.get("reference_kernel") and os.path.exists("reference_kernel.py"):
        ref_kernel = Guarded(_load("reference_kernel.py", "reference_kernel").launch, timers)
    try:
        cand_mod = _load("candidate.py", "candidate")
        launch = cand_mod.launch
    except Exception as err:  # noqa: BLE001
        result["fatal"] = f"compile/import failed: {type(err).__name__}: {str(err)[:300]}"
        json.dump(result, open("result.json", "w"))  # noqa: SIM115
        return
    if _timer_ids() != timers:
        result["fatal"] = "patched the timer at import time"
        json.dump(result, open("result.json", "w"))  # noqa: SIM115
        return
    cand = Guarded(launch, timers)
    for case in spec["cases"]:
        tol = tuple(spec["tolerances"][case["dtype"]])
        rel_eps = float(spec["rel_norm"][case["dtype"]])
        for seed in case["seeds"]:
            row: dict[str, Any] = {"shape": case["shape"], "dtype": case["dtype"], "seed": seed}
            inputs = R.make_inputs(spec["op"], case["shape"], case["dtype"], seed, device)
            ref = reference(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
            row["ref_ok"] = bool(torch.isfinite(ref.double()).all())
            if ref_kernel is not None:
                rk_inputs = R.make_inputs(spec["op"], case["shape"], case["dtype"], seed, device)
                rk_out, why = ref_kernel.run(rk_inputs)
                row["ref_ok"] = (
                    row["ref_ok"] and why is None and compare(rk_out, ref, tol, rel_eps)[0] is None
                )
            out, why = cand.run(inputs)
            stats: dict[str, float] = {}
            if why is None:
                why, stats = compare(out, ref, tol, rel_eps)
            row.update(ok=why is None, reason=why, **stats)
            result["cases"].append(row)
    if cuda and spec.get("timing") and all(r["ok"] for r in result["cases"]):
        shape, dtype = spec["timing"]["shape"], spec["timing"]["dtype"]
        sets = [R.make_inputs(spec["op"], shape, dtype, 1000 + s, device) for s in range(3)]
        refs = [reference(*s) for s in sets]
        base = ref_kernel.fn if ref_kernel is not None else reference
        result["timing"] = measure_paired(
            base,
            cand.fn,
            sets,
            refs,
            tuple(spec["tolerances"][dtype]),
            float(spec["rel_norm"][dtype]),
            int(spec["timing"].get("samples", 50)),
            int(spec["timing"].get("warmup", 5)),
            event_cls,
            sync,
        )
        result["timing"]["baseline"] = (
            "reference kernel" if ref_kernel is not None else "torch reference"
        )
    json.dump(result, open("result.json", "w"))  # noqa: SIM115


if __name__ == "__main__":
    try:
        main()
    except Exception:  # noqa: BLE001 - report, never crash silently
        fatal = {
            "cases": [],
            "fatal": "harness error: " + traceback.format_exc()[-800:],
            "timing": {"status": "error"},
        }
        with open("result.json", "w") as fh:
            json.dump(fatal, fh)

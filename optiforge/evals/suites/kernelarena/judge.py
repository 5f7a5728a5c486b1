"""The parent's side of a KernelArena evaluation: inputs, references, reading a run, verdicts.

Nothing here runs kernel code, and nothing a kernel's process wrote is taken as a
verdict. The parent generates every input from a seed, computes the reference with
:mod:`.references` itself (that module never ships into a run where candidate code
loads), reads back only tensors (``torch.load(weights_only=True)``, then dtype, shape
and finiteness are validated) plus the runner's ``out.meta``, accepted only when it
carries this run's nonce, and compares. A ``result.json`` or any other file a candidate
writes is never read. On a GPU the timings are bounded by what the parent knows
independently (see :func:`timing_verdict`).
"""

from __future__ import annotations

import ast
import hashlib
import io
import math
import statistics
from typing import Any

import torch

from optiforge.evals.suites.kernelarena import references as R  # noqa: N812

MAX_META_BYTES = 1 << 20
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "float64": torch.float64, "int64": torch.int64, "int32": torch.int32}  # fmt: skip
ROOFLINE_SLACK = 2.0
"""A kernel may not beat the device's measured copy bandwidth / matmul rate by more than this."""


def sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def case_inputs(op: str, cases: list[Any]) -> list[tuple[Any, ...]]:
    """CPU inputs for every case x seed, in order (the parent's own, from the seeds)."""
    return [R.make_inputs(op, c.shape, c.dtype, seed, "cpu") for c in cases for seed in c.seeds]


def timing_inputs(op: str, timing: dict[str, Any], n_sets: int = 3) -> list[tuple[Any, ...]]:
    return [
        R.make_inputs(op, timing["shape"], timing["dtype"], 1000 + s, "cpu") for s in range(n_sets)
    ]


def pack_inputs(cases: list[tuple[Any, ...]], timing: list[tuple[Any, ...]]) -> bytes:
    buf = io.BytesIO()
    torch.save({"cases": [list(c) for c in cases], "timing": [list(t) for t in timing]}, buf)
    return buf.getvalue()


def reference(op: str, inputs: tuple[Any, ...]) -> torch.Tensor:
    return R.REFERENCES[op](*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])


def finite(t: torch.Tensor) -> bool:
    return bool(torch.isfinite(t.double()).all())


def compare(
    out: Any, ref: torch.Tensor, tol: tuple[float, float], rel_eps: float
) -> tuple[str | None, dict[str, float]]:
    """None when ``out`` matches ``ref``; else the reason. Also returns error stats."""
    if type(out) is not torch.Tensor:
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


class RunRead:
    """What the parent accepts from one run: the runner's meta and the output tensors."""

    def __init__(
        self, meta: dict[str, Any], outputs: list[torch.Tensor | None], duration_s: float
    ) -> None:
        self.meta = meta
        self.outputs = outputs
        self.duration_s = duration_s


def read_run(
    res: Any, nonce: str, guarded: dict[str, str], counts: set[int]
) -> tuple[RunRead | None, str, str]:
    """(the run's data, "", "") or (None, reason, stage). Checks, in order: timeout, the
    hash of every shipped harness file, the nonce in ``out.meta``, the tensors' types."""
    if res.timed_out:
        return None, "timed out", "run"
    for name, digest in guarded.items():
        back = res.files.get(name)
        if back is None or sha(back) != digest:
            return (
                None,
                f"harness file {name} was modified or removed during the run (hash guard)",
                "hash",
            )
    raw = res.files.get("out.meta")
    if not raw:
        tail = (res.stderr or "")[-300:].strip()
        return (
            None,
            f"no result from the harness (exit {res.returncode}){': ' + tail if tail else ''}",
            "run",
        )
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if len(raw) > MAX_META_BYTES:
        return None, "harness meta is too large (not written by the harness)", "run"
    try:
        meta = ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        meta = None
    if not isinstance(meta, dict) or meta.get("nonce") != nonce:
        return (
            None,
            "out.meta was not written by the harness (no nonce of this run): ignored",
            "forged",
        )
    if not isinstance(meta.get("reasons"), list) or not all(
        r is None or isinstance(r, str) for r in meta["reasons"]
    ):
        return None, "harness meta is malformed", "run"
    if meta.get("fatal"):
        return RunRead(meta, [], res.duration_s), "", ""
    blob = res.files.get("outputs.pt")
    if not isinstance(blob, bytes | str) or not blob:
        return None, "no outputs from the run", "run"
    try:
        outs = torch.load(io.BytesIO(blob if isinstance(blob, bytes) else blob.encode("latin-1")),
                          weights_only=True, map_location="cpu")  # fmt: skip
    except Exception as err:  # noqa: BLE001 - whatever a hostile file does to the loader
        return None, f"outputs are unreadable ({type(err).__name__})", "run"
    if (
        not isinstance(outs, list)
        or len(outs) not in counts
        or not all(o is None or type(o) is torch.Tensor for o in outs)
    ):
        return (
            None,
            f"outputs are malformed (expected {' or '.join(map(str, sorted(counts)))} entries)",
            "run",
        )
    return RunRead(meta, outs, res.duration_s), "", ""


def _samples(t: Any, n: int) -> tuple[list[float], list[float]] | None:
    if not isinstance(t, dict):
        return None
    ev, wall = t.get("event_ms"), t.get("wall_ms")
    ok = isinstance(ev, list) and isinstance(wall, list) and len(ev) == len(wall) == n
    if not ok or not all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in ev + wall):  # type: ignore[operator]
        return None
    return ev, wall  # type: ignore[return-value]


def work_bounds(op: str, tset: tuple[Any, ...], ref_out: torch.Tensor) -> tuple[float, float]:
    """(bytes a kernel must move at least, flops it must do at least) for one timing input set."""
    tensors = [t for t in tset if isinstance(t, torch.Tensor)] + [ref_out]
    nbytes = sum(t.numel() * t.element_size() for t in tensors)
    flops = 0.0
    if op in ("matmul", "matmul_bias_relu", "gelu_linear"):
        a, b = tset[0], tset[1]
        flops = 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
    elif op == "attention":
        q = tset[0]
        bb, h, n, d = q.shape
        flops = 4.0 * bb * h * n * n * d
    return float(nbytes), flops


def timing_verdict(cand: RunRead, base: RunRead, samples: int, bytes_min: float, flops_min: float) -> tuple[dict[str, Any] | None, str]:  # fmt: skip
    """Speedup from the two runs' CUDA-event medians, or the reason the candidate's numbers
    cannot be true. The candidate's timings come from harness code loaded before its own
    and are still only accepted inside bounds it cannot move:

    * each sample's event time fits in its wall time, and all wall times together fit in
      the run's duration as the sandbox (parent side) measured it;
    * the wall-minus-event gap (work the timed stream's events did not see, e.g. on a side
      stream) is at most what the baseline's gap allows;
    * the median is no faster than the roofline the trusted baseline run measured on this
      device (bytes moved / copy bandwidth, flops / fp16 matmul rate), with slack.
    """
    b = _samples(base.meta.get("timing"), samples)
    c = _samples(cand.meta.get("timing"), samples)
    if b is None:
        return None, "baseline timing missing or malformed"
    if c is None:
        return None, "candidate timing missing or malformed"
    for who, (ev, wall), run in (("baseline", b, base), ("candidate", c, cand)):
        if any(e > w + 0.05 for e, w in zip(ev, wall, strict=True)):
            return None, f"{who} event times exceed their wall-clock samples"
        if sum(wall) > run.duration_s * 1e3:
            return None, (f"{who} timed samples total {sum(wall):.1f} ms, more than the run's "
                          f"{run.duration_s * 1e3:.1f} ms wall clock")  # fmt: skip
    gap_b = statistics.median(w - e for e, w in zip(*b, strict=True))
    gap_c = statistics.median(w - e for e, w in zip(*c, strict=True))
    if gap_c > max(3.0 * gap_b, gap_b + 0.1) + 0.05:
        return None, (f"work outside the timed stream: wall clock per sample exceeds event time by "
                      f"{gap_c:.3f} ms (baseline {gap_b:.3f} ms)")  # fmt: skip
    base_t = base.meta["timing"]
    bw, mm = base_t.get("bandwidth_Bps"), base_t.get("matmul_flops")
    if not (isinstance(bw, float) and bw > 0 and isinstance(mm, float) and mm > 0):
        return None, "device calibration missing"
    floor_ms = max(bytes_min / bw, flops_min / mm) * 1e3 / ROOFLINE_SLACK
    ref_ms, cand_ms = statistics.median(b[0]), statistics.median(c[0])
    if cand_ms < floor_ms:
        return None, (f"candidate median {cand_ms:.4f} ms is below the device's roofline floor "
                      f"{floor_ms:.4f} ms (measured bandwidth/matmul rate): not a real timing")  # fmt: skip
    return {"reference_ms": ref_ms, "candidate_ms": cand_ms, "speedup": ref_ms / cand_ms,
            "samples": samples, "floor_ms": floor_ms, "device": str(base_t.get("device_name", "?"))}, ""  # fmt: skip

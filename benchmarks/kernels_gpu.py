"""Time the Triton kernels against torch baselines on a GPU (paired, interleaved).

Protocol (the lessons in shared/REFERENCE.md): one process; warm-up of both sides;
per sample the order of baseline and kernel alternates; the L2 cache is flushed
(a 512 MiB buffer is overwritten) before every timed call; CUDA events time each call;
inputs rotate through a pool of distinct input sets so no sample reuses the previous
sample's (cached) inputs; the median of many samples is reported with the
baseline/kernel ratio; and the timed kernel's outputs are checked against the
reference (not only an untimed run). Exits 0 with a message when CUDA is absent.

Usage: ``python benchmarks/kernels_gpu.py [--kernels matmul,attention] [--samples 50]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from typing import Any

import torch


def _baselines() -> dict[str, Callable[..., torch.Tensor]]:
    """Native torch ops of the same dtype: the speed baseline (fp64 references are not)."""
    import torch.nn.functional as F  # noqa: N812

    from optiforge.kernels import registry

    def _sdpa(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False
    ) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return {
        "add": torch.add,
        "mul": torch.mul,
        "axpby": lambda a, x, b, y: torch.add(x * a, y, alpha=b),
        "relu": torch.relu,
        "gelu": F.gelu,
        "softmax": lambda x: torch.softmax(x, dim=-1),
        "rmsnorm": lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6),
        "layernorm": lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5),
        "matmul": torch.matmul,
        "attention": _sdpa,
        "inquant": registry.reference_inquant_roundtrip,
    }


def _time_pair(
    base: Callable[[], Any],
    kern: Callable[[int], Any],
    n_samples: int,
    flush: torch.Tensor,
) -> tuple[list[float], list[float], Any]:
    """Interleaved samples (ms) of ``base`` and ``kern(i)``; returns the last kernel output."""
    times_b: list[float] = []
    times_k: list[float] = []
    last: Any = None
    for i in range(n_samples):
        order = ("b", "k") if i % 2 == 0 else ("k", "b")
        for side in order:
            flush.zero_()  # evict L2 so both sides start cold
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            if side == "b":
                base()
            else:
                last = kern(i)
            end.record()
            end.synchronize()
            (times_b if side == "b" else times_k).append(start.elapsed_time(end))
    return times_b, times_k, last


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return the process exit code."""
    p = argparse.ArgumentParser(description="Triton kernels vs torch baselines on CUDA")
    p.add_argument("--kernels", default="", help="comma-separated names (default: all)")
    p.add_argument("--samples", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--pool", type=int, default=4, help="distinct input sets rotated per sample")
    a = p.parse_args(argv)
    if not torch.cuda.is_available():
        print(
            "kernels_gpu: CUDA is not available; nothing to time (Triton's CPU interpreter is far too slow to time)."
        )
        return 0
    from optiforge.kernels import registry

    baselines = _baselines()
    names = [n for n in a.kernels.split(",") if n] or list(registry.KERNELS)
    flush = torch.empty(512 * 1024 * 1024 // 4, dtype=torch.float32, device="cuda")
    print(f"device: {torch.cuda.get_device_name()}; samples={a.samples}, median ms")
    header = f"{'kernel':<10}{'shape':<40}{'dtype':<9}{'torch ms':>10}{'triton ms':>11}{'speedup':>9}  check"
    print(header)
    print("-" * len(header))
    for name in names:
        info = registry.get_kernel(name)
        dtype = torch.float16
        for shape in info.bench_shapes:
            pool = [info.make_inputs(shape, dtype, seed, "cuda") for seed in range(a.pool)]
            base_fn = baselines[name]

            counter = {"i": 0}

            def run_base(pool=pool, fn=base_fn, counter=counter) -> Any:
                args, kwargs = pool[counter["i"] % len(pool)]
                counter["i"] += 1
                return fn(*args, **kwargs)

            def run_kern(i: int, pool=pool, fn=info.launcher) -> Any:
                args, kwargs = pool[i % len(pool)]
                return fn(*args, **kwargs)

            for i in range(a.warmup):
                run_base()
                run_kern(i)
            torch.cuda.synchronize()
            tb, tk, last = _time_pair(run_base, run_kern, a.samples, flush)
            # Validate the timed buffers: the last timed output against the reference.
            args, kwargs = pool[(a.samples - 1) % len(pool)]
            status = "ok"
            try:
                registry.check_output(info, last, info.reference(*args, **kwargs))
            except Exception as exc:  # report, keep timing the others
                status = f"FAILED: {exc}"
            mb, mk = statistics.median(tb), statistics.median(tk)
            shape_s = ",".join(f"{k}={v}" for k, v in shape.items())
            print(
                f"{name:<10}{shape_s:<40}{'fp16':<9}{mb:>10.4f}{mk:>11.4f}{mb / mk:>8.2f}x  {status}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

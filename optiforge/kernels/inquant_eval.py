"""Accuracy of InQuant vs plain 4-bit and 8-bit KV caches on synthetic outlier-heavy KV.

Synthetic data (documented because the numbers depend on it): per head, K channels have
log-normal std ``exp(N(0, 0.5^2))`` and means ``N(0, 0.3^2) * std``; ``n_true_outliers``
random channels per head are multiplied by ``U(10, 50)`` (like the massive channels of
real LLM K caches). V has the same heterogeneous channels and no outlier channels.
Queries are Gaussian, rescaled so the exact attention scores have std 2.0 (a moderately
peaked softmax). Errors: relative Frobenius ``||x^ - x|| / ||x||`` and MSE; attention
error uses the dequantised K *and* V of the same method against exact fp32 attention.
Rows: ``InQ k=.. W=.. r..``: InQuant with k outlier slots per head, donor window W,
and (``r4``) outliers only where saliency > 4x the head median (else exactly k).

Run: ``python -m optiforge.kernels.inquant_eval [--heads 4 --tokens 512 --dim 128]``.
On CPU the quantiser runs through the torch reference (bit-identical to the Triton
kernels, see tests/kernels/test_inquant.py) because the interpreter is slow; on CUDA
the Triton kernels are used. The table says which.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import torch
from pydantic import BaseModel, ConfigDict

from optiforge.kernels import inquant as iq


class EvalRow(BaseModel):
    """One method's accuracy and footprint (averaged over seeds)."""

    model_config = ConfigDict(extra="forbid")

    method: str
    payload_bytes_per_token: float
    total_bytes_per_token: float
    compression_payload: float
    compression_total: float
    k_rel_err: float
    k_mse: float
    k_outlier_rel_err: float
    v_rel_err: float
    attn_rel_err: float


def make_synthetic_kv(
    heads: int, tokens: int, dim: int, n_true_outliers: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return K, V `H x T x D` fp32 and the true outlier mask `H x D`."""
    gen = torch.Generator().manual_seed(seed)

    def channels() -> torch.Tensor:
        std = torch.exp(0.5 * torch.randn(heads, 1, dim, generator=gen))
        mean = 0.3 * torch.randn(heads, 1, dim, generator=gen) * std
        return mean + std * torch.randn(heads, tokens, dim, generator=gen)

    k, v = channels(), channels()
    mask = torch.zeros(heads, dim, dtype=torch.bool)
    for h in range(heads):
        idx = torch.randperm(dim, generator=gen)[:n_true_outliers]
        mask[h, idx] = True
        k[h, :, idx] *= 10 + 40 * torch.rand(n_true_outliers, generator=gen)
    return k, v, mask


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return torch.softmax(s, dim=-1) @ v


Roundtrip = Callable[[torch.Tensor], tuple[torch.Tensor, int]]


def _uniform(bits: int, group: int) -> Roundtrip:
    def run(x: torch.Tensor) -> tuple[torch.Tensor, int]:
        h, t, d = x.shape
        nbytes = h * t * (d * bits // 8 + 4 * (d // group))  # codes + fp16 scale, zero
        return iq.reference_uniform_roundtrip(x, bits=bits, group_size=group), nbytes

    return run


def _fp16(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    return x.half().float(), 2 * x.numel()


def _inquant(n_outliers: int, group: int, window: int, ratio: float, use_triton: bool) -> Roundtrip:
    def run(x: torch.Tensor) -> tuple[torch.Tensor, int]:
        desc = iq.build_descriptor(
            x, n_outliers, n_sample=64, seed=0, donor_window=window, min_ratio=ratio
        )
        if use_triton:
            cache = iq.quantize(x, desc, group_size=group)
            xh = iq.dequantize(cache, dtype=torch.float32)
        else:
            cache = iq.reference_quantize(x, desc, group_size=group)
            xh = iq.reference_dequantize(cache, dtype=torch.float32)
        return xh, cache.nbytes()["total"]

    return run


def evaluate(
    *,
    heads: int = 4,
    tokens: int = 512,
    dim: int = 128,
    group: int = 32,
    n_true_outliers: int = 4,
    seeds: tuple[int, ...] = (0, 1, 2),
    use_triton: bool | None = None,
) -> tuple[list[EvalRow], bool]:
    """Measure every method; return the rows and whether Triton kernels were used.

    Bytes per token come from the actual stored tensors (K cache; V is the same
    layout), including per-head descriptors amortised over the tokens.
    """
    triton_used = torch.cuda.is_available() if use_triton is None else use_triton
    device = "cuda" if triton_used and torch.cuda.is_available() else "cpu"
    k_in = n_true_outliers
    methods: dict[str, Roundtrip] = {
        "fp16": _fp16,
        "int8 (G)": _uniform(8, group),
        "int4 (G)": _uniform(4, group),
        f"InQ k={k_in} W=1": _inquant(k_in, group, 1, 0.0, triton_used),
        f"InQ k={k_in} W=4": _inquant(k_in, group, 4, 0.0, triton_used),
        f"InQ k={k_in} W=4 r4": _inquant(k_in, group, 4, 4.0, triton_used),
        f"InQ k={2 * k_in} W=4 r4": _inquant(2 * k_in, group, 4, 4.0, triton_used),
    }
    rows: list[EvalRow] = []
    for name, fn in methods.items():
        acc: dict[str, float] = {"k": 0.0, "kmse": 0.0, "ko": 0.0, "v": 0.0, "a": 0.0, "b": 0.0}
        for seed in seeds:
            k, v, mask = make_synthetic_kv(heads, tokens, dim, n_true_outliers, seed)
            k, v = k.to(device), v.to(device)
            gen = torch.Generator().manual_seed(10_000 + seed)
            q = torch.randn(heads, 64, dim, generator=gen).to(device)
            q *= 2.0 / (q @ k.transpose(-1, -2) / math.sqrt(dim)).std()
            (kh, kbytes), (vh, _) = fn(k), fn(v)
            om = mask.to(device)[:, None, :].expand_as(k)
            acc["k"] += _rel(kh, k)
            acc["kmse"] += float(((kh - k) ** 2).mean())
            acc["ko"] += _rel(kh[om], k[om])
            acc["v"] += _rel(vh, v)
            acc["a"] += _rel(_attention(q, kh, vh), _attention(q, k, v))
            acc["b"] += kbytes / (heads * tokens)
        n = len(seeds)
        payload = 2.0 * dim if name == "fp16" else (1.0 if name.startswith("int8") else 0.5) * dim
        total = acc["b"] / n
        rows.append(
            EvalRow(
                method=name,
                payload_bytes_per_token=payload,
                total_bytes_per_token=total,
                compression_payload=2.0 * dim / payload,
                compression_total=2.0 * dim / total,
                k_rel_err=acc["k"] / n,
                k_mse=acc["kmse"] / n,
                k_outlier_rel_err=acc["ko"] / n,
                v_rel_err=acc["v"] / n,
                attn_rel_err=acc["a"] / n,
            )
        )
    return rows, triton_used


def format_table(rows: list[EvalRow]) -> str:
    """Render the rows as a fixed-width text table."""
    head = (
        f"{'method':<20}{'B/tok':>8}{'B/tok+meta':>12}{'x payload':>10}{'x total':>9}"
        f"{'K rel':>10}{'K mse':>11}{'K outl rel':>12}{'V rel':>10}{'attn rel':>10}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.method:<20}{r.payload_bytes_per_token:>8.1f}{r.total_bytes_per_token:>12.2f}"
            f"{r.compression_payload:>10.2f}{r.compression_total:>9.2f}{r.k_rel_err:>10.4f}"
            f"{r.k_mse:>11.4g}{r.k_outlier_rel_err:>12.4f}{r.v_rel_err:>10.4f}{r.attn_rel_err:>10.4f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Print the accuracy table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--group", type=int, default=32)
    p.add_argument("--outliers", type=int, default=4, help="true outlier channels per head")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--triton", action="store_true", help="force the Triton kernels (slow on CPU)")
    a = p.parse_args(argv)
    rows, used = evaluate(
        heads=a.heads,
        tokens=a.tokens,
        dim=a.dim,
        group=a.group,
        n_true_outliers=a.outliers,
        seeds=tuple(range(a.seeds)),
        use_triton=True if a.triton else None,
    )
    print(
        f"H={a.heads} T={a.tokens} D={a.dim} G={a.group} true outliers/head={a.outliers} "
        f"seeds={a.seeds}; quantiser: {'Triton kernels' if used else 'torch reference'}"
    )
    print(format_table(rows))


if __name__ == "__main__":
    main()

"""A seeded synthetic corpus of experiences with one planted relevant record."""

from __future__ import annotations

import random

from optiforge.memory import Experience

OPS = [
    "matmul",
    "softmax",
    "layernorm",
    "conv2d",
    "attention",
    "reduction",
    "scan",
    "gemv",
    "cholesky",
    "lu",
    "qr",
    "fft",
    "spmv",
    "transpose",
    "topk",
    "sort",
]
DTYPES = ["fp32", "fp16", "int8", "fp64"]
WORDS = [
    "tile",
    "block",
    "warp",
    "thread",
    "shared",
    "memory",
    "register",
    "pressure",
    "occupancy",
    "vectorize",
    "unroll",
    "pipeline",
    "stage",
    "prefetch",
    "coalesced",
    "bank",
    "conflict",
    "latency",
    "throughput",
    "bandwidth",
    "cache",
    "fusion",
    "epilogue",
    "split",
    "reduce",
    "atomic",
    "barrier",
    "launch",
    "grid",
    "autotune",
    "heuristic",
    "search",
    "gradient",
    "learning",
    "rate",
    "budget",
    "step",
    "solver",
    "sparse",
    "dense",
    "factorization",
    "pivot",
    "fill",
    "ordering",
    "graph",
    "kernel",
    "prior",
    "noise",
    "lengthscale",
    "acquisition",
    "robust",
    "dual",
    "constraint",
    "uncertainty",
    "budgeted",
    "polyhedral",
    "ellipsoid",
    "box",
    "causal",
    "intervention",
]

TARGET_QUERY = "nested dissection ordering cut fill-in of the sparse cholesky factor"


def target_experience() -> Experience:
    """The record the 10k retrieval test must find."""
    return Experience(
        agent="solver_tuner",
        task_signature="cholesky 4096x4096 sparse fp64 on cpu",
        trajectory_summary="tried natural ordering, then AMD, then nested dissection",
        outcome="success: factor nnz down 6x",
        lesson="nested dissection ordering cut fill-in of the sparse cholesky factor the most",
        tags=["sparse", "cholesky"],
    )


def synthetic_experiences(n: int, seed: int = 0) -> list[Experience]:
    """``n`` seeded distractors sharing vocabulary with the target (cholesky, sparse, fill...)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        op = rng.choice(OPS)
        size = rng.choice([64, 128, 256, 512, 1024, 2048, 4096])
        words = " ".join(rng.choice(WORDS) for _ in range(12))
        out.append(
            Experience(
                agent=rng.choice(["kernel_optimizer", "harness_tuner", "solver_tuner"]),
                task_signature=f"{op} {size}x{size} {rng.choice(DTYPES)} case {i}",
                trajectory_summary=" ".join(rng.choice(WORDS) for _ in range(8)),
                outcome=rng.choice(["success", "failure", "partial"]),
                lesson=words,
                tags=[op, rng.choice(["gpu", "cpu"])],
            )
        )
    return out

"""Top-5 retrieval latency of the memory store at 1e3, 1e4, 1e5 experiences.

Prints a table of median latency (ms) per corpus size and method, with the ratio to
the smallest size measured in the same run as the baseline:

    .venv/bin/python benchmarks/memory_retrieval.py [--sizes 1000,10000,100000]

* ``lexical``: SQLite FTS5 with bm25 ranking.
* ``embedding``: brute-force cosine over the store's cached ``n x 384`` matrix plus the
  MiniLM embedding of the query (timed inside each search). Embedding 1e5 texts with
  MiniLM on a CPU takes many minutes, so corpora above ``--real-embed-max`` (default
  1e3) get random unit vectors under the model's dimension; the query is still embedded
  by the real model. Such rows are marked ``synthetic vectors``: the latency is real,
  their ranking quality is meaningless. Without the model, a hashing embedder is used.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from optiforge.memory import Embedder, Experience, HashingEmbedder, MiniLMEmbedder, Store

OPS = ["matmul", "softmax", "layernorm", "conv2d", "attention", "reduction", "cholesky", "fft"]
WORDS = [
    "tile",
    "block",
    "warp",
    "thread",
    "shared",
    "memory",
    "register",
    "occupancy",
    "vectorize",
    "unroll",
    "pipeline",
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
    "atomic",
    "barrier",
    "autotune",
    "heuristic",
    "gradient",
    "learning",
    "rate",
    "budget",
    "solver",
    "sparse",
    "dense",
    "factorization",
    "pivot",
    "fill",
    "ordering",
    "kernel",
    "prior",
    "noise",
    "lengthscale",
    "robust",
    "dual",
]
QUERIES = [
    "shared memory bank conflict in the softmax kernel",
    "autotune tile sizes for matmul",
    "sparse cholesky fill ordering",
    "learning rate budget for the solver",
    "prefetch and pipeline stages to hide latency",
    "vectorize loads for bandwidth",
    "robust dual of a budget constraint",
    "gp kernel lengthscale prior",
    "register pressure lowers occupancy",
    "fusion of the epilogue",
]


def corpus(n: int, seed: int = 0) -> list[Experience]:
    """``n`` seeded synthetic experiences over a shared domain vocabulary."""
    rng = random.Random(seed)
    return [
        Experience(
            agent=rng.choice(["kernel_optimizer", "harness_tuner", "solver_tuner"]),
            task_signature=f"{rng.choice(OPS)} {rng.choice([128, 512, 2048])} case {i}",
            trajectory_summary=" ".join(rng.choice(WORDS) for _ in range(8)),
            outcome=rng.choice(["success", "failure"]),
            lesson=" ".join(rng.choice(WORDS) for _ in range(12)),
            tags=[rng.choice(["gpu", "cpu"])],
        )
        for i in range(n)
    ]


class SyntheticCorpusEmbedder:
    """Random unit vectors for bulk corpus text; the real model for short query batches."""

    def __init__(self, real: Embedder, seed: int = 0) -> None:
        self.real = real
        self.rng = np.random.default_rng(seed)
        self.bulk = True

    @property
    def name(self) -> str:
        return self.real.name

    @property
    def dim(self) -> int:
        return self.real.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``n x dim``: random unit rows while ``bulk``; the real model afterwards."""
        if not self.bulk:
            return self.real.embed(texts)
        x = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)


class MemoQueryEmbedder:
    """Wraps an embedder and memoises its vectors: searches then time the store alone."""

    def __init__(self, real: Embedder) -> None:
        self.real = real
        self.memo: dict[str, np.ndarray] = {}

    @property
    def name(self) -> str:
        return self.real.name

    @property
    def dim(self) -> int:
        return self.real.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``n x dim`` from the memo (filled from the real embedder on a miss)."""
        for t in texts:
            if t not in self.memo:
                self.memo[t] = self.real.embed([t])[0]
        return np.stack([self.memo[t] for t in texts])


def _time(store: Store, method: str, repeats: int) -> tuple[float, float]:
    """(first search ms, median ms over ``repeats`` rounds of all QUERIES)."""
    t0 = time.perf_counter()
    store.search(QUERIES[0], k=5, method=method)  # type: ignore[arg-type]
    first = (time.perf_counter() - t0) * 1e3
    times = []
    for _ in range(repeats):
        for q in QUERIES:
            t = time.perf_counter()
            hits = store.search(q, k=5, method=method)  # type: ignore[arg-type]
            times.append((time.perf_counter() - t) * 1e3)
            assert len(hits) == 5, (method, q, len(hits))
    return first, statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeats", type=int, default=5, help="rounds over the 10 queries")
    ap.add_argument("--real-embed-max", type=int, default=1000)
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    real: Embedder = MiniLMEmbedder() if MiniLMEmbedder.available() else HashingEmbedder(384)
    real.embed(["warm up"])  # model load is not retrieval latency
    console = Console(width=150)
    table = Table(title=f"memory top-5 retrieval latency (embedder: {real.name})")
    cols = ("n", "method", "vectors", "build s", "first ms", "median ms", "store-only ms")
    for col in (*cols, "store-only x vs smallest n"):
        table.add_column(col, justify="right" if col not in ("method", "vectors") else "left")
    base: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            recs = corpus(n, seed=n)
            synthetic = n > args.real_embed_max
            emb: Embedder = SyntheticCorpusEmbedder(real) if synthetic else real
            t = time.perf_counter()
            store = Store(f"sqlite:///{Path(tmp) / f'm{n}.db'}", embedder=emb)
            for i in range(0, n, 10_000):
                store.add_experiences(recs[i : i + 10_000])
            if isinstance(emb, SyntheticCorpusEmbedder):
                emb.bulk = False
            build = time.perf_counter() - t
            for method in ("lexical", "embedding"):
                first, med = _time(store, method, args.repeats)
                own = med
                if method == "embedding":
                    # Same store, query vectors memoised: what the store itself costs.
                    live = store.embedder
                    assert live is not None
                    memo = MemoQueryEmbedder(live)
                    memo.embed(QUERIES)  # fill the memo outside the timed searches
                    store.embedder = memo
                    _, own = _time(store, method, args.repeats)
                    store.embedder = live
                base.setdefault(method, own)
                vec = "-" if method == "lexical" else ("synthetic" if synthetic else "real")
                table.add_row(
                    f"{n:,}",
                    method,
                    vec,
                    f"{build:.1f}",
                    f"{first:.1f}",
                    f"{med:.2f}",
                    f"{own:.2f}",
                    f"{own / base[method]:.2f}",
                )
            store.close()
            console.print(f"done n={n:,}")
    console.print(table)
    load = os.getloadavg()[0]
    console.print(f"load average during run: {load:.1f} on {os.cpu_count()} CPUs")
    console.print(
        f"median over {args.repeats} x {len(QUERIES)} queries. 'median ms' includes embedding "
        "the query; 'store-only ms' reuses memoised query vectors (for lexical they are the "
        "same number). 'first ms' includes loading the vector cache. 'synthetic' = random "
        "unit corpus vectors: latency real, ranking meaningless."
    )


if __name__ == "__main__":
    main()

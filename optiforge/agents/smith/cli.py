"""``optiforge smith train``: GRPO on SMITH's build and use rollouts (dev split only)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(help="SMITH: train the tool-building policy.", no_args_is_help=True)


def _num(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return f"{value:.4f}"
    return "-"


@app.command("train")
def train_cmd(
    out: Annotated[
        Path, typer.Option(help="Output directory: log.jsonl and the trained model (model/).")
    ],
    bench: Annotated[
        str, typer.Option(help="A dev-split procedural task (held-out families never train).")
    ] = "procedural/train-families",
    model: Annotated[
        Path | None,
        typer.Option(help="A local model directory (never downloaded); default: a tiny random LM."),
    ] = None,
    steps: Annotated[int, typer.Option(min=1, help="Optimizer steps.")] = 4,
    episodes: Annotated[int, typer.Option(min=1, help="Episodes (task seeds) of rollouts.")] = 2,
    seed: Annotated[int, typer.Option(help="Seed: episodes, data order, sampling.")] = 0,
    num_generations: Annotated[
        int, typer.Option(min=2, help="Completions per prompt (GRPO's group).")
    ] = 4,
    max_completion_length: Annotated[
        int, typer.Option(min=1, help="Tokens per completion, at most.")
    ] = 64,
) -> None:
    """GRPO with TRL: one line per step (loss, and the mean schema, code and outcome
    rewards); the trained model goes to OUT/model."""
    from optiforge.agents.smith.grpo import LOG_KEYS, train
    from optiforge.evals.registry import resolve_task

    task = resolve_task(bench)

    def show(entry: dict[str, Any]) -> None:
        axes = "  ".join(f"{ax} {_num(entry.get(key))}" for ax, key in LOG_KEYS.items())
        typer.echo(f"step {entry.get('step')}  loss {_num(entry.get('loss'))}  {axes}")

    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # the shard-writing bars; one line per step here
    except ImportError:
        pass  # train says which extra is missing
    result = train(task, None if model is None else str(model), out, steps=steps, episodes=episodes,
                   seed=seed, num_generations=num_generations,
                   max_completion_length=max_completion_length, on_step=show)  # fmt: skip
    typer.echo(f"{result['steps']} steps; log {out / 'log.jsonl'}; model {result['model_dir']}")
    rewarded = [e for e in result["log"] if any((e.get(k) or 0) > 0 for k in LOG_KEYS.values())]
    if not rewarded:
        typer.echo("note: every reward was 0, so every group's advantage was 0 and nothing was learned "
                   "(a random tiny model writes no parseable tool or call); train a real model with "
                   "--model DIR", err=True)  # fmt: skip

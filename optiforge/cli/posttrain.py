"""``optiforge posttrain``: post-training the embedded model (issue 41).

``data`` writes the verified training rows (part B); ``run`` trains on them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="Post-train the embedded model: verified data, then training.", no_args_is_help=True
)


@app.command("data")
def data_cmd(
    out: Annotated[Path, typer.Option(help="Output directory: train.jsonl and summary.json.")],
    agents: Annotated[
        str, typer.Option(help="Comma-separated agents (default: every agent with a source).")
    ] = "",
    scale: Annotated[
        int, typer.Option(min=1, help="Multiplies each source's episodes / search rounds.")
    ] = 1,
    max_tokens: Annotated[
        int,
        typer.Option(
            min=0, help="Drop rows whose prompt+reply exceed this many tokens (0: keep all)."
        ),
    ] = 768,
    max_per_reply: Annotated[
        int, typer.Option(min=1, help="Rows kept per near-duplicate reply of one task.")
    ] = 3,
    limit: Annotated[
        int | None,
        typer.Option(
            min=1, help="Only the first N tasks / episodes / forms of each source (a quick look)."
        ),
    ] = None,
) -> None:
    """Build (prompt, reply) rows from dev-split candidates the harness re-measured as
    valid, with each agent's exact ``--model local`` prompts; one progress line per agent."""
    from optiforge.errors import ConfigError
    from optiforge.harness.posttrain import SOURCES, build_dataset, write_dataset

    names = [a.strip() for a in agents.split(",") if a.strip()] or list(SOURCES)
    unknown = [a for a in names if a not in SOURCES]
    if unknown:
        raise ConfigError(
            f"--agents: no data source for {', '.join(unknown)} (sources: {', '.join(SOURCES)})"
        )
    rows, summary = build_dataset(
        names, scale=scale, max_tokens=max_tokens or None, max_per_reply=max_per_reply, limit=limit,
        progress=lambda s: typer.echo(s),
    )  # fmt: skip
    path = write_dataset(rows, summary, out)
    for key, n in sorted(summary.per_agent_format.items()):
        tok = (summary.tokens or {}).get(key)
        extra = f"  tokens mean {tok['mean']:.0f} max {tok['max']:.0f}" if tok else ""
        typer.echo(f"{key}: {n} rows{extra}")
    typer.echo(f"wrote {path / 'train.jsonl'} ({summary.rows} rows; dropped {summary.dropped})")


@app.command("run")
def run_cmd(
    data: Annotated[
        Path, typer.Option(help="A directory with train.jsonl (optiforge posttrain data).")
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="Work directory: checkpoints per phase, log.jsonl, state.json; a rerun resumes."
        ),
    ],
    gguf: Annotated[
        Path | None,
        typer.Option(
            help="The GGUF file to write (default OUT/model.q8_0.gguf); its card goes beside it."
        ),
    ] = None,
    sft_steps: Annotated[int, typer.Option(min=0, help="HALO SFT steps.")] = 150,
    rl_steps: Annotated[
        int, typer.Option(min=0, help="GRPO steps, shared between SMITH and the other agents.")
    ] = 8,
    max_tokens: Annotated[
        int, typer.Option(min=32, help="Longest SFT row / RL prompt, in tokens.")
    ] = 768,
    seed: Annotated[int, typer.Option(help="Seed: data order, sampling, GRPO.")] = 0,
    method: Annotated[str, typer.Option(help="halo, or a baseline: full, blockwise.")] = "halo",
    sft_batch: Annotated[int, typer.Option(min=1, help="Rows per SFT step.")] = 2,
    smith_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of the GRPO steps spent on SMITH.")
    ] = 0.5,
) -> None:
    """SFT with HALO, then GRPO with sandbox-verified rewards, then a q8_0 GGUF for
    --model local/<file>; one line per step."""
    from pydantic import ValidationError  # not at import: `optiforge --help` stays light

    from optiforge.harness.posttrain.train import PostTrainConfig, run

    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:
        pass  # run says which extra is missing
    try:
        config = PostTrainConfig(sft_steps=sft_steps, rl_steps=rl_steps, max_tokens=max_tokens, seed=seed,
                                 method=method, sft_batch=sft_batch, smith_share=smith_share)  # type: ignore[arg-type]  # fmt: skip
    except ValidationError as e:
        first = e.errors()[0]
        where = "--" + ".".join(str(x) for x in first["loc"]).replace("_", "-")
        raise typer.BadParameter(f"{where}: {first['msg']}") from None
    run(data, out, config, gguf_out=gguf, echo=typer.echo)

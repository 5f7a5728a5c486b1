"""``optiforge posttrain``: post-training the embedded model (issue 41).

``data`` writes the verified training rows (part B); ``run`` trains on them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

app = typer.Typer(
    help="Post-train the embedded model: verified data, then training.", no_args_is_help=True
)


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

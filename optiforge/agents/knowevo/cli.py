"""``optiforge knowevo tree RUN``: render a KnowEvo run's strategy mutation tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from optiforge.errors import RunRecordError

app = typer.Typer(help="KnowEvo: inspect strategy mutation trees.", no_args_is_help=True)


@app.command("tree")
def tree(
    run: Annotated[Path, typer.Argument(help="A knowevo run directory.")],
    block: Annotated[
        str | None, typer.Option(help="Also print the final strategy's source of this block.")
    ] = None,
) -> None:
    """The tree: each strategy's edit, rollouts, mean reward, branch credit and Spearman
    correlation with the measured fitness; the final strategy is marked *."""
    from optiforge.agents.knowevo.tree import render

    path = run / "tree.json"
    if not path.is_file():
        raise RunRecordError(f"{run} has no tree.json (is it a finished knowevo run?)")
    nodes = json.loads(path.read_text())["nodes"]
    typer.echo(render(nodes))
    final = next((n for n in nodes if n.get("final")), None)
    if final is not None:
        weights = ", ".join(f"{b} {w:g}" for b, w in final["strategy"]["weights"].items())
        typer.echo(f"\nfinal strategy #{final['id']}: weights {weights}")
        if block is not None:
            src = final["strategy"]["blocks"].get(block)
            if src is None:
                raise RunRecordError(f"the final strategy has no block {block!r}")
            typer.echo(src)

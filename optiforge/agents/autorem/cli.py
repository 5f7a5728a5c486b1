"""``optiforge autorem ...``: offline adaptation, single-instance solve, accuracy table.

The agent owns these verbs (``SPEC.cli``); the CLI mounts ``app`` as ``optiforge autorem``
(``optiforge.agents.AGENT_VERBS``). This module is CLI code: it builds run contexts with the
harness, so no agent module imports it. Errors are ``OptiforgeError`` subclasses with
one-line messages; the top-level CLI prints them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

app = typer.Typer(
    help="AutoREM: build the experience memory (adapt), solve one instance, tabulate evals.",
    no_args_is_help=True,
)
DEFAULT_MEMORY = "project:autorem"
MEMORY_HELP = (
    "Experience memory (default project:autorem, ~/.optiforge/projects/autorem.db; evaluate "
    "with `optiforge eval autorem --memory project:autorem`), global, none, or a URL."
)
_console = Console(soft_wrap=True)  # tables and reports must not be re-wrapped


def _context(
    model: str,
    api_base: str | None,
    memory: str | None,
    max_llm_calls: int | None,
    seed: int,
    embed: bool = True,
) -> Any:
    """A RunContext like the runner's; the memory opens with or without the MiniLM embedder.
    The provider is checked first: a missing key, an unknown provider or a dead --api-base
    is one line and exit 4, before any task is built."""
    from optiforge.llm.preflight import check_provider

    check_provider(model, api_base)
    from optiforge.config import RunSettings
    from optiforge.harness.context import build_context
    from optiforge.memory import Store

    settings = RunSettings(
        model=model, api_base=api_base, memory="none", max_llm_calls=max_llm_calls, seed=seed
    )
    from optiforge.memory.scope import scoped_url

    ctx = build_context(settings, None, "autorem")
    url = scoped_url(memory or DEFAULT_MEMORY, None)
    if url is not None:
        ctx.memory = Store(url, embedder="auto" if embed else None)
    return ctx


def _close(ctx: Any) -> None:
    if ctx.memory is not None:
        ctx.memory.close()


@app.command()
def adapt(
    split: Annotated[str, typer.Option(help="Training split (dev).")] = "dev",
    model: Annotated[str, typer.Option(help="litellm model string or 'offline'.")] = "offline",
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL.")] = None,
    memory: Annotated[str | None, typer.Option(help=MEMORY_HELP)] = None,
    n: Annotated[int | None, typer.Option(help="Only the first N instances.")] = None,
    n_per_split: Annotated[int, typer.Option(help="Generated instances per split.")] = 30,
    reflector: Annotated[str, typer.Option(help="auto, llm or rules.")] = "auto",
    max_attempts: Annotated[int, typer.Option(help="Code attempts per instance.")] = 3,
    max_llm_calls: Annotated[int | None, typer.Option(help="Stop before more LLM calls.")] = None,
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Write the AdaptationReport JSON here.")] = None,
    embed: Annotated[
        bool, typer.Option("--embed/--no-embed", help="MiniLM retrieval (else lexical).")
    ] = True,
) -> None:
    """Run AutoREM over a split and reflect failed trajectories into the memory."""
    from optiforge.agents.autorem.adapt import adapt as run_adapt
    from optiforge.agents.autorem.config import AutoREMConfig
    from optiforge.config import build_config
    from optiforge.evals.suites.autoro import AutoROBenchmark

    cfg = build_config(
        AutoREMConfig,
        base={"reflector": reflector, "max_attempts": max_attempts},
        where="autorem config",
    )
    ctx = _context(model, api_base, memory, max_llm_calls, seed, embed)
    try:
        report = run_adapt(AutoROBenchmark(n_per_split=n_per_split), split, ctx, cfg, n=n)
    finally:
        _close(ctx)
    _console.print(report.text())
    if report.model == "offline":
        _console.print(
            "[dim]offline proposer = reference reformulator: it does not fail on generated "
            "instances, so it writes no entries; adapt with a model to build a memory.[/]"
        )
    if out is not None:
        out.write_text(report.model_dump_json(indent=2) + "\n")


@app.command()
def curate(
    memory: Annotated[str | None, typer.Option(help="Raw memory to curate. " + MEMORY_HELP)] = None,
    into: Annotated[
        str, typer.Option(help="Fresh store for the curated lessons (project:NAME or a URL).")
    ] = "project:autorem-curated",
    split: Annotated[str, typer.Option(help="Validation split the pruning runs on.")] = "app-val",
    model: Annotated[str, typer.Option(help="litellm model string or 'offline'.")] = "offline",
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL.")] = None,
    max_attempts: Annotated[int, typer.Option(help="Code attempts per instance.")] = 3,
    keep_untested: Annotated[
        bool, typer.Option(help="Keep groups never retrieved on validation.")
    ] = False,
    workers: Annotated[int, typer.Option(help="Validation tasks run at once.")] = 2,
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Write the CurationReport JSON here.")] = None,
) -> None:
    """Consolidate the raw lessons, prune those without a positive effect on validation."""
    from optiforge.agents.autorem.config import AutoREMConfig
    from optiforge.agents.autorem.curate import agent_evaluator
    from optiforge.agents.autorem.curate import curate as run_curate
    from optiforge.errors import ConfigError
    from optiforge.evals.suites.autoro import AutoROBenchmark
    from optiforge.memory import Store
    from optiforge.memory.scope import scoped_url

    ctx = _context(model, api_base, memory, None, seed, embed=False)
    url = scoped_url(into, None)
    if ctx.memory is None or url is None:
        raise ConfigError("curate needs a raw memory (--memory) and a destination (--into)")
    dst = Store(url, embedder=None)
    try:
        evaluate = agent_evaluator(ctx, AutoREMConfig(max_attempts=max_attempts), workers)
        tasks = AutoROBenchmark(n_per_split=0).tasks(split)
        report = run_curate(ctx.memory, dst, tasks, evaluate, val_split=split,
                            keep_untested=keep_untested)  # fmt: skip
    finally:
        dst.close()
        _close(ctx)
    _console.print(report.text())
    if out is not None:
        out.write_text(report.model_dump_json(indent=2) + "\n")


@app.command()
def solve(
    instance: Annotated[Path, typer.Argument(help="ROInstance or ROProblem JSON file.")],
    model: Annotated[str, typer.Option(help="litellm model string or 'offline'.")] = "offline",
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL.")] = None,
    memory: Annotated[str | None, typer.Option(help=MEMORY_HELP)] = None,
    max_attempts: Annotated[int, typer.Option(help="Code attempts.")] = 3,
    embed: Annotated[
        bool, typer.Option("--embed/--no-embed", help="MiniLM retrieval (else lexical).")
    ] = True,
) -> None:
    """Solve one instance; print the verdict and the accepted program."""
    from optiforge.agents.autorem.agent import run_instance
    from optiforge.agents.autorem.config import AutoREMConfig
    from optiforge.agents.autorem.problem import load_task
    from optiforge.agents.autorem.report import outcome_from_state

    task = load_task(instance)
    ctx = _context(model, api_base, memory, None, 0, embed)
    try:
        state = run_instance(task, ctx, AutoREMConfig(max_attempts=max_attempts))
    finally:
        _close(ctx)
    outcome = outcome_from_state(state, memory_used=ctx.memory is not None)
    ex = outcome.extra
    verdict = "CORRECT" if ex["solved"] else "REJECTED"
    _console.print(f"{verdict} after {ex['attempts']} attempt(s) ({ex.get('tolerance')})")
    for r in ex.get("last_reasons", []):
        _console.print(f"- {r}")
    if outcome.best_candidate:
        _console.print(outcome.best_candidate, markup=False, highlight=False)


@app.command()
def table(
    sources: Annotated[list[Path], typer.Argument(help="Eval directories or results.jsonl files.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print rows count as JSON too.")] = False,
) -> None:
    """Accuracy per split and method, LLM calls and tokens per solved instance."""
    from optiforge.agents.autorem.report import accuracy_table, load_rows

    _console.print(accuracy_table(sources), markup=False, highlight=False)
    if json_out:
        _console.print(json.dumps({"rows": len(load_rows(sources))}))

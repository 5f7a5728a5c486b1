"""``optiforge pipeline ...``: run a pipeline of agents (``configs/pipelines/``), show one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from optiforge.cli.launch import (
    check_out_dir,
    err_console,
    final_status,
    interrupted,
    preflight_provider,
    prewarm_llm,
    run_settings,
    sandbox_policy,
)
from optiforge.errors import ConfigError

app = typer.Typer(help="Run pipelines: agents composed into one graph.", no_args_is_help=True)


@app.command("run")
def pipeline_run(
    file: Annotated[
        str | None,
        typer.Argument(
            help="Pipeline YAML, or a bundled pipeline's name (`optiforge list pipelines`)."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", "-m", help="Model of every node (default: the file's, else offline)."
        ),
    ] = None,
    api_base: Annotated[
        str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of every node without its own.")] = 0,
    out: Annotated[
        Path | None, typer.Option(help="Run directory (default runs/pipeline-<name>-<id>).")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option(help="Continue the interrupted pipeline run in this directory.")
    ] = None,
    record: Annotated[
        Path | None, typer.Option(help="Record every node's LLM exchanges to this cassette.")
    ] = None,
    replay: Annotated[
        Path | None, typer.Option(help="Answer LLM requests from this cassette only.")
    ] = None,
    cache: Annotated[Path | None, typer.Option(help="SQLite response cache file.")] = None,
    workers: Annotated[
        int, typer.Option(min=1, max=256, help="Parallel evaluation workers per node.")
    ] = 1,
    executor: Annotated[
        str,
        typer.Option(
            help="What runs each node's evaluations: thread, process, or ray (a local "
            "Ray with --workers CPUs, or the cluster at --ray-address)."
        ),
    ] = "thread",
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster for --executor ray.")] = None,
    memory: Annotated[
        str | None,
        typer.Option(
            help="The one memory of every node (default: the file's, else run: this "
            "pipeline run's own memory.db): project:NAME, global, none, or a URL."
        ),
    ] = None,
    unsafe_sandbox: Annotated[
        bool,
        typer.Option(
            "--unsafe-sandbox",
            help="Run LLM-written code where the sandbox does "
            "not meet its containment promise (see `optiforge doctor`).",
        ),
    ] = False,
) -> None:
    """Run a pipeline end to end: one run directory, one event log, one ledger, one memory."""
    from optiforge.harness.pipelines import (
        find_pipeline,
        load_pipeline,
        parse_pipeline,
        run_pipeline,
    )
    from optiforge.runs import new_run_id, read_manifest

    if resume is not None:
        if not (resume / "manifest.json").is_file():
            raise ConfigError(f"--resume {resume}: not a run directory (no manifest.json)")
        manifest = read_manifest(resume)
        if manifest.get("kind") != "pipeline":
            raise ConfigError(
                f"--resume {resume}: not a pipeline run (continue it with `optiforge run --resume`)"
            )
        cfg = manifest.get("config", {})
        spec = parse_pipeline(cfg.get("pipeline"), where=f"{resume}/manifest.json")
        from optiforge.config import RunSettings

        settings = RunSettings.model_validate(cfg.get("settings", {}))
        out_dir, source = resume, cfg.get("file")
    else:
        if file is None:
            raise ConfigError("give a pipeline FILE (or a bundled name), or --resume RUN_DIR")
        path = find_pipeline(file)
        spec = load_pipeline(path)
        if memory is not None:
            from optiforge.memory.scope import scoped_url

            scoped_url(memory, None)  # a bad scope fails here, before anything is written
            spec = spec.model_copy(update={"memory": memory})
        settings = run_settings(
            config=None, overrides=None, model=model or spec.model or "offline", api_base=api_base,
            seed=seed, record=record, replay=replay, cache=cache, workers=workers,
            executor=executor, ray_address=ray_address,
        )  # fmt: skip
        check_out_dir(out)
        out_dir = out or Path("runs") / new_run_id(f"pipeline-{spec.name}")
        source = str(path)
    preflight_provider(settings.model, settings.api_base, settings.replay)
    prewarm_llm(settings.model, settings.api_base, settings.replay)
    sandbox_policy(unsafe_sandbox, settings.sandbox)
    err_console.print(
        f"{'resuming' if resume else 'pipeline'} {out_dir}: {spec.name} "
        f"({' -> '.join(n.id for n in spec.nodes)}), model {settings.model}",
        highlight=False, soft_wrap=True,
    )  # fmt: skip

    def on_node(what: str, info: dict[str, Any]) -> None:
        if what == "start":
            doing = f"{info.get('agent')} on {info.get('task')}" if info.get("agent") else (
                f"step {info.get('step')} on {info.get('input') or info.get('task')}")  # fmt: skip
            err_console.print(
                f"[bold]node {info['node']}[/]: {doing}", highlight=False, soft_wrap=True
            )
            return
        score = info.get("best_score")
        shown = "" if score is None else f" · score {score:.6g}"
        if info.get("baseline_score") is not None:
            shown += f" (baseline {info.get('baseline_name')} {info['baseline_score']:.6g})"
        colour = {"finished": "green", "stopped": "yellow"}.get(str(info.get("status")), "red")
        err_console.print(
            f"  [{colour}]{info.get('status')}[/] ({info.get('status_reason')}){shown} · {info.get('dir')}",
            highlight=False, soft_wrap=True,
        )  # fmt: skip

    last: dict[str, int] = {}

    def node_progress(node: str, info: dict[str, Any]) -> None:
        n = int(info.get("evaluations") or 0)
        if n - last.get(node, -10) >= 10:  # a line every ten evaluations
            last[node] = n
            best = info.get("best")
            tail = f", observed best {best:.5g}" if isinstance(best, float) else ""
            err_console.print(f"  {n}/{info.get('max_evaluations', '?')} evaluations{tail}",
                              highlight=False)  # fmt: skip

    from optiforge.harness.wallcap import arm_for_command

    arm_for_command(spec.budget.max_wall_s, Path(out_dir))  # the file's cap, hard
    try:
        summary = run_pipeline(spec, settings, out_dir, resume=resume is not None, source=source,
                               on_node=on_node, node_progress=node_progress)  # fmt: skip
    except KeyboardInterrupt:
        interrupted(f"optiforge pipeline run --resume {out_dir}", out_dir)
    print((Path(out_dir) / "summary.md").read_text(), end="")
    raise typer.Exit(final_status(summary, Path(out_dir)))


@app.command("show")
def pipeline_show(
    file: Annotated[str, typer.Argument(help="Pipeline YAML or a bundled pipeline's name.")],
) -> None:
    """Validate a pipeline and print its nodes and edges."""
    from optiforge.harness.pipelines import find_pipeline, load_pipeline

    spec = load_pipeline(find_pipeline(file))
    print(f"{spec.name}: {spec.description}")
    print(f"memory: {spec.memory}; caps: {spec.budget.model_dump(exclude_none=True) or 'none'}")
    for node in spec.nodes:
        what = f"{node.method or node.agent} on {node.task}" if node.agent else f"step {node.step}"
        edges = ", ".join(
            f"{r.when} -> {r.to}" for r in node.rules(spec.following(node.id))
        )  # fmt: skip
        print(f"  {node.id}: {what}  [{edges}]")

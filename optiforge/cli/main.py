"""The ``optiforge`` command line (typer + rich).

Every ``OptiforgeError`` becomes one readable line on stderr and exit code 2; ``--debug``
shows the traceback instead. Heavy libraries (torch, litellm, ray) are imported inside
the commands that need them so ``optiforge --help`` stays fast.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from optiforge import __version__
from optiforge.cli.launch import (
    EVAL_MARKERS,
    check_out_dir,
    err_console,
    final_status,
    interrupted,
    preflight_provider,
    prewarm_llm,
    run_settings,
    sandbox_policy,
)
from optiforge.cli.memory import app as memory_app
from optiforge.cli.pipeline import app as pipeline_app
from optiforge.cli.posttrain import app as posttrain_app
from optiforge.cli.verbs import RootGroup, mount_agent_verbs
from optiforge.errors import ConfigError, OptiforgeError
from optiforge.harness.status import ExitCode, error_exit
from optiforge.limits import MAX_BUDGET, MAX_SEEDS, MAX_WALL_S, MAX_WORKERS

if TYPE_CHECKING:  # pydantic stays out of `optiforge --help` (test_help_imports_nothing_heavy)
    from optiforge.harness.summary import RunSummary

console = Console()
# Listings piped to a file or a pager keep every column (rich assumes 80 off a terminal).
list_console = Console(width=None if console.is_terminal else 1000)

app = typer.Typer(
    name="optiforge",
    help="Automated optimization engineering with LLM agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=RootGroup,
)
list_app = typer.Typer(
    help="List providers, agents, benchmarks, tasks or pipelines.", no_args_is_help=True
)
llm_app = typer.Typer(help="Talk to an LLM provider.", no_args_is_help=True)
sandbox_app = typer.Typer(help="Run commands in a sandbox.", no_args_is_help=True)
app.add_typer(list_app, name="list")
app.add_typer(llm_app, name="llm")
app.add_typer(sandbox_app, name="sandbox")

_STATE: dict[str, Any] = {"debug": False}


def _version(value: bool) -> None:
    if value:
        console.print(f"optiforge {__version__}")
        raise typer.Exit()


MEMORY_HELP = (
    "Experience memory: run (default: this run's own), project:NAME (shared by runs naming "
    "it), global (~/.optiforge/memory.db), none, or a SQLAlchemy URL."
)

UnsafeOpt = Annotated[
    bool,
    typer.Option(
        "--unsafe-sandbox",
        help="Run LLM-written code even where the sandbox does not meet its containment "
        "promise (see `optiforge doctor`).",
    ),
]


def _check_settings_provider(settings: Any, model: str, api_base: str | None) -> None:
    """``preflight_provider`` again when a --config file chose another model or server."""
    if (settings.model, settings.api_base) != (model, api_base):
        preflight_provider(settings.model, settings.api_base, settings.replay)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    """optiforge: agents for automated optimization engineering."""
    _STATE["debug"] = debug


# ---------------------------------------------------------------------------- list


@list_app.command("providers")
def list_providers() -> None:
    """Provider strings that --model accepts, with the environment each needs."""
    from optiforge.llm.providers import PROVIDERS

    table = Table(title="LLM providers (any litellm provider string works)")
    for col in ("provider", "--model example", "--api-base", "key variable", "notes"):
        table.add_column(col)
    for p in PROVIDERS:
        key = (
            "-"
            if p.env_var is None
            else f"{p.env_var} ({'set' if os.environ.get(p.env_var) else 'not set'})"
        )
        table.add_row(p.provider, p.model, p.api_base or "-", key, p.notes)
    list_console.print(table)


@list_app.command("agents")
def list_agents() -> None:
    """Registered agents (built in and from the optiforge.agents entry-point group)."""
    from optiforge.agents import agent_infos

    table = Table(title="Agents")
    table.add_column("name")
    table.add_column("default benchmark")
    table.add_column("description")
    for name, info in agent_infos().items():
        table.add_row(name, info.default_benchmark or "-", info.description)
    list_console.print(table)


@list_app.command("pipelines")
def list_pipelines() -> None:
    """Bundled pipelines (configs/pipelines/) and their descriptions."""
    from optiforge.harness.pipelines import bundled_pipelines

    table = Table(title="Pipelines (`optiforge pipeline run NAME`)")
    table.add_column("name")
    table.add_column("file")
    table.add_column("description")
    for name, path, desc in bundled_pipelines():
        table.add_row(name, str(path), desc)
    list_console.print(table)


@list_app.command("benchmarks")
def list_benchmarks() -> None:
    """Bundled benchmark suites and their task counts per split."""
    from optiforge.evals.index import load_index  # stored metadata: no suite is imported

    table = Table(title="Benchmarks")
    table.add_column("suite")
    table.add_column("splits")
    table.add_column("description")
    for name, info in load_index()["suites"].items():
        table.add_row(name, ", ".join(info["splits"]), info["description"])
    list_console.print(table)


@list_app.command("optimizers")
def list_optimizers() -> None:
    """Numerical optimizers: the black-box portfolio, the ask/tell registry and the training catalogue."""
    from optiforge.solvers import asktell
    from optiforge.solvers.blackbox.portfolio import CORE, PORTFOLIO

    table = Table(title="Optimizers (a formulation's `method`; `solvers.asktell.make(NAME)`)")
    table.add_column("name")
    table.add_column("portfolio")
    table.add_column("domain")
    table.add_column("description")
    for name in CORE:
        table.add_row(name, "yes", "search space", "the black-box portfolio's own")
    for name in asktell.names():
        cls = asktell.OPTIMIZERS[name]
        domain = "box" if cls.box else "R^d (unbounded)"
        if cls.max_dim is not None:
            domain += f", d <= {cls.max_dim}"
        table.add_row(name, "yes" if name in PORTFOLIO else "no", domain, cls.summary)
    list_console.print(table)
    list_training_methods()
    list_rl_methods()


def list_training_methods() -> None:
    """The training catalogue (``solvers.train.catalogue``): names from ``ENTRIES``, what
    each is from the stored index (no method is imported unless it is not indexed yet)."""
    from rich.markup import escape

    from optiforge.solvers.train import catalogue

    table = Table(title='Training optimizers (a train plan\'s "optimizer"; `solvers.train.catalogue.get(NAME)`)')  # fmt: skip
    for col in ("name", "problem kinds", "hyperparameters: range, default", "description"):
        table.add_column(col)
    for name in catalogue.names():
        d = catalogue.info(name)
        hps = ", ".join(f"{k} [{h['low']:g}, {h['high']:g}] {h['default']:g}{' log' if h['log'] else ''}"
                        for k, h in d["hparams"].items())  # fmt: skip
        table.add_row(name, ", ".join(d["kinds"]), escape(hps) or "-", escape(d["description"]))
    list_console.print(table)


def list_rl_methods() -> None:
    """The RL catalogue (``solvers.rl.catalogue``): names and where each lives, from
    ``ENTRIES`` (nothing imported: torch, gymnasium and a module not merged yet stay out)."""
    from optiforge.solvers.rl import catalogue

    table = Table(title='RL methods (an rl plan\'s "method"; `solvers.rl.catalogue.get(NAME)`; '
                  "`optiforge eval formulator --bench rl` offers those that import)")  # fmt: skip
    for col in ("name", "module:attribute"):
        table.add_column(col)
    for name in catalogue.names():
        table.add_row(name, catalogue.ENTRIES[name])
    list_console.print(table)


@list_app.command("tasks")
def list_tasks(
    bench: Annotated[
        str | None, typer.Argument(help="Suite (default: every suite).", show_default=False)
    ] = None,
    split: Annotated[str | None, typer.Option(help="Only this split.")] = None,
) -> None:
    """Tasks of a suite (or of every suite) per split, as `--bench SUITE/TASK@SPLIT` takes them."""
    from optiforge.evals.index import load_index, suite_info  # no suite import, no task built

    names = [bench] if bench else list(load_index()["suites"])
    table = Table(title="Tasks")
    for col in ("--bench", "metric", "budget"):
        table.add_column(col)
    for name in names:
        suite = suite_info(name)
        splits = [split] if split else list(suite["splits"])
        for sp in splits:
            if sp not in suite["splits"]:
                raise ConfigError(
                    f"{name} has no split {sp!r} (splits: {', '.join(suite['splits'])})"
                )
            for t in suite["tasks"][sp]:
                arrow = "higher" if t["higher_is_better"] else "lower"
                table.add_row(f"{name}/{t['name']}@{sp}", f"{t['metric']} ({arrow} is better)",
                              str(t["budget"] or "-"))  # fmt: skip
    list_console.print(table)


config_app = typer.Typer(help="Agent options: keys, defaults, docs.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("show")
def config_show(
    agent: Annotated[str, typer.Argument(help="Agent name (see `optiforge list agents`).")],
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON list.")] = False,
) -> None:
    """Every option of AGENT with its type, default and meaning (set with --set agent.KEY=V)."""
    from optiforge.agents import get_agent
    from optiforge.config import describe_model

    spec = get_agent(agent)
    options = describe_model(spec.config_model)
    if json_out:
        sys.stdout.write(json.dumps([o.model_dump(mode="json") for o in options]) + "\n")
        return
    table = Table(
        title=f"{spec.name} options (--set agent.KEY=VALUE, or agent: in a --config YAML)"
    )
    for col in ("key", "type", "default", "meaning"):
        table.add_column(col)
    for o in options:
        table.add_row(o.key, o.type, json.dumps(o.default, default=str), o.doc)
    list_console.print(table)


# ---------------------------------------------------------------------------- doctor


@app.command()
def doctor(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """What this machine offers (Docker, GPU, Ray, isolation, embeddings) and what each absence means."""
    from optiforge.doctor import run_checks

    checks = run_checks()
    if json_out:
        console.print_json(json.dumps([c.model_dump() for c in checks]))
        return
    table = Table(title=f"optiforge {__version__} doctor")
    table.add_column("check")
    table.add_column("status")
    table.add_column("detail")
    table.add_column("if missing")
    for c in checks:
        status = "[green]ok[/]" if c.ok else "[yellow]missing[/]"
        table.add_row(c.name, status, c.detail, "" if c.ok else c.consequence)
    console.print(table)


# ---------------------------------------------------------------------------- llm


@llm_app.command("ping")
def llm_ping(
    model: Annotated[str, typer.Option("--model", "-m", help="litellm provider string.")],
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL.")] = None,
    timeout: Annotated[
        float, typer.Option(min=0.1, max=3600.0, help="Seconds before giving up.")
    ] = 30.0,
) -> None:
    """Make one call and print latency, tokens and cost."""
    from optiforge.llm import make_llm, ping

    llm = make_llm(model, api_base=api_base, timeout_s=timeout)
    if llm is None:
        raise ConfigError("--model offline means 'no LLM': there is nothing to ping")
    rec = ping(llm)
    cost = f"${rec.cost_usd:.6f}" if rec.cost_known else "unknown (not in litellm's price map)"
    console.print(
        f"[green]ok[/] {rec.model}: {rec.latency_s * 1000:.0f} ms, "
        f"{rec.tokens_in} tokens in / {rec.tokens_out} out, cost {cost}"
    )


# ---------------------------------------------------------------------------- sandbox


@sandbox_app.command(
    "exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def sandbox_exec(
    ctx: typer.Context,
    backend: Annotated[str, typer.Option(help="local or docker.")] = "local",
    timeout: Annotated[
        float, typer.Option(min=0.01, max=86_400.0, help="Wall-clock limit in seconds.")
    ] = 30.0,
    memory_mb: Annotated[
        int, typer.Option("--memory-mb", min=16, max=1_048_576, help="Address-space cap.")
    ] = 2048,
    network: Annotated[bool, typer.Option("--network", help="Allow network access.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Run CMD in a sandbox: optiforge sandbox exec [OPTIONS] -- CMD..."""
    from optiforge.sandboxes import get_sandbox

    cmd = list(ctx.args)
    if not cmd:
        raise ConfigError("no command given: use `optiforge sandbox exec -- CMD ...`")
    sandbox = get_sandbox(backend, trusted_code=True)
    res = sandbox.run(cmd, timeout_s=timeout, memory_mb=memory_mb, network=network)
    payload = {
        "returncode": res.returncode,
        "timed_out": res.timed_out,
        "duration_s": round(res.duration_s, 4),
        "peak_rss_mb": round(res.peak_rss_mb, 1),
        "killed_by": res.killed_by,
        "stdout": res.stdout,
        "stderr": res.stderr,
        "protections": res.protections.model_dump(mode="json"),
        "unmet": res.protections.unmet(),
    }
    if json_out:
        sys.stdout.write(json.dumps(payload) + "\n")
    else:
        # The command's own output, byte for byte (rich would re-wrap it).
        sys.stdout.write(res.stdout)
        sys.stdout.flush()
        sys.stderr.write(res.stderr)
        sys.stderr.flush()
        unmet = res.protections.unmet()
        mode = getattr(sandbox, "isolation", backend)
        err_console.print(
            f"[dim]exit {res.returncode}{' (timed out)' if res.timed_out else ''}"
            f"{f' (killed by {res.killed_by})' if res.killed_by else ''}, "
            f"{res.duration_s:.3f} s, peak {res.peak_rss_mb:.0f} MB; sandbox {backend}/{mode}: "
            + (
                "containment promise met"
                if not unmet
                else "promise UNMET: " + "; ".join(f"{k} ({v})" for k, v in sorted(unmet.items()))
            )
            + "[/]"
        )
    raise typer.Exit(res.returncode if 0 <= res.returncode < 256 else 1)


# ---------------------------------------------------------------------------- run / eval

ModelOpt = Annotated[
    str, typer.Option("--model", "-m", help="litellm provider string, or 'offline' (no LLM).")
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a config value: key.path=value (repeatable)."),
]


def _progress_printer() -> tuple[Any, Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    )
    return prog, None


@app.command()
def run(
    agent: Annotated[str, typer.Argument(help="Agent name (see `optiforge list agents`).")],
    bench: Annotated[
        str | None,
        typer.Option(
            "--bench",
            "-b",
            help="SUITE/TASK or SUITE/TASK@SPLIT (default: the agent's suite, first dev task).",
        ),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_BUDGET, help="Evaluations the agent may spend."),
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Random seed.")] = 0,
    model: ModelOpt = "offline",
    api_base: Annotated[
        str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory (default runs/<id>).")] = None,
    resume: Annotated[
        Path | None, typer.Option(help="Continue the interrupted run in this directory.")
    ] = None,
    force_restart: Annotated[
        bool,
        typer.Option(
            "--force-restart",
            help="With --resume: move a damaged run aside (DIR.damaged-<time>) and start "
            "the same task over in DIR.",
        ),
    ] = False,
    record: Annotated[
        Path | None, typer.Option(help="Record LLM exchanges to this cassette.")
    ] = None,
    replay: Annotated[
        Path | None, typer.Option(help="Answer LLM requests from this cassette only.")
    ] = None,
    cache: Annotated[Path | None, typer.Option(help="SQLite response cache file.")] = None,
    memory: Annotated[str | None, typer.Option(help=MEMORY_HELP)] = None,
    sandbox: Annotated[str, typer.Option(help="Sandbox back end: local or docker.")] = "local",
    unsafe_sandbox: UnsafeOpt = False,
    workers: Annotated[
        int, typer.Option(min=1, max=MAX_WORKERS, help="Parallel evaluation workers.")
    ] = 1,
    executor: Annotated[
        str,
        typer.Option(
            help="What runs the evaluations: process (local worker processes), thread "
            "(threads here; each evaluation is a sandboxed subprocess anyway) or ray (a local "
            "Ray with --workers CPUs, or the cluster at --ray-address)."
        ),
    ] = "thread",
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster for --executor ray (ray://host:10001, auto).")
    ] = None,
    max_llm_calls: Annotated[
        int | None, typer.Option(min=0, help="Stop before more LLM calls than this.")
    ] = None,
    max_usd: Annotated[
        float | None, typer.Option(min=0.0, help="Stop before spending more than this (USD).")
    ] = None,
    max_wall_s: Annotated[
        float | None,
        typer.Option(min=0.001, max=MAX_WALL_S, help="Stop after this many seconds."),
    ] = None,
    config: Annotated[Path | None, typer.Option(help="YAML preset (see configs/).")] = None,
    overrides: SetOpt = None,
) -> None:
    """Run AGENT on one task; writes OUT/summary.json, events.jsonl and a convergence plot."""
    preflight_provider(model, api_base, replay)
    prewarm_llm(model, api_base, replay)
    sandbox_policy(unsafe_sandbox, sandbox)
    from optiforge.agents import get_agent
    from optiforge.evals.registry import get_benchmark, resolve_task
    from optiforge.harness.plot_later import spawn_run_plot
    from optiforge.runs import new_run_id

    spec = get_agent(agent)
    settings = run_settings(
        config=config,
        overrides=overrides,
        model=model,
        api_base=api_base,
        seed=seed,
        budget=budget,
        record=record,
        replay=replay,
        cache=cache,
        memory=memory,
        sandbox=sandbox,
        workers=workers,
        executor=executor,
        ray_address=ray_address,
        max_llm_calls=max_llm_calls,
        max_usd=max_usd,
        max_wall_s=max_wall_s,
    )
    _check_settings_provider(settings, model, api_base)
    if resume is not None:
        from optiforge.runs import read_manifest

        if not (resume / "manifest.json").is_file():
            raise ConfigError(f"--resume {resume}: not a run directory (no manifest.json)")
        cfg = read_manifest(resume).get("config", {})
        recorded = cfg.get("agent")
        if recorded and recorded != spec.name:
            raise ConfigError(
                f"--resume {resume}: that run is {recorded}'s, not {spec.name}'s; "
                f"continue it with `optiforge run {recorded} --resume {resume}`"
            )
        ref = cfg.get("task") or ""
        task = resolve_task(ref)
        out_dir = resume
        settings = _resumed_settings(cfg, settings)
        if force_restart:
            from optiforge.config import RunSettings

            # the same run over: its recorded settings (budget, seed, model, ...)
            settings = RunSettings.model_validate(cfg.get("settings", settings.model_dump()))
            aside = resume.with_name(f"{resume.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
            resume.rename(aside)
            err_console.print(f"--force-restart: moved {resume} to {aside}; starting over")
            resume = None
    else:
        if force_restart:
            raise ConfigError("--force-restart goes with --resume RUN_DIR")
        if bench is None:
            if not spec.default_benchmark:
                raise ConfigError(f"{spec.name} has no default benchmark: pass --bench SUITE/TASK")
            bench = spec.default_benchmark
        if "/" not in bench:
            first = get_benchmark(bench).tasks("dev")[0]
            bench = f"{bench}/{first.name}@dev"
        task = resolve_task(bench)
        check_out_dir(out)
        out_dir = out or Path("runs") / new_run_id(spec.name)
    from optiforge.config import build_config

    build_config(spec.config_model, base=settings.agent, where=f"{spec.name} config")
    spec.check_task(task)
    out_dir = Path(out_dir)
    from optiforge.harness.wallcap import arm_for_command

    arm_for_command(settings.max_wall_s, out_dir)  # a hard cap: see optiforge.harness.wallcap
    err_console.print(
        f"{'resuming' if resume is not None else 'run'} {out_dir}: {spec.name} on "
        f"{task.suite}/{task.name}@{task.split}, model {settings.model}, seed {settings.seed}",
        highlight=False,
        soft_wrap=True,
    )
    prog, _ = _progress_printer()
    try:
        summary = _run_with_progress(prog, spec, task, settings, out_dir, resume is not None)
    except KeyboardInterrupt:
        interrupted(f"optiforge run {spec.name} --resume {out_dir}", out_dir)
    plot = spawn_run_plot(summary, out_dir)  # drawn in a process of its own: exit now
    _print_run_summary(summary, out_dir, plot)
    _print_notes(summary.notes)
    raise typer.Exit(final_status(summary.row(), out_dir))


def _print_notes(notes: list[str]) -> None:
    """The run's notes (``summary.json``'s ``notes``: what the budget changed), as warnings."""
    for note in notes:
        err_console.print(f"[yellow]warning[/]: {note}", highlight=False, soft_wrap=True)


def _resumed_settings(cfg: dict[str, Any], settings: Any) -> Any:
    """A resumed run's own settings (header, progress total); warn about ignored flags."""
    from optiforge.cli.resume import resume_warning
    from optiforge.harness.resume import resumed_settings

    recorded = cfg.get("settings")
    warning = resume_warning(recorded or {})
    if warning:
        err_console.print(f"[yellow]warning[/]: {warning}", highlight=False, soft_wrap=True)
    kept = resumed_settings(recorded, settings)
    prewarm_llm(kept.model, kept.api_base, kept.replay)  # the recorded model, not the flag's
    return kept


def _run_with_progress(
    prog: Any, spec: Any, task: Any, settings: Any, out_dir: Path, resume: bool
) -> RunSummary:
    from optiforge.harness.runner import run_budget, run_task

    with prog:
        from optiforge.cli.run_progress import RunBars

        progress = RunBars(prog, f"{spec.name} on {task.suite}/{task.name}",
                           run_budget(task, spec, settings), _cost)  # fmt: skip
        summary = run_task(spec, task, settings, out_dir, resume=resume, progress=progress)
        progress.finish(summary.n_evaluations)
        return summary


def _print_run_summary(summary: RunSummary, out_dir: Path, plot: Path | None) -> None:
    arrow = "higher" if summary.higher_is_better else "lower"
    table = Table(
        title=f"{summary.agent} on {summary.benchmark}/{summary.task} ({summary.metric}, {arrow} is better)"
    )
    table.add_column("method")
    table.add_column(str(summary.metric), justify="right")
    table.add_column("evaluations", justify="right")
    table.add_column("LLM calls", justify="right")
    table.add_column("cost", justify="right")
    table.add_column("wall s", justify="right")
    best = summary.best_score
    table.add_row(
        str(summary.method),
        "failed" if best is None else f"{best:.6g}",
        str(summary.n_evaluations),
        str(summary.llm_calls),
        _cost(summary.row()),
        f"{summary.wall_s:.1f}",
    )
    if summary.baseline_name:
        b = summary.baseline_score
        table.add_row(
            summary.baseline_name + " (baseline)",
            "failed" if b is None else f"{b:.6g}",
            "",
            "",
            "",
            "",
        )
    console.print(table)
    claimed = summary.claimed_score
    console.print(
        f"{summary.metric} is the harness's re-measurement of the returned candidate"
        + (
            f" (the agent observed {claimed:.6g})"
            if isinstance(claimed, float) and claimed != best
            else ""
        ),
        highlight=False,
    )
    console.print(f"stopped: {summary.stop_reason}", highlight=False, soft_wrap=True)
    made = (summary.extra.get("proposals") or {}) if summary.llm_calls else {}
    if made.get("made"):
        console.print(
            f"LLM proposals: {made['made']} made, {made['made'] - made['invalid']} valid "
            f"({made['invalid']} rejected before evaluation), {made['passed']} scored "
            f"({made['failed']} failed their evaluation)",
            highlight=False,
        )
    if summary.best_path:
        console.print(f"best candidate: {out_dir / summary.best_path}", highlight=False)
    console.print(
        f"run directory: {out_dir}  (summary.json, best/, events.jsonl"
        f"{', convergence.png' if plot else ''}); `optiforge report {out_dir}` for HTML",
        highlight=False,
        soft_wrap=True,
    )


@app.command("eval")
def eval_cmd(
    agent: Annotated[str, typer.Argument(help="Agent name.")],
    bench: Annotated[
        str | None, typer.Option("--bench", "-b", help="Suite name (default: the agent's).")
    ] = None,
    split: Annotated[
        str,
        typer.Option(
            help="Split: dev, test, heldout (and suite-specific ones, e.g. autoro's app)."
        ),
    ] = "dev",
    seeds: Annotated[int, typer.Option(min=1, max=MAX_SEEDS, help="Seeds per task.")] = 3,
    budget: Annotated[
        int | None, typer.Option(min=1, max=MAX_BUDGET, help="Evaluations per run.")
    ] = None,
    model: ModelOpt = "offline",
    api_base: Annotated[
        str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Eval directory (default runs/eval-<id>); rerun to resume.")
    ] = None,
    baselines: Annotated[
        str | None, typer.Option(help="Comma-separated baselines (default: all of the agent's).")
    ] = None,
    tasks: Annotated[
        str | None, typer.Option(help="Comma-separated task names (default: all).")
    ] = None,
    workers: Annotated[
        int, typer.Option(min=1, max=MAX_WORKERS, help="Runs in parallel (processes).")
    ] = 1,
    executor: Annotated[
        str,
        typer.Option(
            help="What runs each run's evaluations: thread (here) or ray (a local Ray, or "
            "the cluster at --ray-address; every evaluation still runs in its own sandbox)."
        ),
    ] = "thread",
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster for --executor ray (ray://host:10001, auto).")
    ] = None,
    unsafe_sandbox: UnsafeOpt = False,
    memory: Annotated[str | None, typer.Option(help=MEMORY_HELP)] = None,
    cache: Annotated[Path | None, typer.Option(help="SQLite response cache file.")] = None,
    record: Annotated[
        Path | None, typer.Option(help="Record every run's LLM exchanges to this cassette.")
    ] = None,
    replay: Annotated[
        Path | None, typer.Option(help="Answer LLM requests from this cassette only.")
    ] = None,
    max_llm_calls: Annotated[int | None, typer.Option(min=0, help="LLM-call cap per run.")] = None,
    config: Annotated[Path | None, typer.Option(help="YAML preset.")] = None,
    overrides: SetOpt = None,
) -> None:
    """All tasks x seeds of a suite split, agent vs baselines; resumable. Writes results.jsonl, summary.{json,md}, plots."""
    preflight_provider(model, api_base, replay)
    prewarm_llm(model, api_base, replay)
    sandbox_policy(unsafe_sandbox, "local")
    from optiforge.agents import get_agent
    from optiforge.runs import new_run_id

    spec = get_agent(agent)
    bench = bench or spec.default_benchmark
    if not bench:
        raise ConfigError(f"{spec.name} has no default benchmark: pass --bench SUITE")
    settings = run_settings(
        config=config,
        overrides=overrides,
        model=model,
        api_base=api_base,
        budget=budget,
        memory=memory,
        cache=cache,
        record=record,
        replay=replay,
        max_llm_calls=max_llm_calls,
        executor=executor,
        ray_address=ray_address,
    )
    _check_settings_provider(settings, model, api_base)
    check_out_dir(out, EVAL_MARKERS)
    out_dir = out or Path("runs") / new_run_id(f"eval-{spec.name}")
    err_console.print(
        f"eval {out_dir}: {spec.name} on {bench}/{split}, {seeds} seeds, model {settings.model}",
        highlight=False,
        soft_wrap=True,
    )
    prog, _ = _progress_printer()
    try:
        summary = _eval_with_progress(
            prog, spec, bench, split, settings, out_dir, seeds, baselines, workers, tasks
        )
    except KeyboardInterrupt:
        again = f"optiforge eval {spec.name} --bench {bench} --split {split} --seeds {seeds}"
        interrupted(f"{again} --out {out_dir}", out_dir, " (with the same options)")
    _print_eval_summary(summary, spec, bench, split, seeds, out_dir)
    raise typer.Exit(final_status(summary, out_dir))


def _eval_with_progress(
    prog: Any,
    spec: Any,
    bench: str,
    split: str,
    settings: Any,
    out_dir: Path,
    seeds: int,
    baselines: str | None,
    workers: int,
    tasks: str | None,
) -> dict[str, Any]:
    from optiforge.harness.runner import run_eval

    with prog:
        bar = prog.add_task(f"{spec.name} on {bench}/{split}", total=None, info="")

        def progress(kind: str, info: dict[str, Any]) -> None:
            if kind == "start":
                prog.update(bar, total=info["total"], completed=info["done"])
            else:
                v = info.get("best_score")
                label = f"{info.get('task')} {info.get('method')} s{info.get('seed')}: " + (
                    info["error"][:60]
                    if "error" in info
                    else ("failed" if v is None else f"{v:.4g}")
                )
                prog.update(bar, advance=1, info=label)

        return run_eval(
            spec.name,
            bench,
            settings,
            out_dir,
            split=split,
            seeds=seeds,
            baselines=[b for b in baselines.split(",") if b] if baselines else None,
            workers=workers,
            tasks=[t for t in tasks.split(",") if t] if tasks else None,
            progress=progress,
        )


def _print_eval_summary(
    summary: dict[str, Any], spec: Any, bench: str, split: str, seeds: int, out_dir: Path
) -> None:
    from optiforge.harness.report import eval_tables

    header, rows = eval_tables(summary)
    table = Table(title=f"{spec.name} on {bench} ({split}): mean ± 95% CI over {seeds} seeds")
    for h in header:
        table.add_column(h)
    for r in rows:
        table.add_row(*[c.replace("**", "") for c in r])
    console.print(table)
    for n in summary.get("notes") or []:
        console.print(f"[dim]{n}[/]")
    sections = [ln for ln in summary.get("report_sections") or [] if not ln.startswith("![")]
    if sections:  # the suite's own metrics tables
        from rich.markdown import Markdown

        console.print(Markdown("\n".join(sections)))
    if summary.get("errors"):
        console.print(f"[yellow]{len(summary['errors'])} runs failed; see {out_dir}/summary.md[/]")
    console.print(
        f"eval directory: {out_dir}  (results.jsonl, summary.json, summary.md, convergence.png)"
    )


@app.command("runs")
def runs_cmd(
    root: Annotated[Path, typer.Option(help="Directory holding the runs.")] = Path("runs"),
    limit: Annotated[int, typer.Option(min=1, help="Newest N.")] = 30,
) -> None:
    """Runs and evals under ROOT, newest first: status, agent, task, best, cost."""
    from optiforge.harness.catalog import list_runs

    rows = list_runs(root)
    table = Table(title=f"runs in {root} ({len(rows)})")
    for col in ("id", "status", "agent", "task", "model", "best", "cost"):
        table.add_column(col)
    colour = {"finished": "green", "stopped": "yellow", "failed": "red", "interrupted": "yellow"}
    for r in rows[:limit]:
        st = r["status"]
        best = "-" if r["best"] is None else f"{r['best']:.6g} {r['metric'] or ''}"
        cost = _cost(r)
        table.add_row(r["id"], f"[{colour.get(st, 'white')}]{st}[/]", str(r["agent"]),
                      str(r["bench"]), str(r["model"]), best, cost)  # fmt: skip
    list_console.print(table)


def _cost(row: dict[str, Any]) -> str:
    """What the LLM calls cost: "-" with none, "unknown" where litellm's price map has no
    price for the model (a local server), never a misleading $0.0000."""
    calls, unpriced = int(row.get("llm_calls") or 0), int(row.get("unpriced_calls") or 0)
    if calls == 0:
        return "-"
    if unpriced >= calls:
        return "unknown"
    usd = f"${float(row.get('cost_usd') or 0.0):.4f}"
    return f"{usd} + {unpriced} unpriced" if unpriced else usd


@app.command("compare")
def compare_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (same task).")],
    plot: Annotated[
        Path | None, typer.Option(help="Also write the best-so-far curves to this PNG.")
    ] = None,
) -> None:
    """Runs of one task side by side: re-measured best, evaluations, LLM calls, cost, time."""
    from optiforge.harness.catalog import compare_runs, write_compare_plot

    rows = compare_runs(list(runs))
    higher = next((r["higher_is_better"] for r in rows if r["higher_is_better"] is not None), None)
    arrow = "" if higher is None else f", {'higher' if higher else 'lower'} is better"
    table = Table(title=f"{rows[0]['bench']} ({rows[0]['metric'] or 'value'}{arrow})")
    for col in ("run", "status", "method", "model", "seed", "best", "evals", "LLM calls",
                "cost", "wall s"):  # fmt: skip
        table.add_column(col)
    finished = [r for r in rows if r["best"] is not None]
    top = None
    if finished and higher is not None:
        top = (max if higher else min)(finished, key=lambda r: r["best"])["id"]
    for r in rows:
        best = "-" if r["best"] is None else f"{r['best']:.6g}" + (" *" if r["id"] == top else "")
        table.add_row(r["id"], r["status"], str(r["agent"]), str(r["model"]), str(r["seed"]),
                      best, str(r["n_evaluations"] or "-"), str(r["llm_calls"] or 0),
                      _cost(r),
                      "-" if r["wall_s"] is None else f"{r['wall_s']:.1f}")  # fmt: skip
    list_console.print(table)
    if top:
        console.print("* best of these runs (one seed each: not a claim that one method is better)")
    if plot is not None:
        console.print(f"wrote {write_compare_plot(rows, plot)}")


@app.command()
def report(directory: Annotated[Path, typer.Argument(help="A run or eval directory.")]) -> None:
    """Render a run or eval as one self-contained HTML page (report.html)."""
    from optiforge.harness.report import render_report

    path = render_report(directory)
    console.print(f"wrote {path}")


def _mount_optional() -> None:
    """Sub-apps that live next to their services, then the agents' own (stand-ins until
    one runs: ``optiforge.cli.verbs``)."""
    app.add_typer(memory_app, name="memory")
    app.add_typer(pipeline_app, name="pipeline")
    app.add_typer(posttrain_app, name="posttrain")
    mount_agent_verbs(app)


_mount_optional()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning our errors into one line and an exit code.

    Click/typer handle usage errors and exits themselves (standalone mode); our own
    errors propagate out of the command and are printed here.
    """
    try:  # typer vendors its own click since 0.2x; its exceptions are not click's
        from typer._click import exceptions as cx
    except ImportError:  # pragma: no cover - an older typer on plain click
        from click import exceptions as cx  # type: ignore[no-redef]

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    pin_threads()
    from optiforge.sandboxes.workdirs import sweep_default_roots

    sweep_default_roots()  # work dirs of a killed optiforge (RAM on /dev/shm); never raises
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        rc = app(args=args, prog_name="optiforge", standalone_mode=False)
    except cx.NoArgsIsHelpError as e:
        e.show()  # the help text, as with no arguments everywhere
        sys.exit(0)
    except cx.UsageError as e:
        # one line: what was wrong, and where the help is
        where = f" (see `{e.ctx.command_path} --help`)" if e.ctx is not None else ""
        _one_line(f"{e.format_message()}{where}")
        sys.exit(int(ExitCode.INVALID_INPUT))
    except cx.ClickException as e:
        _one_line(e.format_message())
        sys.exit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("interrupted")
        sys.exit(int(ExitCode.INTERRUPTED))
    except OptiforgeError as e:
        if debug:
            raise
        _one_line(f"{type(e).__name__}: {e}")
        sys.exit(int(error_exit(e)))
    sys.exit(rc if isinstance(rc, int) else 0)


def console_main() -> None:
    """The ``optiforge`` command: ``main``, then a fast process exit.

    A run leaves a large heap behind (litellm alone imports ~3 s of modules); tearing it
    down module by module at interpreter exit took 1.4 s after the run was complete
    (measured: summary and plot written, every record closed). So once ``main`` is done,
    the exit does what a normal exit does that matters: other non-daemon threads are
    joined, the ``atexit`` handlers run (logging, multiprocessing, Ray, litellm), stdout
    and stderr are flushed; then ``os._exit`` with the same exit code skips the teardown.
    ``main`` itself (what tests call in-process) exits normally.
    """
    import atexit
    import threading

    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    # What the interpreter does first at exit: the threading module's exit hooks (they
    # tell idle ThreadPoolExecutor workers, e.g. litellm's logging pool, to stop), then a
    # join of every non-daemon thread. Joining first would wait forever on those workers.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing left to flush
            code = code or 1
    os._exit(code)


THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def pin_threads() -> None:
    """One BLAS/OpenMP thread per process unless the user chose otherwise.

    A run's numbers depend on the thread count (reductions sum in another order, and BO
    trajectories diverge from there: levy4_in_25 seed 0 gave 1.001 with one thread and
    4.159 with two), and on 2 cores two threads made small GP fits 7x slower. Parallelism
    comes from ``--workers``; the manifest records the setting.
    """
    for var in THREAD_VARS:
        os.environ.setdefault(var, "1")


def _one_line(message: str) -> None:
    """``error: MESSAGE`` on stderr as one line, however long (paths must not wrap)."""
    from rich.markup import escape

    text = " ".join(str(message).split())
    err_console.print(f"[red]error:[/] {escape(text)}", highlight=False, soft_wrap=True)

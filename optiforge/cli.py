"""The ``optiforge`` command line (typer + rich).

Every ``OptiforgeError`` becomes one readable line on stderr and exit code 2; ``--debug``
shows the traceback instead. Heavy libraries (torch, litellm, ray) are imported inside
the commands that need them so ``optiforge --help`` stays fast.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from rich.console import Console
from rich.table import Table

from optiforge import __version__
from optiforge.errors import ConfigError, OptiforgeError

console = Console()
err_console = Console(stderr=True)

app = typer.Typer(
    name="optiforge",
    help="Automated optimization engineering with LLM agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
list_app = typer.Typer(help="List providers, agents or benchmarks.", no_args_is_help=True)
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
    table.add_column("provider")
    table.add_column("--model example")
    table.add_column("needs")
    table.add_column("notes")
    for p in PROVIDERS:
        table.add_row(p.name, p.example, p.needs, p.notes)
    console.print(table)


@list_app.command("agents")
def list_agents() -> None:
    """Registered agents (built in and from the optiforge.agents entry-point group)."""
    from optiforge.agents import available_agents

    table = Table(title="Agents")
    table.add_column("name")
    table.add_column("default benchmark")
    table.add_column("description")
    for spec in available_agents().values():
        table.add_row(spec.name, spec.default_benchmark or "-", spec.description)
    console.print(table)


@list_app.command("benchmarks")
def list_benchmarks() -> None:
    """Bundled benchmark suites and their task counts per split."""
    from optiforge.evals.registry import available_benchmarks

    table = Table(title="Benchmarks")
    table.add_column("suite")
    table.add_column("splits")
    table.add_column("description")
    for name, info in available_benchmarks().items():
        table.add_row(name, ", ".join(info.splits), info.description)
    console.print(table)


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
    timeout: Annotated[float, typer.Option(help="Seconds before giving up.")] = 30.0,
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
    timeout: Annotated[float, typer.Option(help="Wall-clock limit in seconds.")] = 30.0,
    memory_mb: Annotated[int, typer.Option("--memory-mb", help="Address-space cap.")] = 2048,
    network: Annotated[bool, typer.Option("--network", help="Allow network access.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Run CMD in a sandbox: optiforge sandbox exec [OPTIONS] -- CMD..."""
    from optiforge.sandboxes import get_sandbox

    cmd = list(ctx.args)
    if not cmd:
        raise ConfigError("no command given: use `optiforge sandbox exec -- CMD ...`")
    sandbox = get_sandbox(backend)
    res = sandbox.run(cmd, timeout_s=timeout, memory_mb=memory_mb, network=network)
    payload = {
        "returncode": res.returncode,
        "timed_out": res.timed_out,
        "duration_s": round(res.duration_s, 4),
        "peak_rss_mb": round(res.peak_rss_mb, 1),
        "stdout": res.stdout,
        "stderr": res.stderr,
        "protections": res.protections.model_dump(mode="json"),
    }
    if json_out:
        sys.stdout.write(json.dumps(payload) + "\n")
    else:
        if res.stdout:
            console.print(res.stdout, end="", markup=False, highlight=False)
        if res.stderr:
            err_console.print(res.stderr, end="", markup=False, highlight=False)
        on = [k for k, v in payload["protections"].items() if v not in (False, None, "none")]
        err_console.print(
            f"[dim]exit {res.returncode}{' (timed out)' if res.timed_out else ''}, "
            f"{res.duration_s:.3f} s, peak {res.peak_rss_mb:.0f} MB; protections: {', '.join(on)}[/]"
        )
    raise typer.Exit(res.returncode if 0 <= res.returncode < 256 else 1)


def _mount_optional() -> None:
    """Sub-apps that live next to their services."""
    from optiforge.memory.cli import app as memory_app

    app.add_typer(memory_app, name="memory")


_mount_optional()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning our errors into one line and an exit code."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        rv = app(args=args, standalone_mode=False, prog_name="optiforge")
        if isinstance(rv, int) and rv:
            sys.exit(rv)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        err_console.print("interrupted (run records are kept; resume with --resume RUN_DIR)")
        sys.exit(130)
    except OptiforgeError as e:
        if debug:
            raise
        err_console.print(f"[red]error:[/] {type(e).__name__}: {e}", markup=True, highlight=False)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()

"""What every command that starts a run does before and after it: the run's settings, the
provider check and pre-warm, the sandbox policy, the ``--out`` check, the final status line
and Ctrl-C. Shared by ``run``/``eval`` (``main``) and ``pipeline run`` (``pipeline``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

from optiforge.errors import ConfigError
from optiforge.harness.status import STATUS_EXIT, ExitCode

err_console = Console(stderr=True)


def prewarm_llm(model: str, api_base: str | None, replay: Path | None = None) -> None:
    """Start the LLM provider process now, when the run will need it: litellm's import
    (2-4 s) and warm-up then run on another core while this process builds the agent,
    instead of stalling the first LLM call (``--model local``: the model's server too).
    Not for a cassette replay, which calls no provider."""
    if model.strip().lower() in ("", "offline") or replay is not None:
        return
    from optiforge.llm.local import is_local
    from optiforge.llm.provider_process import shared

    if is_local(model):  # the model's server starts once its settings (llm.local) are read
        shared().start()
        return
    shared().warm(model.strip(), api_base)


def preflight_provider(model: str, api_base: str | None, replay: Path | None) -> None:
    """Before a run starts: a missing key, an unknown provider or a dead ``--api-base`` is
    one line and exit 4 (``optiforge.llm.preflight``), not a failed run a minute later.
    Not for a cassette replay, which calls no provider."""
    if replay is not None:
        return
    from optiforge.llm.preflight import check_provider

    check_provider(model, api_base)


RUN_MARKERS = ("manifest.json",)
EVAL_MARKERS = ("eval.json", "results.jsonl")


def check_out_dir(out: Path | None, markers: tuple[str, ...] = RUN_MARKERS) -> None:
    """Refuse an ``--out`` that exists and is neither empty nor an optiforge run (one of
    ``markers`` in it): a run must not scatter its files into a source tree or a home
    directory. A run directory itself is for the command's own rules (resume, refuse)."""
    if out is None or not out.exists():
        return
    if not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a directory")
    if any((out / m).exists() for m in markers):
        return
    if next(out.iterdir(), None) is not None:
        raise ConfigError(
            f"--out {out}: the directory holds other files and is not an optiforge run "
            f"(no {' or '.join(markers)}); choose a new or empty directory"
        )


def sandbox_policy(unsafe: bool, backend: str) -> None:
    """Fail fast (one line) when the sandbox cannot contain LLM code; shout when unsafe."""
    from optiforge.sandboxes import UNSAFE_ENV, get_sandbox

    if unsafe:
        os.environ[UNSAFE_ENV] = "1"  # worker processes inherit it; sandboxed code never sees it
    sb: Any = get_sandbox(backend)  # raises UnsafeSandbox unless allowed
    unmet = sb.protections().unmet()
    if unmet:
        err_console.print(
            "[bold red]" + "!" * 72 + "\n"
            f"--unsafe-sandbox: LLM-written code runs in a {backend} sandbox "
            f"({getattr(sb, 'isolation', backend)}) that does NOT meet: "
            f"{', '.join(sorted(unmet))}.\nIt can read your files and reach the network. "
            "Results are labelled unsafe in events.jsonl.\n" + "!" * 72 + "[/bold red]"
        )


def run_settings(*, config: Path | None, overrides: list[str] | None, **fields: Any) -> Any:
    """The run's ``RunSettings``: the ``--config`` file, the flags given (None: not given)
    over it, then the ``--set`` overrides; a served local model with ``--api-base`` is refused."""
    from optiforge.config import RunSettings, build_config, load_yaml

    base: dict[str, Any] = load_yaml(config) if config else {}
    for key, value in fields.items():
        if value is not None:
            base[key] = value
    where = "settings" if config is None else f"settings from {config}"
    where += " and --set" if config is not None and overrides else ""
    settings = build_config(RunSettings, base=base, overrides=overrides or [], where=where)
    from optiforge.llm.local import is_local

    if is_local(settings.model) and settings.api_base:
        raise ConfigError(
            f"--model {settings.model} is served by optiforge itself: drop --api-base "
            "(or use --model openai/NAME --api-base URL for a server of your own)"
        )
    return settings


def interrupted(command: str, out_dir: Path, note: str = "") -> NoReturn:
    """Ctrl-C: say what was kept and the command that continues; exit 130."""
    err_console.print(
        f"[yellow]interrupted[/]: {out_dir} keeps everything finished so far; "
        f"continue with `{command}`{note}",
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(int(ExitCode.INTERRUPTED))


def final_status(summary: dict[str, Any], out_dir: Path) -> int:
    """Print the one-line final status of a run or an eval; return its exit code."""
    status = summary.get("status", "failed")
    code = int(STATUS_EXIT.get(status, ExitCode.FAILED))
    colour = {"finished": "green", "stopped": "yellow"}.get(status, "red")
    reason = summary.get("status_reason") or ""
    err_console.print(
        f"[{colour}]status: {status}[/] ({reason}) · exit {code} · {out_dir}",
        highlight=False,
        soft_wrap=True,
    )
    return code

"""``optiforge saddle tune`` / ``measure``: AutoSaddler on the ``saddle`` suite.

``tune`` writes OUT/base/ and OUT/harness/ (harness folders), OUT/rounds.jsonl (every
round: the mini-batch, the diagnoses, the patch, the gate's numbers), OUT/memory.db (every
proposal as an experience) and OUT/summary.md; it resumes with ``--resume`` (the graph's
checkpoint is OUT/checkpoints.sqlite). ``measure`` reports pass@1, pass^k, steps and
cost of a harness on a split.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(help="AutoSaddler: tune the terminal agent's harness on the saddle suite.",
                  no_args_is_help=True)  # fmt: skip

AGENT_MODEL_HELP = (
    "The terminal agent's model: `simulated` (a labelled oracle with harness-sensitive "
    "defects, each matched to a library rule, optiforge.agents.terminal.testing: exercises the "
    "machinery, measures no model), `unmatched` (a labelled oracle whose defects are not "
    "matched to rules: stochastic, two-patch, uncurable, code-hook-only), "
    "`local` (the embedded SmolLM2), or a LiteLLM model name."
)


def _check(model: str, api_base: str | None) -> None:
    """The provider check of ``run`` (one line, exit 4) for a real model; the simulated
    agents need none."""
    if model in ("simulated", "unmatched"):
        return
    from optiforge.llm.preflight import check_provider

    check_provider(model, api_base)


def _agent_llm(name: str, api_base: str | None) -> Any:
    if name == "simulated":
        from optiforge.agents.terminal.testing import simulated_llm

        return simulated_llm
    if name == "unmatched":
        from optiforge.agents.terminal.testing import unmatched_llm

        return unmatched_llm
    from optiforge.llm.offline import make_llm

    kw = {"api_base": api_base} if api_base else {}
    llm = make_llm(name, **kw)
    if llm is None:
        raise typer.BadParameter(
            "the terminal agent needs a model; `offline` has none", param_hint="--agent-model"
        )
    return lambda seed: llm


LONG_HELP = "Use the long-horizon tasks (saddle long-dev / long-heldout, 10+ commands each)."


def _target(agent_model: str, api_base: str | None, sandbox: str, long: bool = False) -> Any:
    from optiforge.agents.autosaddler import TerminalTarget
    from optiforge.sandboxes import get_sandbox

    _check(agent_model, api_base)
    return TerminalTarget(_agent_llm(agent_model, api_base), get_sandbox(sandbox), long=long)


@app.command("tune")
def tune_cmd(
    out: Annotated[
        Path, typer.Option(help="Output directory (harness folders, rounds.jsonl, summary.md).")
    ],
    agent_model: Annotated[str, typer.Option(help=AGENT_MODEL_HELP)] = "simulated",
    model: Annotated[
        str, typer.Option(help="The proposer's model (`offline`: the rule-based patch library).")
    ] = "offline",
    api_base: Annotated[
        str | None, typer.Option(help="OpenAI-compatible server for both models.")
    ] = None,
    iterations: Annotated[int, typer.Option(min=1)] = 6,
    batch: Annotated[int, typer.Option(min=1, help="Training tasks per mini-batch.")] = 4,
    runs: Annotated[int, typer.Option(min=1, help="Runs per task while tuning.")] = 2,
    val_tasks: Annotated[int, typer.Option(min=1, help="Dev tasks held out to gate patches.")] = 6,
    val_runs: Annotated[int, typer.Option(min=1, help="Runs per validation task.")] = 4,
    diagnosis: Annotated[
        str, typer.Option(help="trace (root cause) or last_error (shallow ablation).")
    ] = "trace",
    scope: Annotated[
        str, typer.Option(help="one_part or whole (unconstrained ablation).")
    ] = "one_part",
    gate: Annotated[
        str, typer.Option(help="validation or repair (trajectory-repair ablation).")
    ] = "validation",
    seed: Annotated[
        int, typer.Option(help="Shuffles the dev tasks into training and validation.")
    ] = 0,
    measure_runs: Annotated[
        int, typer.Option(min=0, help="Runs per heldout task to measure base and tuned (0: skip).")
    ] = 3,
    sandbox: Annotated[str, typer.Option(help="Sandbox back end.")] = "local",
    resume: Annotated[bool, typer.Option(help="Continue the run checkpointed in OUT.")] = False,
    long: Annotated[bool, typer.Option("--long", help=LONG_HELP)] = False,
) -> None:
    """Tune the terminal agent's harness on saddle/dev (one line per round), then measure the
    base and the tuned harness on saddle/heldout."""
    from pydantic import ValidationError

    from optiforge.agents.autosaddler import SaddlerConfig, measure, tune
    from optiforge.agents.autosaddler.report import metrics_head, metrics_row, round_line
    from optiforge.agents.kit import RunContext
    from optiforge.memory import Store

    try:
        config = SaddlerConfig(iterations=iterations, batch=batch, runs=runs, val_tasks=val_tasks, val_runs=val_runs,
                               diagnosis=diagnosis, scope=scope, gate=gate)  # type: ignore[arg-type]  # fmt: skip
    except ValidationError as e:
        err = e.errors()[0]
        name = str(err["loc"][0]).replace("_", "-")
        raise typer.BadParameter(
            f"{err['msg']} (got {err['input']!r})", param_hint=f"--{name}"
        ) from None
    _check(agent_model, api_base)  # before anything is written under --out
    _check(model, api_base)
    out.mkdir(parents=True, exist_ok=True)
    target = _target(agent_model, api_base, sandbox, long)
    proposer = None
    if model != "offline":
        from optiforge.llm.offline import make_llm

        proposer = make_llm(model, **({"api_base": api_base} if api_base else {}))
    memory = Store(f"sqlite:///{out.resolve() / 'memory.db'}", embedder=None)
    ctx = RunContext(llm=proposer, sandbox=target.sandbox, memory=memory, seed=seed, run_dir=out,
                     agent="autosaddler")  # fmt: skip
    rounds = out / "rounds.jsonl"
    if not resume and rounds.exists():
        rounds.unlink()

    def on_round(r: dict[str, Any]) -> None:
        typer.echo(round_line(r))
        with rounds.open("a") as f:
            f.write(json.dumps(r, default=str) + "\n")

    try:
        result = tune(target, config, ctx, resume=resume, on_round=on_round)
    finally:
        memory.close()
    base = target.base()
    tuned = target.load(result.best_candidate)
    base.save(out / "base")
    tuned.save(out / "harness")
    hist = result.extra["history"]
    pre = "long-" if long else ""
    lines = [f"# AutoSaddler on saddle/{pre}dev: {len(hist)} rounds, {result.extra['accepted']} patches accepted",
             "", f"agent model: {agent_model}; proposer: {model if proposer else 'rules (offline)'}; "
             f"diagnosis {diagnosis}, scope {scope}, gate {gate}; validation tasks: {', '.join(result.extra['val'])}",
             "", *[f"- {round_line(r)}" for r in hist], "", "```diff", base.diff(tuned) or "(no change)", "```"]  # fmt: skip
    typer.echo(f"tuned harness {tuned.version} (base {base.version}): {out / 'harness'}")
    if measure_runs:
        typer.echo(
            f"measuring base and tuned on saddle/{pre}heldout ({measure_runs} runs per task) ..."
        )
        rows = [
            metrics_row(n, measure(target, h, "heldout", runs=measure_runs))
            for n, h in (("base", base), ("tuned", tuned))
        ]
        table = metrics_head(measure_runs) + "\n" + "\n".join(rows)
        typer.echo(table)
        lines += ["", f"## saddle/{pre}heldout ({measure_runs} runs per task)", "", table]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    llm_rounds = [r for r in hist if r.get("proposer") == "llm"]
    if llm_rounds and all(r.get("proposal_errors") and not r.get("patches") for r in llm_rounds):
        typer.echo(f"error: the proposer ({model}) gave no usable patch in any round "
                   f"(last: {llm_rounds[-1]['proposal_errors']})", err=True)  # fmt: skip
        raise typer.Exit(1)


@app.command("measure")
def measure_cmd(
    harness: Annotated[str, typer.Option(help="A harness folder, or `base`.")] = "base",
    split: Annotated[str, typer.Option(help="dev or heldout.")] = "heldout",
    runs: Annotated[int, typer.Option(min=1)] = 3,
    agent_model: Annotated[str, typer.Option(help=AGENT_MODEL_HELP)] = "simulated",
    api_base: Annotated[str | None, typer.Option()] = None,
    sandbox: Annotated[str, typer.Option(help="Sandbox back end.")] = "local",
    long: Annotated[bool, typer.Option("--long", help=LONG_HELP)] = False,
) -> None:
    """pass@1, pass^k, turns, LLM calls and tokens per task of a harness on a saddle split."""
    from optiforge.agents.autosaddler import measure
    from optiforge.agents.autosaddler.report import metrics_head, metrics_row
    from optiforge.agents.kit.harness import Harness

    target = _target(agent_model, api_base, sandbox, long)
    h = target.base() if harness == "base" else Harness.load(harness)
    m = measure(target, h, split, runs=runs)
    typer.echo(metrics_head(runs) + "\n" + metrics_row(harness, m))
    typer.echo(
        "per task (runs passed): " + ", ".join(f"{k} {v}/{runs}" for k, v in m["per_task"].items())
    )

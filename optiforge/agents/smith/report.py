"""What a smith run reports: its ``AgentOutcome`` (with ``SmithExtra``) from the final
state, and the report lines of smith evals (tools built per episode and the build axes'
means)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from optiforge.agents.kit import RunContext
from optiforge.agents.smith.nodes import AXES, context_of, validation_budget
from optiforge.agents.spec import AgentOutcome


class SmithExtra(BaseModel):
    """``AgentOutcome.extra`` of smith and its baselines (keys a run does not set stay out:
    the build means exist only when a tool was validated, ``budget`` only for templates)."""

    model_config = ConfigDict(extra="forbid")

    pool: list[str]
    """The pool's tool names."""
    built: int
    """Tools this run built and validated (memory's excluded)."""
    build_tasks: int
    rollouts: list[dict[str, Any]] = []
    """The last 60 build rollouts (build id, attempt, the three axes, passed)."""
    build_schema: float | None = None
    build_code: float | None = None
    build_outcome: float | None = None
    errors: list[str] = []
    budget: int | None = None
    """The templates baseline: the validations it stands in for."""

    def dump(self) -> dict[str, Any]:
        """The extra as summary.json holds it (only the keys the run set)."""
        return self.model_dump(exclude_unset=True)


def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
    """The pool and the calls made with it, from the final state."""
    run = context_of(ctx)
    config, builds = run.config, run.task.build_tasks
    limit = validation_budget(run.task, run.eval_budget)
    pool = state.get("pool")
    if pool is None:
        return AgentOutcome(stop_reason="no pool", failure="the run built nothing")
    log = state.get("log") or []
    built = [t for t in pool if t.get("build")]
    failure = None
    if ctx.llm is not None and not built and log and config.build:
        last = log[-1]
        why = last.get("why") or (f"schema {last['schema']:.0f}, code {last['code']:.2f}, "
                                  f"outcome {last['outcome']:.2f}")  # fmt: skip
        failure = f"no tool the model wrote passed validation (last attempt: {why})"
    means = {f"build_{ax}": sum(r[ax] for r in log) / len(log) for ax in AXES} if log else {}
    # validated from a dict: the build means are set only when there were build rollouts
    extra = SmithExtra.model_validate({"pool": [t["name"] for t in pool], "built": len(built),
                                       "build_tasks": len(builds), "rollouts": log[-60:], **means,
                                       "errors": (state.get("errors") or [])[-5:]})  # fmt: skip
    return AgentOutcome(
        best_candidate={"tools": pool, "calls": state.get("calls") or {}},
        claimed_value=len(built) / max(len(builds), 1), n_evaluations=int(state.get("spent", 0)),
        stop_reason="episode done" if state.get("done") else "stopped", failure=failure,
        notes=[f"budget {limit} validations < {len(builds)} build tasks: at most {limit} tools "
               f"can be built (the templates baseline is limited to the same first {limit})"]
        if config.build and limit < len(builds) else [],
        # every build attempt is the model's tool (offline: the template library's)
        llm_proposals={"made": len(log), "valid": sum(1 for r in log if r.get("passed"))}
        if ctx.llm is not None and config.build and log else None,
        extra=extra.dump(),
    )  # fmt: skip


def summary_notes(rows: list[dict[str, Any]]) -> list[str]:
    """Per method: build tasks that produced a validated tool, and the build axes' means."""
    out = []
    by: dict[str, list[SmithExtra]] = {}
    for r in rows:
        extra = r.get("extra") or {}
        if "built" in extra:
            by.setdefault(str(r.get("method")), []).append(SmithExtra.model_validate(extra))
    for method, extras in sorted(by.items()):
        built = sum(e.built for e in extras)
        tasks = sum(e.build_tasks for e in extras)
        means = {"schema": [e.build_schema for e in extras], "code": [e.build_code for e in extras],
                 "outcome": [e.build_outcome for e in extras]}  # fmt: skip
        axes = []
        for ax, values in means.items():
            known = [v for v in values if v is not None]
            if len(known) == len(values):
                axes.append(f"{ax} {sum(known) / len(extras):.2f}")
        line = f"{method}: {built} of {tasks} build tasks produced a validated tool"
        out.append(line + (f"; mean build-attempt rewards: {', '.join(axes)}" if axes else ""))
    return out

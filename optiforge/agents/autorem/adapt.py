"""AutoREM offline adaptation: build the experience memory over a training split.

For each instance of the split the agent runs with retrieval on and
``reflect="on_failure"``: a trajectory with a failed attempt is diagnosed (LLM
reflection, or the rule table offline) into ``ExperienceEntry`` records in the shared
memory. No parameters are updated; the memory is plain text, so it can be exported
(``optiforge memory export``) and used with another base model.

With the offline proposer (the reference reformulator) attempts do not fail on
generated instances, so offline adaptation normally writes no entries: that is the
honest outcome, not a bug. Entries come from a model that makes mistakes.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.autorem.agent import run_instance
from optiforge.agents.autorem.config import AutoREMConfig
from optiforge.agents.kit import RunContext
from optiforge.errors import ConfigError


class AdaptationReport(BaseModel):
    """What one adaptation pass did."""

    model_config = ConfigDict(extra="forbid")

    split: str
    model: str
    n_instances: int = 0
    n_solved: int = 0
    n_failures: int = 0
    """Instances whose trajectory had at least one rejected attempt."""
    n_entries_written: int = 0
    entry_ids: list[str] = Field(default_factory=list)
    llm_calls: int = 0
    tokens: int = 0
    wall_s: float = 0.0
    per_instance: list[dict[str, Any]] = Field(default_factory=list)

    def text(self) -> str:
        """One-paragraph summary for the CLI."""
        return (
            f"adapted on {self.split} with {self.model}: {self.n_instances} instances, "
            f"{self.n_solved} solved, {self.n_failures} with failures, "
            f"{self.n_entries_written} entries written, {self.llm_calls} LLM calls, "
            f"{self.tokens} tokens, {self.wall_s:.1f} s"
        )


def adapt(
    benchmark: Any,
    split: str = "dev",
    ctx: RunContext | None = None,
    config: AutoREMConfig | None = None,
    *,
    n: int | None = None,
    task_names: list[str] | None = None,
) -> AdaptationReport:
    """Run AutoREM over ``split`` of ``benchmark`` and reflect failures into ``ctx.memory``.

    n: only the first ``n`` instances. task_names: only these instances.
    """
    if ctx is None or ctx.memory is None:
        raise ConfigError("adapt needs a RunContext with a memory store (entries go there)")
    cfg = (config or AutoREMConfig()).model_copy(update={"reflect": "on_failure"})
    tasks = benchmark.tasks(split)
    if task_names is not None:
        wanted = set(task_names)
        tasks = [t for t in tasks if t.name in wanted]
    if n is not None:
        tasks = tasks[:n]
    model = ctx.llm.model if ctx.llm is not None else "offline"
    report = AdaptationReport(split=split, model=model)
    t0 = time.perf_counter()
    # adaptation has no run directory per instance: no checkpoints, one thread each
    actx = RunContext(
        llm=ctx.llm,
        sandbox=ctx.sandbox,
        memory=ctx.memory,
        executor=None,
        budget=ctx.budget,
        tracer=ctx.tracer,
        seed=ctx.seed,
        run_dir=None,
        agent="autorem",
    )
    for task in tasks:
        state = run_instance(task, actx, cfg)
        attempts = [a for a in state.get("attempts", []) if "passed" in a]
        solved = any(a["passed"] for a in attempts)
        failed = any(not a["passed"] for a in attempts)
        written = list(state.get("reflected", []))
        report.n_instances += 1
        report.n_solved += int(solved)
        report.n_failures += int(failed)
        report.n_entries_written += len(written)
        report.entry_ids += written
        report.llm_calls += int(state.get("llm_calls", 0))
        report.tokens += int(state.get("tokens", 0))
        report.per_instance.append(
            {
                "task": task.name,
                "solved": solved,
                "attempts": len(attempts),
                "retrieved": len(state.get("retrieved", [])),
                "written": written,
            }
        )
    report.wall_s = round(time.perf_counter() - t0, 3)
    return report

"""Tools an agent's LLM may call while it writes a proposal (function calling).

An agent names its tools in its config (``tools.use``): its own (a verifier or a
simulator the agent offers, e.g. evolve's ``check_program``) and the registry's
built-ins (``run_python``); with ``tools.pool`` the tools stored in memory (``Tool``
records, e.g. built by another agent) join them. Every tool that runs code runs it in
the run's sandbox, is charged to the run's sandbox budget, and every call is a
``tool_call`` event in the run's log. A model that cannot call tools (the embedded
``--model local``) is asked without them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.search.records import Proposal


class ToolsConfig(BaseModel):
    """Which tools the agent's LLM may call (see ``optiforge.agents.kit.tools``)."""

    model_config = ConfigDict(extra="forbid")

    use: list[str] = Field(default_factory=list)
    """Tool names: the agent's own (its docs list them) or the built-in ``run_python``."""
    pool: bool = True
    """Also offer the tools stored in the run's memory (``optiforge memory`` ``Tool`` records)."""
    pool_names: list[str] | None = None
    """Offer only these pooled tools (None: every stored tool); each must be in the run's
    memory, e.g. the pool a pipeline's SMITH node built: ``${tools.artifact.extra.pool}``."""
    max_steps: int = Field(default=4, ge=1, le=16)
    """LLM turns per proposal (each turn may call tools; the last must answer)."""


def supports_tools(llm: Any) -> bool:
    """Whether ``llm`` can be sent function-calling specs."""
    return llm is not None and bool(getattr(llm, "supports_tools", True))


def build_registry(
    ctx: RunContext, config: ToolsConfig, own: dict[str, Callable[[], Any]] | None = None
) -> Any | None:
    """The tools for this run (None: none, or a model that cannot call them).

    ``own``: the agent's tools by name, each a factory (built only when named in ``use``).
    Raises ``ConfigError`` for a name that is neither the agent's nor a built-in.
    """
    if not supports_tools(ctx.llm) or (not config.use and not config.pool):
        return None
    from optiforge.errors import ConfigError
    from optiforge.tools import ToolRegistry, load_tool_pool, run_python_tool

    own = own or {}
    sandbox = ctx.sandbox
    builtins: dict[str, Callable[[], Any]] = {
        "run_python": lambda: run_python_tool(sandbox, timeout_s=30.0, budget=ctx.budget),  # type: ignore[arg-type]
    }
    reg = ToolRegistry()
    for name in config.use:
        make = own.get(name) or builtins.get(name)
        if make is None:
            offered = ", ".join(sorted({*own, *builtins}))
            raise ConfigError(f"tools.use: no tool {name!r} here (tools: {offered})")
        if name in builtins and sandbox is None:
            continue  # a tool that runs code needs the run's sandbox
        reg.add(make())
    wanted = config.pool_names
    if wanted and (not config.pool or ctx.memory is None or ctx.sandbox is None):
        # named tools that cannot be offered: an error, not a silently smaller pool
        raise ConfigError(
            f"tools.pool_names: {', '.join(wanted)} need tools.pool, the run's memory and sandbox"
        )
    if config.pool and ctx.memory is not None and ctx.sandbox is not None:
        mine = set(reg.names)
        try:
            load_tool_pool(ctx.memory, ctx.sandbox, reg, names=wanted, replace=False)
        except Exception as e:  # noqa: BLE001 - a broken pooled tool must not stop the run
            ctx.tracer.event("tool_pool_failed", error=f"{type(e).__name__}: {e}"[:300])
        pooled = set(reg.names) - mine
        reg.pooled = pooled  # type: ignore[attr-defined]
        missing = sorted(set(wanted or []) - pooled)
        if missing:
            raise ConfigError(f"tools.pool_names: {', '.join(missing)} not in the run's memory")
    return reg if len(reg) else None


class _UsageTracer:
    """Passes events on; a call of a pooled tool also counts in its memory record."""

    def __init__(self, ctx: RunContext, pooled: set[str]) -> None:
        self.ctx, self.pooled = ctx, pooled

    def event(self, kind: str, **fields: Any) -> None:
        self.ctx.tracer.event(kind, **fields)
        name = fields.get("name")
        if kind == "tool_call" and name in self.pooled and self.ctx.memory is not None:
            with contextlib.suppress(Exception):  # usage stats are advisory
                self.ctx.memory.record_tool_use(str(name), bool(fields.get("ok")))


class ToolReply:
    """A proposal's final reply after its tool loop (``text`` and ``record`` like a
    ``Completion``; ``tool_calls``: how many tools it called)."""

    def __init__(self, result: Any) -> None:
        self.text = result.final_text
        self.tool_calls = result.tool_calls
        self.records = result.records
        self.record = result.records[-1]
        self.reasks = 0


def complete_with_tools(
    ctx: RunContext, messages: list[dict[str, Any]], registry: Any, max_steps: int, **params: Any
) -> ToolReply:
    """One request as a tool loop: the model may call ``registry``'s tools, then answers."""
    from optiforge.llm import run_tool_loop

    assert ctx.llm is not None
    pooled: set[str] = getattr(registry, "pooled", set())
    tracer = _UsageTracer(ctx, pooled) if pooled else ctx.tracer
    return ToolReply(
        run_tool_loop(ctx.llm, messages, registry, max_steps=max_steps, tracer=tracer, **params)
    )


def check_tool(problem: Any, ctx: RunContext, field: str = "code") -> Any:
    """``check_program(code)``: the search's own static checks (``problem.materialize``),
    then the task's ``check`` (a sandboxed run on probe inputs, no score) when it has one."""
    from optiforge.errors import InvalidCandidate
    from optiforge.tools import Tool, args_model_from_function

    def check_program(
        code: Annotated[str, Field(description="the complete program you intend to answer with")],
    ) -> str:
        """Check a program before you answer: the static checks every candidate must pass,
        then a short run on probe inputs in the sandbox. Returns 'ok: ...' or the error."""
        try:
            payload = problem.materialize(Proposal(payload={field: code}, origin="llm"), ctx)
        except InvalidCandidate as e:
            return f"rejected: {e}"
        check = getattr(problem.task, "check", None)
        if check is None or ctx.sandbox is None:
            return "ok: passes the static checks"
        if ctx.budget is not None:
            ctx.budget.check_sandbox()
        return str(check(payload, ctx.sandbox))

    return Tool("check_program", (check_program.__doc__ or "").split("\n")[0], check_program,
                args_model=args_model_from_function(check_program, "check_program"))  # fmt: skip

"""Context building: the live services (LLM, sandbox, memory, executor, budget) one run's
agent sees, wired to the run's recorder, and their closing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optiforge.agents.kit import RunContext
from optiforge.config import RunSettings
from optiforge.errors import ConfigError, MemoryStoreError
from optiforge.runs import RunRecorder


def build_context(
    settings: RunSettings,
    recorder: RunRecorder | None,
    agent: str,
    *,
    workers: int | None = None,
    llm: Any | None = None,
    warm: tuple[str, ...] | list[str] = (),
    budget: Any | None = None,
    tee: Any | None = None,
) -> RunContext:
    """Live services for one run, wired to its recorder (the tracer).

    llm: an LLM object to use instead of the one ``settings.model`` names (tests,
    programmatic use); it is charged to this run's budget and logged to its events when
    it has neither of its own.
    warm: modules the task's runner imports (``Task.warm_modules``): the run's local
    sandbox forks its runs from a zygote that imported them (see
    ``optiforge.sandboxes.warm``); the search's evaluations and the harness's
    re-measurements then share it.
    budget: a ``Budget`` shared with other runs (a pipeline's nodes share one ledger);
    None: this run's own, from ``settings``.
    tee: a tracer that also gets every event of this run (a pipeline's one log).
    """
    from optiforge.llm import Budget

    tracer: Any = recorder if recorder is not None else None
    if tracer is not None and tee is not None:
        from optiforge.runs import TeeTracer

        tracer = TeeTracer(recorder, tee)  # type: ignore[arg-type]
    if budget is None:
        budget = Budget(
            max_calls=settings.max_llm_calls,
            max_usd=settings.max_usd,
            max_wall_s=settings.max_wall_s,
            max_sandbox_s=settings.max_sandbox_s,
        )
    if llm is None:
        llm = make_run_llm(settings, budget, tracer)
        if llm is not None:
            llm.prewarm()  # litellm's ~2-4 s import overlaps the seed evaluations
    else:
        if hasattr(llm, "budget") and getattr(llm, "budget", None) is None:
            llm.budget = budget
        if hasattr(llm, "tracer") and getattr(llm, "tracer", None) is None:
            llm.tracer = tracer  # its calls go to this run's events.jsonl like any other
    from optiforge.sandboxes import get_sandbox

    kw: dict[str, Any] = {"warm": list(warm)} if warm and settings.sandbox == "local" else {}
    sandbox = get_sandbox(settings.sandbox, tracer=tracer, **kw)
    from optiforge.memory.scope import scoped_url

    memory = None
    url = scoped_url(settings.memory, recorder.run_dir if recorder else None)
    if url is not None:
        from optiforge.memory import Store

        # a write never waits for the embedding model (seconds, ~640 MiB): the vectors
        # are made when something searches by embedding
        memory = Store(url, defer_embedding=True)
        _preload_embedder(memory)
    n_workers = settings.workers if workers is None else workers
    executor: Any = None
    if settings.executor == "ray":
        from optiforge.sandboxes import RayExecutor

        # every evaluation still runs in its own sandbox on the Ray worker
        executor = RayExecutor(
            settings.ray_address, num_cpus=None if settings.ray_address else n_workers
        )
    elif n_workers > 1 and settings.executor == "thread":
        from optiforge.sandboxes import ThreadExecutor

        executor = ThreadExecutor(n_workers)
    elif n_workers > 1:
        from optiforge.sandboxes import ProcessExecutor

        executor = ProcessExecutor(n_workers)
    ctx = RunContext(
        llm=llm,
        sandbox=sandbox,
        memory=memory,
        executor=executor,
        budget=budget,
        seed=settings.seed,
        run_dir=recorder.run_dir if recorder else None,
        agent=agent,
    )
    if tracer is not None:
        ctx.tracer = tracer
    return ctx


def _preload_embedder(memory: Any) -> None:
    """A store that already holds lessons is searched at the start of the search (recall):
    load its embedding model now, in a background thread, while the agent is built."""
    load = getattr(memory.embedder, "load_in_background", None)
    try:
        if callable(load) and memory.experiences(limit=1):
            load()
    except MemoryStoreError:
        pass  # a preload only: the search that needs the model reports the store's trouble


def make_run_llm(settings: RunSettings, budget: Any, tracer: Any) -> Any:
    from optiforge.llm import Cassette, ResponseCache, make_llm

    if settings.record and settings.replay:
        raise ConfigError("--record and --replay exclude each other")
    cassette = None
    if settings.record:
        cassette = Cassette.shared(settings.record, mode="record")
    elif settings.replay:
        if not Path(settings.replay).is_file():
            raise ConfigError(f"--replay {settings.replay}: no such cassette file")
        cassette = Cassette.shared(settings.replay, mode="replay")
    cache = ResponseCache(settings.cache) if settings.cache else None
    kwargs: dict[str, Any] = {
        "budget": budget,
        "tracer": tracer,
        "cache": cache,
        "cassette": cassette,
    }
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    return make_llm(settings.model, local=settings.llm.local, **kwargs)


def close_context(ctx: RunContext) -> None:
    """Release a run's services: its executor, memory store and evaluation sandboxes."""
    from optiforge.agents.kit.evaluator import close_sandboxes

    if ctx.executor is not None:
        ctx.executor.shutdown()
    close_sandboxes()
    close = getattr(ctx.sandbox, "close", None)
    if callable(close):  # a warm sandbox stops its zygote
        close()
    if ctx.memory is not None and hasattr(ctx.memory, "close"):
        ctx.memory.close()

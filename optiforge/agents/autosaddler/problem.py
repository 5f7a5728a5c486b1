"""What AutoSaddler works on: a target (an agent with a harness, tasks and a runner) and
its episodes.

A ``Target`` gives ``base()`` (the harness to start from), ``load(files)``, ``tasks(split)``,
``run(harness, task, seed) -> episode``, ``diagnose(episode, mode)``, ``render(episode,
mode)``, ``categories`` (failure category -> meaning), ``library`` (the rule patches per
category) and ``parts_doc`` (each patchable part, for the LLM). An episode is a dict with
at least ``task``, ``seed``, ``passed`` (the task's own verifier's verdict, never the
agent's claim), ``stop``, ``steps``, ``llm_calls`` and ``tokens``. Implementations:
``targets.TerminalTarget`` (saddle) and ``meta.AutoREMTarget`` (autoro).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol


class Target(Protocol):
    name: str
    categories: dict[str, str]
    library: dict[str, list[Any]]
    parts_doc: str

    def base(self) -> Any: ...
    def load(self, files: dict[str, str]) -> Any: ...
    def tasks(self, split: str) -> list[Any]: ...
    def run(self, harness: Any, task: Any, seed: int) -> dict[str, Any]: ...
    def diagnose(self, ep: dict[str, Any], mode: str) -> dict[str, Any]: ...
    def render(self, ep: dict[str, Any], mode: str) -> str: ...


def failed_episode(task: Any, seed: int, why: str, **extra: Any) -> dict[str, Any]:
    """An episode that could not run (e.g. the sandbox failed): not passed, nothing spent."""
    return {"task": task.name, "seed": seed, "passed": False, "stop": why[:300], "steps": 0, "llm_calls": 0,
            "tokens": 0, **extra}  # fmt: skip


def item_key(task: Any, seed: int) -> str:
    return f"{task.name}#{seed}"


def run_items(
    target: Target, harness: Any, items: list[tuple[Any, int]], workers: int
) -> list[dict[str, Any]]:
    """Episodes of ``harness`` on (task, seed) items, in item order (``workers`` threads:
    each episode's work is sandbox runs and LLM calls)."""
    if workers <= 1 or len(items) <= 1:
        return [target.run(harness, t, s) for t, s in items]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda it: target.run(harness, it[0], it[1]), items))

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
from typing import Any, Protocol, TypedDict, runtime_checkable

from optiforge.agents.kit.harness import Patch
from optiforge.evals.protocol import Task


class TunedHarness(Protocol):
    """What the loop does with a harness: version it, save it as files, patch it."""

    @property
    def version(self) -> str:
        """A short hash of the harness's content."""
        ...

    def files(self) -> dict[str, str]:
        """The harness as files (``Target.load`` reads them back)."""
        ...

    def apply(self, patch: Patch) -> Any:
        """A new harness with ``patch`` applied (of the same kind)."""
        ...


@runtime_checkable
class Target(Protocol):
    """What AutoSaddler tunes (its "task", ``SPEC.task_type``): see the module doc."""

    name: str
    categories: dict[str, str]
    library: dict[str, list[Any]]
    parts_doc: str

    def base(self) -> TunedHarness: ...
    def load(self, files: dict[str, str]) -> TunedHarness: ...
    def tasks(self, split: str) -> list[Task]: ...
    def run(self, harness: Any, task: Task, seed: int) -> dict[str, Any]: ...
    def diagnose(self, ep: dict[str, Any], mode: str) -> dict[str, Any]: ...
    def render(self, ep: dict[str, Any], mode: str) -> str: ...


class SaddlerState(TypedDict, total=False):
    """The tuning graph's state (``nodes``): the harness, the task split, every round."""

    files: dict[str, str]
    """The current harness's files."""
    base_files: dict[str, str]
    train: list[str]
    val: list[str]
    iteration: int
    cursor: int
    history: list[dict[str, Any]]
    val_cache: dict[str, dict[str, bool]]
    val_causes: dict[str, dict[str, str]]
    """Per harness version: each validation item's ``"pass"`` or diagnosed failure category."""
    tried: list[str]
    """Patches tried on the current harness (emptied when a patch is accepted: a patch
    refused on one harness may help once another part has changed, e.g. a check turn
    that needs turns to spare)."""


def failed_episode(task: Task, seed: int, why: str, **extra: Any) -> dict[str, Any]:
    """An episode that could not run (e.g. the sandbox failed): not passed, nothing spent."""
    return {"task": task.name, "seed": seed, "passed": False, "stop": why[:300], "steps": 0, "llm_calls": 0,
            "tokens": 0, **extra}  # fmt: skip


def item_key(task: Task, seed: int) -> str:
    return f"{task.name}#{seed}"


def run_items(
    target: Target, harness: TunedHarness, items: list[tuple[Task, int]], workers: int
) -> list[dict[str, Any]]:
    """Episodes of ``harness`` on (task, seed) items, in item order (``workers`` threads:
    each episode's work is sandbox runs and LLM calls)."""
    if workers <= 1 or len(items) <= 1:
        return [target.run(harness, t, s) for t, s in items]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda it: target.run(harness, it[0], it[1]), items))

"""What AutoSaddler works on: a target (an agent with a harness, tasks and a runner) and
its episodes.

A ``Target`` gives ``base()`` (the harness to start from), ``load(files)``, ``tasks(split)``,
``run(harness, task, seed) -> episode``, ``diagnose(episode, mode)``, ``render(episode,
mode)``, ``categories`` (failure category -> meaning), ``library`` (the rule patches per
category) and ``parts_doc`` (each patchable part, for the LLM). An episode is a dict with
at least ``task``, ``seed``, ``passed`` (the task's own verifier's verdict, never the
agent's claim), ``stop``, ``steps``, ``llm_calls`` and ``tokens``. Implementations:
``targets.TerminalTarget`` (saddle) and ``meta.AutoREMTarget`` (autoro).

And how a patch is accepted (``validation_gate``, ``cause_gate``, ``repair_gate``):
the paired validation gate and the trajectory-repair ablation. Both harnesses run the same validation items (task, seed), so results pair up. Under the
null "the patch changes nothing", each discordant pair (one passes, the other fails) is a
fair coin, so ``wins - losses`` has mean 0 and standard deviation ``sqrt(wins + losses)``.
The gate accepts when ``wins - losses >= max(1, ceil(k * sqrt(wins + losses)))`` with
``k = margin_sd`` (default 1: one standard deviation). A patch that flips no pair (e.g.
advice the model ignores, with the same seeds) is always refused; one that changes
nothing but flips ``d`` pairs by chance passes with probability 0.50, 0.25, 0.13, 0.31,
0.19, 0.11 for ``d`` = 1..6 (0.16 for large ``d``). That is a loose gate, chosen because
the validation batches we can afford are small (6 tasks x 4 runs = 24 pairs): with k = 2 a
patch that fixes 3 pairs and breaks none (lead 3 < ceil(2 sqrt 3) = 4) would be refused. Every accepted patch is recorded with its wins and losses, so a reader can redo
the arithmetic.
"""

from __future__ import annotations

import math
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


def paired(before: dict[str, bool], after: dict[str, bool]) -> tuple[int, int]:
    """(wins, losses) of ``after`` over ``before`` on their common items."""
    keys = set(before) & set(after)
    wins = sum(1 for k in keys if after[k] and not before[k])
    losses = sum(1 for k in keys if before[k] and not after[k])
    return wins, losses


def needed(wins: int, losses: int, margin_sd: float) -> int:
    """The lead ``wins - losses`` must reach."""
    return max(1, math.ceil(margin_sd * math.sqrt(wins + losses)))


def validation_gate(
    before: dict[str, bool], after: dict[str, bool], margin_sd: float
) -> dict[str, Any]:
    wins, losses = paired(before, after)
    need = needed(wins, losses, margin_sd)
    return {
        "gate": "validation",
        "wins": wins,
        "losses": losses,
        "need": need,
        "before": sum(before.values()),
        "after": sum(after.values()),
        "n": len(after),
        "accepted": wins - losses >= need,
    }


def cause_gate(
    before: dict[str, str], after: dict[str, str], targeted: set[str], margin_sd: float
) -> dict[str, Any]:
    """The root-cause tie-break (``SaddlerConfig.cause_gate``): on the same paired
    validation items (each ``"pass"`` or its failure's diagnosed category), did the patch
    remove the root cause it was proposed for? ``fixed``: items that failed with a
    targeted cause before and do not after; ``new``: the reverse. Accept when ``fixed -
    new`` reaches the same sign margin as the pass gate. Used only when the pass gate
    refused with no net loss of passes: on long tasks that all fail under the base harness
    (several defects each enough to fail a task), no single cure turns a failure into a
    pass, so a gate on passes alone cannot start climbing."""
    keys = set(before) & set(after)
    fixed = sum(1 for k in keys if before[k] in targeted and after[k] not in targeted)
    new = sum(1 for k in keys if before[k] not in targeted and after[k] in targeted)
    need = needed(fixed, new, margin_sd)
    return {"targeted": sorted(targeted), "fixed": fixed, "new": new, "need": need,
            "accepted": bool(targeted) and fixed - new >= need}  # fmt: skip


def repair_gate(after_on_failed: dict[str, bool]) -> dict[str, Any]:
    """Accept when the patch fixes any of the failed trajectories it came from."""
    fixed = sum(after_on_failed.values())
    return {"gate": "repair", "fixed": fixed, "n": len(after_on_failed), "accepted": fixed >= 1}

"""AutoREM memory curation: consolidate raw lessons, prune those that do not help, write the rest.

Adaptation (``adapt.py``) writes one raw lesson per diagnosed failure, de-duplicated only
by content hash. Curation turns them into the memory a later run reads:

1. **consolidate** (``consolidate``): lessons with the same *failure key* - the trigger's
   set types and features plus the normalised code example (whitespace and comments
   dropped; the normalised rule text when there is no example) - are one lesson group. The
   group's lesson is its most frequent member; it carries ``count`` (members), the member
   ids and the base models that wrote them.
2. **prune** (``prune``): backward elimination on a validation split. The agent runs with
   all groups; then, weakest evidence (lowest count) first, once per group with that group
   removed from the groups still kept, on the validation tasks where it was retrieved (the
   others cannot change). ``effect`` = tasks solved with it minus without. A group is kept
   iff ``effect > 0``; a group never retrieved on validation is ``untested`` and dropped
   unless ``keep_untested`` (it cannot be shown to help). Against the kept set, not the
   full one: two lessons that substitute for each other keep one, not zero.
3. **write** (``write_curated``): kept groups go to a destination store as experience
   records tagged ``curated`` (``exp_autorem_cur_<key>``); a store holding curated lessons
   serves only those to retrieval (``experience.has_curated``). The destination must hold
   no curated lessons yet (curate into a fresh store; the store has no delete).

The memory is plain text: a store curated with one base model can be used by another
(the transfer measurement in ``benchmarks/autorem_text.py``).
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.autorem.agent import run_instance
from optiforge.agents.autorem.config import AutoREMConfig
from optiforge.agents.autorem.experience import (
    AGENT,
    CURATED_TAG,
    ExperienceEntry,
    entry_from_experience,
    has_curated,
)
from optiforge.agents.kit import RunContext
from optiforge.errors import ConfigError, MemoryStoreError
from optiforge.evals.suites.autoro.protocol import ROTask

if TYPE_CHECKING:
    from optiforge.memory.records import Experience
    from optiforge.memory.store import Store


class LessonGroup(BaseModel):
    """Consolidated lessons: one failure key, its representative lesson and its members."""

    model_config = ConfigDict(extra="forbid")

    key: str
    entry: ExperienceEntry
    count: int
    members: list[str]
    models: list[str] = Field(default_factory=list)
    effect: int | None = None
    """Validation tasks solved with the group minus without (None: never retrieved)."""
    tested_on: list[str] = Field(default_factory=list)
    kept: bool = True

    @property
    def id(self) -> str:
        return f"exp_autorem_cur_{self.key}"


class CurationReport(BaseModel):
    """What one curation did."""

    model_config = ConfigDict(extra="forbid")

    n_raw: int = 0
    n_groups: int = 0
    n_kept: int = 0
    n_pruned_no_effect: int = 0
    n_pruned_harmful: int = 0
    n_untested: int = 0
    val_split: str = ""
    val_solved_all: int = 0
    val_solved_kept: int | None = None
    val_tasks: int = 0
    runs: int = 0
    wall_s: float = 0.0
    groups: list[LessonGroup] = Field(default_factory=list)

    def text(self) -> str:
        """One paragraph for the CLI and the benchmark."""
        return (
            f"curated {self.n_raw} raw lessons into {self.n_groups} groups; kept "
            f"{self.n_kept}, pruned {self.n_pruned_no_effect} without effect and "
            f"{self.n_pruned_harmful} harmful, {self.n_untested} untested on {self.val_split} "
            f"({self.val_tasks} tasks: {self.val_solved_all} solved with every group"
            + (f", {self.val_solved_kept} with the kept ones" if self.val_solved_kept is not None else "")
            + f"; {self.runs} agent runs, {self.wall_s:.0f} s)"
        )  # fmt: skip


def _normal(text: str) -> str:
    text = re.sub(r"#[^\n]*", "", text)
    return " ".join(re.findall(r"[A-Za-z0-9_.]+|[^\sA-Za-z0-9_]", text.lower()))


def failure_key(entry: ExperienceEntry) -> str:
    """The consolidation key: trigger set types and features + normalised example (or rule)."""
    body = _normal(entry.example) if entry.example.strip() else _normal(entry.corrective_rule)
    blob = json.dumps(
        [sorted(set(entry.trigger.set_types)), sorted(set(entry.trigger.features)), body]
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def consolidate(records: list[Experience]) -> list[LessonGroup]:
    """Group raw AutoREM experience records by failure key (records not AutoREM are skipped)."""
    members: dict[str, list[tuple[str, ExperienceEntry, str]]] = {}
    for rec in records:
        if CURATED_TAG in rec.tags:
            continue
        try:
            entry = entry_from_experience(rec)
        except MemoryStoreError:
            continue
        try:
            model = str(json.loads(rec.trajectory_summary).get("model", "?"))
        except (json.JSONDecodeError, AttributeError):
            model = "?"
        members.setdefault(failure_key(entry), []).append((rec.id, entry, model))
    groups = []
    for key, items in members.items():
        counts = Counter(e.model_dump_json() for _, e, _ in items)
        best = max(items, key=lambda it: counts[it[1].model_dump_json()])[1]
        groups.append(
            LessonGroup(
                key=key,
                entry=best,
                count=len(items),
                members=[i for i, _, _ in items],
                models=sorted({m for _, _, m in items}),
            )  # fmt: skip
        )
    return sorted(groups, key=lambda g: (-g.count, g.key))


def curated_record(group: LessonGroup) -> Experience:
    """The ``memory.Experience`` of a kept group (tag ``curated``; the entry parses back)."""
    from optiforge.memory import Experience

    summary = {
        "entry": group.entry.model_dump(mode="json"),
        "curated": group.model_dump(mode="json", exclude={"entry"}),
    }
    return Experience(
        id=group.id,
        agent=AGENT,
        task_signature="autoro curated lesson; sets: "
        + (",".join(group.entry.trigger.set_types) or "any"),
        trajectory_summary=json.dumps(summary, sort_keys=True),
        outcome=f"curated: {group.count} lesson(s), validation effect {group.effect}",
        score=float(group.effect) if group.effect is not None else None,
        lesson=group.entry.render(),
        tags=[*group.entry.tags(), CURATED_TAG],
        # LLM-written lessons (validated by their measured effect, but their text is
        # still what the reflection wrote after reading candidate output)
        provenance="distilled",
    )


def write_curated(store: Store, groups: list[LessonGroup]) -> list[str]:
    """Write the kept groups to ``store`` (which must hold no curated lessons yet)."""
    if has_curated(store):
        raise ConfigError("the destination store already holds curated lessons (use a fresh one)")
    return store.add_experiences([curated_record(g) for g in groups if g.kept])


Evaluate = Callable[[list[LessonGroup], Sequence[ROTask]], dict[str, tuple[bool, list[str]]]]
"""``(groups, tasks) -> {task name: (solved, ids of the curated records retrieved)}``."""


def agent_evaluator(ctx: RunContext, config: AutoREMConfig, workers: int = 2) -> Evaluate:
    """Runs the agent (no reflection) with exactly ``groups`` as its memory.

    Each call writes the groups to a fresh lexical store in a temporary directory, so
    validation never touches the stores being curated.
    """
    from optiforge.memory import Store

    cfg = config.model_copy(update={"reflect": "never", "use_memory": True})

    def evaluate(
        groups: list[LessonGroup], tasks: Sequence[ROTask]
    ) -> dict[str, tuple[bool, list[str]]]:
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(f"sqlite:///{Path(tmp) / 'val.db'}", embedder=None)
            try:
                if groups:
                    store.add_experiences([curated_record(g) for g in groups])

                def one(task: ROTask) -> tuple[str, tuple[bool, list[str]]]:
                    vctx = RunContext(
                        llm=ctx.llm, sandbox=ctx.sandbox, memory=store, executor=None,
                        budget=ctx.budget, tracer=ctx.tracer, seed=ctx.seed, run_dir=None,
                        agent="autorem",
                    )  # fmt: skip
                    state = run_instance(task, vctx, cfg, thread_id=f"val-{task.name}")
                    solved = any(a.get("passed") for a in state.get("attempts", []))
                    ids = [r["id"] for r in state.get("retrieved", [])]
                    ids += list(state.get("model_retrieved", []))
                    return task.name, (solved, ids)

                with ThreadPoolExecutor(max(1, workers)) as pool:
                    return dict(pool.map(one, tasks))
            finally:
                store.close()

    return evaluate


def prune(
    groups: list[LessonGroup],
    tasks: Sequence[ROTask],
    evaluate: Evaluate,
    *,
    keep_untested: bool = False,
    report: CurationReport | None = None,
) -> list[LessonGroup]:
    """Backward elimination on the validation ``tasks``; marks ``kept`` (module docstring).

    Groups are visited weakest evidence first (lowest ``count``); each is ablated against
    the groups still kept, so of two lessons that substitute for each other one survives
    (a one-shot leave-one-out would drop both: neither alone changes the result).
    """
    rep = report or CurationReport()
    base = evaluate(groups, tasks)
    rep.runs += len(tasks)
    rep.val_tasks, rep.val_solved_all = len(tasks), sum(s for s, _ in base.values())
    by_name = {t.name: t for t in tasks}
    current = {g.key: g for g in groups}
    out: dict[str, LessonGroup] = {}
    for g in sorted(groups, key=lambda h: (h.count, h.key)):
        seen = [name for name, (_, ids) in base.items() if g.id in ids]
        g = g.model_copy(update={"tested_on": seen})
        if not seen:
            g.effect, g.kept = None, keep_untested
            rep.n_untested += 1
        else:
            rest = [h for k, h in current.items() if k != g.key]
            ablated = evaluate(rest, [by_name[n] for n in seen])
            rep.runs += len(seen)
            g.effect = sum(base[n][0] for n in seen) - sum(ablated[n][0] for n in seen)
            g.kept = g.effect > 0
            if not g.kept:
                base.update(ablated)  # only the tasks that retrieved g can change
                if g.effect < 0:
                    rep.n_pruned_harmful += 1
                else:
                    rep.n_pruned_no_effect += 1
        if not g.kept:
            current.pop(g.key, None)
        out[g.key] = g
    return [out[g.key] for g in groups]


def curate(
    source: Store,
    destination: Store,
    tasks: Sequence[ROTask],
    evaluate: Evaluate,
    *,
    val_split: str = "app-val",
    keep_untested: bool = False,
    check_kept: bool = True,
) -> CurationReport:
    """Consolidate ``source``'s raw AutoREM lessons, prune them on ``tasks``, write to ``destination``.

    check_kept: re-run validation with the kept groups only (``val_solved_kept``).
    """
    t0 = time.perf_counter()
    rep = CurationReport(val_split=val_split)
    raw = [r for r in source.experiences(agent=AGENT) if CURATED_TAG not in r.tags]
    rep.n_raw = len(raw)
    groups = consolidate(raw)
    rep.n_groups = len(groups)
    groups = prune(groups, tasks, evaluate, keep_untested=keep_untested, report=rep)
    kept = [g for g in groups if g.kept]
    rep.n_kept = len(kept)
    if check_kept:
        res = evaluate(kept, tasks)
        rep.runs += len(tasks)
        rep.val_solved_kept = sum(s for s, _ in res.values())
    write_curated(destination, groups)
    rep.groups = groups
    rep.wall_s = round(time.perf_counter() - t0, 1)
    return rep

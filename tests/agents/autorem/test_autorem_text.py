"""AutoREM from text: the reference modeller reads words only, the prompts hold no hidden
JSON, the modelling step is scored, and curated memory (consolidated, pruned) transfers
from one scripted base model to another."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from optiforge.agents.autorem import AutoREMConfig
from optiforge.agents.autorem.agent import run_instance
from optiforge.agents.autorem.curate import (
    LessonGroup,
    consolidate,
    curate,
    failure_key,
    prune,
    write_curated,
)
from optiforge.agents.autorem.experience import (
    CURATED_TAG,
    EntryTrigger,
    ExperienceEntry,
    diagnose_model,
    retrieve_entries,
    to_experience,
)
from optiforge.agents.autorem.modeller import SHEET_HEADER, reference_modeller
from optiforge.agents.autorem.problem import model_view
from optiforge.agents.autorem.proposers import support_rule
from optiforge.agents.autorem.testing import (
    PROFILES,
    WRONG_RULES,
    ScriptedROModel,
    scripted_ro_model,
)
from optiforge.agents.kit import RunContext
from optiforge.errors import ConfigError, InvalidTask
from optiforge.evals.suites.autoro import AutoROBenchmark, generate
from optiforge.evals.suites.autoro.text import SHEET_HEADER as SUITE_HEADER
from optiforge.evals.suites.autoro.text import problem_text
from optiforge.memory import Store
from optiforge.sandboxes import get_sandbox
from optiforge.solvers.robust.compare import model_differences

CFG = AutoREMConfig(max_attempts=1, tools={"use": []})


def _task(name: str):
    return next(t for t in AutoROBenchmark(n_per_split=0).tasks("app") if name in t.name)


def test_reference_modeller_round_trips_every_sheet_from_the_text_alone() -> None:
    assert SHEET_HEADER == SUITE_HEADER
    for task in AutoROBenchmark(n_per_split=0).tasks("app"):
        model = reference_modeller(task.statement)  # the words, not the instance
        assert model_differences(model, task.instance.problem) == [], task.name
    for inst in generate("heldout", 3, seed=2000):  # SOC rows, uncertain objectives, polyhedra
        assert model_differences(reference_modeller(problem_text(inst.problem)), inst.problem) == []
    with pytest.raises(InvalidTask, match="no model sheet"):
        reference_modeller('{"n": 2, "objective": {"c": [1, 2]}}')
    broken = problem_text(_task("knapsack").instance.problem).replace("<= 12", "<= twelve")
    with pytest.raises(InvalidTask, match="unreadable constraint"):
        reference_modeller(broken)


def _numbers(text: str) -> set[float]:
    return {float(m) for m in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?", text)}


def test_prompts_show_words_and_the_agents_own_model_never_the_hidden_json(
    lexical_store: Store,
) -> None:
    task = _task("portfolio_budget")  # uncertain objective: scripted-A drops it when modelling
    llm = scripted_ro_model("A")
    ctx = RunContext(llm=llm, sandbox=get_sandbox("local"), memory=lexical_store, agent="autorem")
    state = run_instance(task, ctx, CFG.model_copy(update={"reflect": "on_failure"}))
    hidden = task.instance.problem
    prompts = ["\n".join(str(m["content"]) for m in call) for call in llm.calls]
    assert len(prompts) == 3  # model, write, reflect
    for p in prompts:
        assert hidden.to_json() not in p and json.dumps(hidden.model_dump()) not in p
    # the modelling request's user turn (the system turn also carries the reply's JSON schema)
    modelling = next(str(m["content"]) for m in llm.calls[0] if m["role"] == "user")
    assert '"constraints"' not in modelling and "Problem JSON" not in modelling
    # every number the modelling step sees is a number of the statement (or of the prompt's
    # fixed protocol text): no coefficient vector leaks beyond what the text states
    from optiforge.agents.autorem.modeller import MODEL_SYSTEM_PROMPT

    assert _numbers(modelling) <= _numbers(task.statement) | _numbers(MODEL_SYSTEM_PROMPT)
    # the writer sees the model the agent wrote (objective uncertainty dropped), not the truth
    own = state["model"]
    assert own is not None and own["objective"]["uncertainty"] is None
    assert hidden.objective.uncertainty is not None and '"uncertainty":null' in prompts[1]
    assert state["attempts"][0]["passed"] is False
    assert state["attempts"][0]["metrics"]["model_match"] == 0.0
    # adaptation turned the wrong field (a path, no value) into a modelling lesson
    stored = lexical_store.experiences(agent="autorem")
    assert any("objective.uncertainty" in e.lesson for e in stored)


def test_modelling_lesson_fixes_the_model_of_a_scripted_model(lexical_store: Store) -> None:
    task = _task("portfolio_budget")
    (lesson,) = diagnose_model(["objective.uncertainty"])
    lexical_store.add_experience(
        to_experience(lesson, model_view(task, reference_modeller(task.statement)), [], "x")
    )
    llm = scripted_ro_model("A")
    ctx = RunContext(llm=llm, sandbox=get_sandbox("local"), memory=lexical_store, agent="autorem")
    state = run_instance(task, ctx, CFG)
    assert state["model_retrieved"] and state["model"]["objective"]["uncertainty"] is not None
    assert state["attempts"][0]["metrics"]["model_match"] == 1.0


def _entry(kind: str, variant: str, note: str = "") -> ExperienceEntry:
    code = support_rule(kind) if variant == "correct" else WRONG_RULES[kind][variant]
    return ExperienceEntry(
        trigger=EntryTrigger(set_types=[kind]),
        error_pattern=f"rejected {note}".strip(),
        corrective_rule=f"use the {variant} rule",
        example=code,
    )


def test_consolidation_merges_same_failure_key_and_keeps_different_rules(
    lexical_store: Store,
) -> None:
    diet = _task("diet")
    inst = model_view(diet, diet.instance.problem)
    entries = [
        _entry("box", "correct", "a"),
        _entry("box", "correct", "b"),  # same rule, other wording: merged
        _entry("box", "l2"),  # another rule for the same set: its own group
        _entry("budget", "correct"),
    ]
    assert failure_key(entries[0]) == failure_key(entries[1]) != failure_key(entries[2])
    lexical_store.add_experiences([to_experience(e, inst, [], "m") for e in entries])
    groups = consolidate(lexical_store.experiences(agent="autorem"))
    assert sorted(g.count for g in groups) == [1, 1, 2]
    assert groups[0].count == 2 and groups[0].entry.trigger.set_types == ["box"]


def test_prune_keeps_only_groups_that_help_on_validation(tmp_path: Path) -> None:
    def group(name: str) -> LessonGroup:
        return LessonGroup(key=name, entry=_entry("box", "correct", name), count=1, members=[])

    helps, useless, harms, unseen = group("h"), group("u"), group("x"), group("n")

    class T:
        def __init__(self, name: str) -> None:
            self.name = name

    tasks = [T("t1"), T("t2")]

    def evaluate(groups, ts):  # a fake validation: t1 needs 'h', 'x' breaks t2
        keys = {g.key for g in groups}
        out = {}
        for t in ts:
            solved = ("h" in keys) if t.name == "t1" else ("x" not in keys)
            out[t.name] = (solved, [f"exp_autorem_cur_{k}" for k in keys if k != "n"])
        return out

    # two substitutes (t3 is solved with either): backward elimination keeps one, not zero
    sub1, sub2 = group("s1"), group("s2")

    def evaluate_sub(groups, ts):
        keys = {g.key for g in groups}
        return {t.name: (bool(keys & {"s1", "s2"}), [f"exp_autorem_cur_{k}" for k in keys])
                for t in ts}  # fmt: skip

    kept = [g.key for g in prune([sub1, sub2], [T("t3")], evaluate_sub) if g.kept]
    assert kept == ["s2"]

    src = Store(f"sqlite:///{tmp_path / 'src.db'}", embedder=None)
    dst = Store(f"sqlite:///{tmp_path / 'dst.db'}", embedder=None)
    try:
        pruned = {g.key: g for g in prune([helps, useless, harms, unseen], tasks, evaluate)}
        assert (pruned["h"].kept, pruned["h"].effect) == (True, 1)
        assert (pruned["u"].kept, pruned["u"].effect) == (False, 0)
        assert (pruned["x"].kept, pruned["x"].effect) == (False, -1)
        assert (pruned["n"].kept, pruned["n"].effect) == (False, None)
        inst = model_view(_task("diet"), _task("diet").instance.problem)
        src.add_experiences(
            [to_experience(_entry("box", v), inst, [], "m") for v in ("correct", "l2")]
        )
        rep = curate(src, dst, tasks, evaluate, check_kept=False)
        # neither of these two changes the fake validation: both pruned without effect
        assert (rep.n_raw, rep.n_groups, rep.n_pruned_no_effect, rep.n_kept) == (2, 2, 2, 0)
        assert dst.experiences(agent="autorem") == []
        write_curated(dst, list(pruned.values()))
        assert [e.id for e in dst.experiences(agent="autorem")] == [helps.id]
        assert all(CURATED_TAG in e.tags for e in dst.experiences(agent="autorem"))
        with pytest.raises(ConfigError, match="fresh"):
            write_curated(dst, [pruned["h"]])
    finally:
        src.close()
        dst.close()


def test_curated_memory_built_with_model_a_transfers_to_model_b(tmp_path: Path) -> None:
    """Model B writes no support term for boxes; a curated lesson written by model A
    (the textbook box rule) is retrieved, B follows it and solves the task; a raw wrong
    lesson in the same store is not served once curated lessons exist."""
    task = _task("diet")  # box rows, ge sense
    assert PROFILES["B"].beliefs["box"] == "nominal"
    store = Store(f"sqlite:///{tmp_path / 'mem.db'}", embedder=None)
    try:
        view = model_view(task, reference_modeller(task.statement))
        store.add_experience(to_experience(_entry("box", "l2", "raw"), view, [], "scripted-A"))
        ctx = RunContext(llm=scripted_ro_model("B"), sandbox=get_sandbox("local"), memory=None,
                         agent="autorem")  # fmt: skip
        assert run_instance(task, ctx, CFG)["attempts"][0]["passed"] is False  # no memory
        good = LessonGroup(key="k", entry=_entry("box", "correct"), count=3, members=[],
                           models=["scripted-A"], effect=1)  # fmt: skip
        write_curated(store, [good])
        found = retrieve_entries(store, view, 4)
        assert [i for i, _ in found] == [good.id]  # curated only: the raw l2 lesson is hidden
        ctx.memory = store
        ctx.llm = ScriptedROModel(PROFILES["B"]).llm()
        state = run_instance(task, ctx, CFG)
        assert state["attempts"][0]["passed"] is True
        assert [r["id"] for r in state["retrieved"]] == [good.id]
    finally:
        store.close()

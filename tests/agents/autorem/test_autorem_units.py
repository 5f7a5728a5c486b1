"""Entries, rule diagnosis, retrieval and bad input: no sandbox, no LLM."""

from __future__ import annotations

import json

import pytest
from autorem_helpers import instance

from optiforge.agents.autorem import SPEC, AutoREMConfig
from optiforge.agents.autorem.agent import run_instance
from optiforge.agents.autorem.experience import (
    Attempt,
    EntryTrigger,
    ExperienceEntry,
    diagnose_rules,
    entry_from_experience,
    retrieve_entries,
    to_experience,
)
from optiforge.agents.autorem.problem import load_task
from optiforge.agents.autorem.proposers import repair_message
from optiforge.agents.autorem.report import accuracy_table, outcome_from_state
from optiforge.agents.kit import RunContext
from optiforge.errors import InvalidTask, MemoryStoreError
from optiforge.evals.protocol import Score
from optiforge.evals.suites.autoro import AutoROTask
from optiforge.memory import Experience
from optiforge.runs import ListTracer
from optiforge.testing import ScriptedLLM


def _failed(reason: str) -> list[Attempt]:
    return [Attempt(index=0, code="x = 1", passed=False, reasons=[reason])]


def test_entry_round_trips_through_an_experience_record() -> None:
    inst = instance("dev", 0, 1)
    entry = ExperienceEntry(
        trigger=EntryTrigger(set_types=["box"], features=["ge_rows"], description="d"),
        error_pattern="missing norm",
        corrective_rule="add rho * ||P^T x||_1",
        example="rho * cp.norm1(P.T @ x)",
    )
    exp = to_experience(entry, inst, _failed("not robust-feasible: row 0 ..."), "model-a")
    assert exp.agent == "autorem"
    assert set(exp.tags) == {"autorem", "box", "ge_rows"}
    assert "Rule: add rho * ||P^T x||_1" in exp.lesson
    back = entry_from_experience(Experience.model_validate(exp.model_dump(mode="json")))
    assert back == entry
    assert json.loads(exp.trajectory_summary)["model"] == "model-a"
    with pytest.raises(MemoryStoreError, match="not an AutoREM entry"):
        entry_from_experience(
            Experience(agent="autorem", task_signature="t", trajectory_summary="x")
        )


def test_rules_map_budget_row_failure_to_dual_variables() -> None:
    inst = instance("dev", 2, 3)  # rows: budget, ellipsoidal, budget
    row = next(
        i
        for i, c in enumerate(inst.problem.constraints)
        if c.uncertainty and c.uncertainty.type == "budget"
    )
    sense = inst.problem.constraints[row].sense
    entries = diagnose_rules(
        inst, _failed(f"not robust-feasible: row {row} worst-case violation 0.3 > tol 1e-06")
    )
    assert len(entries) == 1
    e = entries[0]
    assert e.trigger.set_types == ["budget"]
    assert "lam + mu_j >=" in e.corrective_rule and "delta_j |x_j|" in e.corrective_rule
    assert "cp.Variable(nonneg=True)" in e.example
    assert ("negate a, b AND P" in e.corrective_rule) == (sense == ">=")


def test_rules_cover_crash_output_and_conservative_verdicts() -> None:
    inst = instance("dev", 0, 1)
    crash = diagnose_rules(inst, _failed("candidate program failed: exit code 1: KeyError: 'P'"))
    assert crash[0].trigger.set_types == [] and "KeyError" in crash[0].error_pattern
    assert "general" in crash[0].tags()
    no_json = diagnose_rules(
        inst, _failed('candidate output has no final JSON line {"x": [...], "objective": f}')
    )
    assert "LAST stdout line" in no_json[0].corrective_rule
    conservative = diagnose_rules(
        inst, _failed("objective mismatch: candidate 1 vs reference 2 (rel err ...)")
    )
    assert conservative[0].trigger.set_types == ["box"]
    assert "too conservative" in conservative[0].error_pattern
    # an accepted attempt teaches nothing
    assert diagnose_rules(inst, [Attempt(index=0, code="", passed=True)]) == []


def test_retrieval_filters_by_set_type_and_features(lexical_store) -> None:
    box_inst = instance("dev", 0, 1)  # box only
    ell_inst = next(
        instance("dev", i, 2)
        for i in range(1, 12)
        if set(instance("dev", i, 2).set_types) == {"ellipsoidal"}
    )
    box = ExperienceEntry(
        trigger=EntryTrigger(set_types=["box"]), error_pattern="p1", corrective_rule="r-box"
    )
    box_ge = ExperienceEntry(
        trigger=EntryTrigger(set_types=["box"], features=["ge_rows"]),
        error_pattern="p2",
        corrective_rule="r-ge",
    )
    general = ExperienceEntry(
        trigger=EntryTrigger(), error_pattern="crash", corrective_rule="r-general"
    )
    for e in (box, box_ge, general):
        lexical_store.add_experience(to_experience(e, box_inst, _failed("x"), "m"))
    got = {e.corrective_rule for _, e in retrieve_entries(lexical_store, box_inst, k=4)}
    want_ge = "ge_rows" in box_inst.features
    assert got == ({"r-box", "r-general"} | ({"r-ge"} if want_ge else set()))
    got_ell = {e.corrective_rule for _, e in retrieve_entries(lexical_store, ell_inst, k=4)}
    assert got_ell == {"r-general"}
    assert retrieve_entries(None, box_inst) == []


def _problem(**over):
    p = {
        "n": 2,
        "lower": [0, 0],
        "upper": [1, 1],
        "objective": {"c": [1.0, 1.0], "sense": "max"},
        "constraints": [
            {
                "a": [1.0, 1.0],
                "b": 1.5,
                "uncertainty": {"type": "box", "P": [[0.1], [0.1]], "rho": 1.0},
            }
        ],
    }
    p.update(over)
    return p


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ('{"n": 2, "objective": ', "malformed JSON"),
        ("Maximise profit subject to uncertain demand.", "free text has no ground truth"),
        (
            _problem(
                constraints=[
                    {"a": [1.0, 1.0], "b": 1.0, "uncertainty": {"type": "cone", "P": [[1.0]]}}
                ]
            ),
            "unknown uncertainty set type 'cone'",
        ),
        (
            {
                "id": "i",
                "split": "dev",
                "difficulty": 1,
                "description": "d",
                "reference_objective": 0.0,
                "reference_x": [],
                "problem": _problem(
                    constraints=[{"a": [1.0, 1.0], "b": 1.0, "uncertainty": {"type": "wedge"}}]
                ),
            },
            "unknown uncertainty set type 'wedge'",
        ),
        (
            _problem(objective={"c": [1.0, 1.0], "sense": "min", "Q": [[1.0, 0.0], [0.0, -1.0]]}),
            "non-convex nominal model",
        ),
        (
            _problem(objective={"c": [1.0, 1.0], "sense": "max", "Q": [[1.0, 0.0], [0.0, 1.0]]}),
            "non-convex nominal model",
        ),
        (
            _problem(
                soc_constraints=[
                    {"A": [[1.0, 0.0]], "b": [0.0], "c": [0.0, 0.0], "d": 1.0, "sense": ">="}
                ]
            ),
            "non-convex nominal model",
        ),
    ],
)
def test_bad_input_gives_one_line_invalid_task(data, match) -> None:
    with pytest.raises(InvalidTask, match=match) as err:
        load_task(data)
    assert "\n" not in str(err.value)


def test_the_agent_runs_on_ro_tasks_and_the_harness_refuses_others_up_front() -> None:
    # raw input reaches the agent only through ``load_task``; ``build`` takes an ``ROTask``
    from optiforge.errors import ConfigError
    from optiforge.evals.registry import resolve_task
    from optiforge.evals.suites.autoro.protocol import ROTask

    assert SPEC.task_type is ROTask
    t = load_task(instance("dev", 0, 1))
    assert SPEC.check_task(t) is t
    with pytest.raises(ConfigError, match=r"autorem runs on autoro tasks \(ROTask\)"):
        SPEC.check_task(resolve_task("bbowp/pressure-vessel@dev"))


def test_a_valid_problem_becomes_a_verifiable_task() -> None:
    t = load_task(json.dumps(_problem()))
    # box row: x1 + x2 + 0.1 (|x1| + |x2|) <= 1.5 -> x1 + x2 <= 1.5 / 1.1
    assert t.instance.reference_objective == pytest.approx(1.5 / 1.1, rel=1e-7)
    assert t.instance.set_types == ["box"]


def test_accuracy_table_prints_tolerance_and_per_solved_costs() -> None:
    tol = "rel_tol=1e-06 abs_tol=1e-06 feas_tol=1e-06"
    ver = {"details": {"tolerance": tol}}
    rows = [
        {
            "split": "dev",
            "method": "autorem",
            "model": "m",
            "verified": True,
            "llm_calls": 1,
            "tokens": 100,
            "extra": {"attempts": 1, "memory_used": True},
            "verification": ver,
        },
        {
            "split": "dev",
            "method": "autorem",
            "model": "m",
            "verified": False,
            "llm_calls": 3,
            "tokens": 300,
            "extra": {"attempts": 3, "memory_used": True},
            "verification": ver,
        },
        {
            "split": "dev",
            "method": "no-memory",
            "model": "m",
            "verified": True,
            "llm_calls": 2,
            "tokens": 250,
            "extra": {"attempts": 2, "memory_used": False},
            "verification": ver,
        },
        {"error": "boom", "method": "autorem"},
    ]
    md = accuracy_table(rows)
    assert md.splitlines()[0].endswith(f"({tol}).")
    assert "| dev | autorem | with | m | 2 | 1 | 0.500 | 4.0 | 400.0 | 2.00 |" in md
    assert "| dev | no-memory | without | m | 1 | 1 | 1.000 | 2.0 | 250.0 | 2.00 |" in md
    assert "checker" not in md  # not an offline run


class _AlwaysRejects(AutoROTask):
    """A task whose verifier rejects every program with a fixed reason (no sandbox)."""

    def evaluate(self, candidate, sandbox=None):
        self.seen.append(candidate)
        return Score(
            value=0.0,
            passed=False,
            details={"reasons": [self.reason], "tolerance": self.tolerance_line()},
        )


def _rejecting(inst, reason: str) -> _AlwaysRejects:
    t = _AlwaysRejects(inst)
    t.seen, t.reason = [], reason
    return t


def test_repairs_are_bounded_and_a_failed_trajectory_is_reflected(lexical_store) -> None:
    inst = instance("dev", 0, 1)
    t = _rejecting(inst, "not robust-feasible: row 0 worst-case violation 0.2 > tol 1e-06")
    llm = ScriptedLLM([f"```python\nprint({i})\n```" for i in range(3)])
    ctx = RunContext(llm=llm, sandbox=object(), memory=lexical_store, tracer=ListTracer())
    cfg = AutoREMConfig(max_attempts=3, reflect="on_failure", reflector="rules")
    state = run_instance(t, ctx, cfg)
    assert t.seen == ["print(0)\n", "print(1)\n", "print(2)\n"]
    assert llm.remaining == 0 and state["llm_calls"] == 3
    assert state["stop_reason"] == "attempts spent"
    # every repair turn carried the verdict
    assert all("not robust-feasible: row 0" in c[-1]["content"] for c in llm.calls[1:])
    (exp,) = lexical_store.experiences(agent="autorem")
    assert entry_from_experience(exp).trigger.set_types == ["box"]
    assert state["reflected"] == [exp.id]
    cands = lexical_store.candidates(agent="autorem")
    assert [c.parent_ids for c in cands] == [[], [cands[0].id], [cands[1].id]]
    out = outcome_from_state(state, memory_used=True)
    assert out.extra["attempts"] == 3 and out.extra["solved"] is False and out.trace == [None] * 3
    # the same failure again adds no duplicate entry
    t2 = _rejecting(inst, t.reason)
    state2 = run_instance(
        t2,
        RunContext(llm=ScriptedLLM(["x"]), sandbox=object(), memory=lexical_store),
        cfg.model_copy(update={"max_attempts": 1}),
    )
    assert state2["reflected"] == [] and len(lexical_store.experiences(agent="autorem")) == 1
    assert state2["retrieved"][0]["id"] == exp.id  # ... but it was retrieved into the prompt


def test_offline_writer_is_not_repeated_after_a_rejection() -> None:
    t = _rejecting(
        instance("dev", 0, 1),
        "objective mismatch: candidate 1 vs reference 2 (rel err 1 > tol 1e-06)",
    )
    state = run_instance(t, RunContext(sandbox=object()), AutoREMConfig(max_attempts=3))
    assert len(t.seen) == 1 and "no repair offline" in state["stop_reason"]
    assert (
        "[hidden]"
        in repair_message(
            ["objective mismatch: candidate 1 vs reference 2 (rel err 1 > tol 1e-06)"]
        )["content"]
    )

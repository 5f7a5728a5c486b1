"""Offline AutoREM: the reference reformulator as code, through the sandbox and the runner."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from autorem_helpers import instance, task

from optiforge.agents.autorem import SPEC
from optiforge.agents.autorem.proposers import counterpart_program
from optiforge.agents.autorem.report import accuracy_table
from optiforge.config import RunSettings
from optiforge.harness.runner import run_task
from optiforge.sandboxes import get_sandbox
from optiforge.solvers.robust import parse_candidate_output, reference_counterpart, verify


@pytest.mark.parametrize(("split", "index", "difficulty"), [("dev", 2, 3), ("heldout", 3, 4)])
def test_generated_program_is_robust_optimal_by_primal_check(
    split: str, index: int, difficulty: int
) -> None:
    inst = instance(split, index, difficulty)
    code = counterpart_program(inst.problem)
    assert "optiforge" not in code.split('"""', 2)[2]  # self-contained: only json/numpy/cvxpy
    for t in set(inst.set_types):
        assert f'if t == "{t}"' in code
    res = get_sandbox("local").run(
        [sys.executable, "candidate.py"],
        files={"candidate.py": code, "instance.json": inst.problem.to_json()},
        timeout_s=60,
        memory_mb=2048,
    )
    assert res.returncode == 0, res.stderr
    out = parse_candidate_output(res.stdout)
    assert out is not None
    # second method: every row's worst case by the explicit inner maximisation (no duals)
    v = verify(
        inst.problem,
        out["x"],
        out["objective"],
        reference_objective=inst.reference_objective,
        method="primal",
    )
    assert v.correct, v.reasons
    assert out["objective"] == pytest.approx(
        reference_counterpart(inst.problem).solve().objective, rel=1e-6, abs=1e-6
    )


@pytest.mark.slow
def test_offline_agent_solves_through_run_task_and_nominal_scores_zero(tmp_path: Path) -> None:
    settings = RunSettings(memory="none")
    dev = run_task(SPEC, task("dev", 0, 1), settings, tmp_path / "dev", with_baseline=False)
    assert dev.verified is True and dev.best_score == 1.0
    assert dev.extra["proposer"] == "reference" and dev.extra["attempts"] == 1
    assert dev.llm_calls == 0 and dev.extra["retrieved"] == 0
    held = run_task(SPEC, task("heldout", 2, 3), settings, tmp_path / "held", with_baseline=False)
    assert held.verified is True, held.verification
    assert SPEC.primary_baseline == "nominal"
    nominal = run_task(SPEC, task("dev", 0, 1), settings, tmp_path / "nom", method="nominal")
    assert nominal.verified is False
    reasons = nominal.verification["details"]["reasons"]
    assert any(r.startswith("not robust-feasible") for r in reasons)
    md = accuracy_table([dev.row(), held.row(), nominal.row()])  # the rows results.jsonl holds
    assert "rel_tol=1e-06 abs_tol=1e-06 feas_tol=1e-06" in md.splitlines()[0]
    assert "| dev | autorem | without | offline | 1 | 1 | 1.000 |" in md
    assert "| dev | nominal | - | offline | 1 | 0 | 0.000 |" in md
    assert "measures the checker" in md
    events = (tmp_path / "dev" / "events.jsonl").read_text()
    assert '"kind":"autorem_attempt"' in events.replace(" ", "")


def test_scripted_llm_through_run_task_counts_calls_and_tokens(tmp_path: Path) -> None:
    from autorem_helpers import fenced

    from optiforge.testing import ScriptedLLM

    t = task("dev", 5, 1)
    llm = ScriptedLLM(
        [
            fenced(counterpart_program(t.instance.problem, robust=False)),
            fenced(counterpart_program(t.instance.problem)),
        ],
        model="scripted/a",
    )
    settings = RunSettings(memory="none", model="scripted/a")
    row = run_task(SPEC, t, settings, tmp_path / "r", with_baseline=False, llm=llm)
    assert row.verified is True and row.extra["attempts"] == 2
    assert row.llm_calls == 2 == row.extra["llm_calls"]
    assert row.tokens == row.extra["tokens"] > 0
    assert row.trace == [None, 1.0]
    assert "The verifier rejected" in llm.calls[1][-1]["content"]
    md = accuracy_table([row.row()])
    assert (
        f"| dev | autorem | without | scripted/a | 1 | 1 | 1.000 | 2.0 | {row.tokens:.1f} | 2.00 |"
        in md
    )

"""AutoSaddler: diagnosis, rule and LLM proposals, the gates, the loop, meta use, the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from optiforge.agents.autosaddler import SaddlerConfig, TerminalTarget, build_tuning, measure, tune
from optiforge.agents.autosaddler.diagnosis import diagnose, render
from optiforge.agents.autosaddler.problem import needed, repair_gate, validation_gate
from optiforge.agents.autosaddler.proposers import choose_rules, llm_propose, proposal_prompt
from optiforge.agents.autosaddler.targets import TERMINAL_LIBRARY, TERMINAL_PARTS
from optiforge.agents.autosaddler.testing import scripted_proposer
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.harness import Patch
from optiforge.agents.terminal.problem import base_harness
from optiforge.agents.terminal.testing import simulated_llm
from optiforge.errors import ConfigError
from optiforge.memory import Store
from optiforge.sandboxes import get_sandbox
from optiforge.testing import FunctionLLM

SMALL = {"iterations": 2, "batch": 2, "runs": 1, "val_tasks": 3, "val_runs": 1, "workers": 1}


def _cmd(c: str, rc: int = 0, err: str = "") -> dict[str, Any]:
    return {"kind": "command", "command": c, "returncode": rc, "timed_out": False, "stdout_tail": "",
            "stderr_tail": err, "clipped": False, "reply": c}  # fmt: skip


BAD = {"kind": "invalid", "why": "no JSON", "reply": "```bash\nls\n```"}


def test_diagnosis_names_the_root_cause_not_the_last_error() -> None:
    # format errors wasted the turns: the trace says format, the last error says step limit
    ep = {
        "turns": [BAD, _cmd("ls"), BAD, _cmd("sort a > b"), BAD, _cmd("wc -l b")],
        "stop": "step limit",
    }
    assert diagnose(ep, "trace")["category"] == "format"
    assert diagnose(ep, "last_error")["category"] == "step_limit"
    # a failed command never re-run, then clean commands and a submit: invisible at the end
    ep = {"turns": [_cmd("ls"), _cmd("sed_ -i s/a/b/ f", 127, "sed_: not found"), _cmd("cat f")],
          "stop": "submitted"}  # fmt: skip
    assert diagnose(ep, "trace")["category"] == "unverified_error"
    assert diagnose(ep, "last_error")["category"] == "unknown"
    fixed = {**ep, "turns": [*ep["turns"][:2], _cmd("sed -i s/a/b/ f"), _cmd("cat f")]}
    assert diagnose(fixed, "trace")["category"] == "unknown"
    assert diagnose({**fixed, "summarized": True}, "trace")["category"] == "lost_instruction"
    assert "sed_ -i" in render(ep, "trace") and "sed_" in render(ep, "trace").splitlines()[2]
    assert "Last turn" in render(ep, "last_error") and "sed_" not in render(ep, "last_error")


def test_the_validation_gate_is_a_paired_sign_margin() -> None:
    before = {f"t{i}": i < 6 for i in range(12)}
    assert needed(3, 0, 1.0) == 2 and needed(0, 0, 1.0) == 1 and needed(4, 1, 1.0) == 3
    three = {**before, "t6": True, "t7": True, "t8": True}
    assert validation_gate(before, three, 1.0)["accepted"]
    assert not validation_gate(before, three, 2.0)["accepted"]  # lead 3 < ceil(2 sqrt 3) = 4
    same = dict(before)
    assert not validation_gate(before, same, 0.0)["accepted"]  # a patch must win a pair
    swap = {**before, "t6": True, "t0": False}
    assert not validation_gate(before, swap, 1.0)["accepted"]
    assert (
        repair_gate({"a": False, "b": True})["accepted"]
        and not repair_gate({"a": False})["accepted"]
    )


def test_rules_pick_one_part_for_the_top_cause_or_every_part_at_once() -> None:
    h = base_harness()
    cats = ["unverified_error", "format", "unverified_error"]
    one = choose_rules(cats, h, TERMINAL_LIBRARY, set(), "one_part")
    assert [(p.target, p.value) for p in one] == [("hooks", "verify_before_submit")]
    whole = choose_rules(cats, h, TERMINAL_LIBRARY, set(), "whole")
    assert [p.target for p in whole] == ["hooks", "tool_examples"]
    from optiforge.agents.autosaddler.proposers import patch_key

    nxt = choose_rules(cats, h, TERMINAL_LIBRARY, {patch_key(one[0])}, "one_part")
    assert nxt[0].target == "code_hooks"  # the next rule for the same cause: control logic as code
    after = choose_rules(
        cats, h, TERMINAL_LIBRARY, {patch_key(one[0]), patch_key(nxt[0])}, "one_part"
    )
    assert after[0].target == "system_prompt"  # then prose advice


def test_llm_proposals_are_parsed_into_patches_and_bad_ones_are_refused() -> None:
    h = base_harness()
    failures = [render({"task": "t", "instruction": "x", "turns": [BAD, BAD, _cmd("ls")], "stop": "step limit",
                        "llm_calls": 3}, "trace")]  # fmt: skip
    prompt = proposal_prompt(
        h, TERMINAL_PARTS, {"format": "x"}, failures, [], mode="trace", scope="one_part"
    )
    diag, patches, err = llm_propose(scripted_proposer(), h, prompt, scope="one_part")
    assert diag["category"] == "format" and patches[0].target == "tool_examples" and not err
    seen: list[str] = []

    def bad(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        seen.append(messages[-1]["content"])
        return json.dumps({"root_cause": "r", "category": "format", "evidence": "e",
                           "patch": {"target": "max_steps", "op": "set", "value": 0, "why": "w"}})  # fmt: skip

    _, patches, err = llm_propose(FunctionLLM(bad), h, prompt, scope="one_part")
    assert patches == [] and "invalid harness" in err
    assert (
        "ROOT CAUSE" in seen[0]
        and "--- harness.json ---" in seen[0]
        and "unusable reply" in seen[0]
    )


@pytest.mark.slow
def test_tuning_accepts_only_gated_patches_records_them_and_never_runs_heldout(
    tmp_path: Path,
) -> None:
    sb = get_sandbox("local")
    ran: list[str] = []

    class Spy(TerminalTarget):
        def run(self, harness: Any, task: Any, seed: int) -> dict[str, Any]:
            ran.append(task.split)
            return super().run(harness, task, seed)

    target = Spy(simulated_llm, sb)
    store = Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=None)
    out = tune(target, SaddlerConfig(**SMALL), RunContext(sandbox=sb, memory=store, seed=0))
    hist = out.extra["history"]
    assert len(hist) == 2 and set(ran) == {"dev"}
    assert not set(out.extra["val"]) & {r["task"] for h in hist for r in h["batch"]}
    for r in hist:
        if r["patches"]:
            g = r["gate"]
            assert r["accepted"] == (g["wins"] - g["losses"] >= g["need"])
    tuned = target.load(out.best_candidate)
    n_acc = sum(r["accepted"] for r in hist)
    assert (tuned.version != base_harness().version) == (n_acc > 0)
    lessons = store.experiences(agent="autosaddler")
    assert len(lessons) == sum(len(r["patches"]) for r in hist) > 0
    assert {e.outcome for e in lessons} <= {"accepted", "rejected"}
    store.close()
    m = measure(target, tuned, "heldout", runs=1, workers=1)
    assert m["tasks"] == 10 and 0.0 <= m["pass@1"] <= 1.0 and m["pass^1"] == m["pass@1"]


def test_a_tuning_run_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    sb = get_sandbox("local")
    target = TerminalTarget(simulated_llm, sb)
    cfg = SaddlerConfig(**{**SMALL, "iterations": 1})
    first = tune(target, cfg, RunContext(sandbox=sb, run_dir=tmp_path))
    with pytest.raises(ConfigError):
        tune(target, cfg, RunContext(sandbox=sb, run_dir=tmp_path))  # a fresh start over a run
    again = tune(target, cfg, RunContext(sandbox=sb, run_dir=tmp_path), resume=True)
    assert again.extra["history"] == first.extra["history"]


def test_too_few_dev_tasks_for_validation_is_one_clear_error() -> None:
    target = TerminalTarget(simulated_llm, get_sandbox("local"))
    with pytest.raises(ConfigError, match="cannot give 14 validation tasks"):
        build_tuning(target, SaddlerConfig(val_tasks=14))


def test_the_meta_harness_is_autorems_config_checked_on_every_patch() -> None:
    from optiforge.agents.autosaddler.meta import AutoREMTarget

    target = AutoREMTarget(lambda s: None, get_sandbox("local"))
    h = target.base()
    h2 = h.apply(Patch(target="tools_use", op="append", value="run_python", why="x"))
    assert h2.config().tools.use == ["run_python"] and h2.version != h.version
    assert target.load(h2.files()).values == h2.values
    with pytest.raises(ConfigError):
        h.apply(Patch(target="max_attempts", value=0, why="x"))
    with pytest.raises(ConfigError, match="no part"):
        h.apply(Patch(target="use_memory", value=False, why="x"))
    crash = {
        "reasons": ["candidate program failed: exit code 1: SyntaxError"],
        "stop": "attempts spent",
    }
    assert target.diagnose(crash, "trace")["category"] == "crashed_draft"
    assert target.diagnose({"reasons": ["objective off by 3%"], "stop": "attempts spent"}, "trace")[
        "category"] == "attempts_spent"  # fmt: skip


def test_cli_tune_writes_the_harness_rounds_and_summary(tmp_path: Path) -> None:
    from optiforge.agents.autosaddler.cli import app

    out = tmp_path / "t"
    res = CliRunner().invoke(app, ["tune", "--out", str(out), "--iterations", "1", "--batch", "2", "--runs", "1",
                                   "--val-tasks", "3", "--val-runs", "1", "--measure-runs", "0"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "round 1: batch" in res.output and (out / "harness" / "harness.json").is_file()
    assert (out / "base" / "system_prompt.md").is_file() and (out / "summary.md").is_file()
    assert len((out / "rounds.jsonl").read_text().splitlines()) == 1
    bad = CliRunner().invoke(app, ["tune", "--out", str(tmp_path / "u"), "--scope", "everything"])
    assert bad.exit_code != 0 and "scope" in bad.output


def test_the_cause_gate_keeps_a_patch_that_removes_its_targeted_failures() -> None:
    from optiforge.agents.autosaddler.problem import cause_gate

    before = {f"t#{i}": "step_limit" for i in range(6)} | {"u#0": "format", "u#1": "pass"}
    # every step-limit failure becomes another failure (no pass gained): the cause is gone
    after = {f"t#{i}": "unverified_error" for i in range(6)} | {"u#0": "format", "u#1": "pass"}
    v = cause_gate(before, after, {"step_limit"}, 1.0)
    assert v["accepted"] and (v["fixed"], v["new"]) == (6, 0)
    # a patch aimed at another cause that does not move it is refused
    assert not cause_gate(before, after, {"format"}, 1.0)["accepted"]
    assert not cause_gate(before, before, {"step_limit"}, 1.0)["accepted"]
    assert not cause_gate(before, after, set(), 1.0)["accepted"]

"""SMITH's GRPO hook: the rollout rows, the three reward axes (one sandbox run per
completion), refusing held-out tasks, and a two-step TRL run on a tiny random model."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from optiforge.agents.smith import grpo
from optiforge.agents.smith.templates import TEMPLATES, literals
from optiforge.errors import ConfigError
from optiforge.evals.registry import resolve_task
from optiforge.evals.suites.procedural import ProceduralTask

GCD = TEMPLATES[0]
assert GCD.name == "gcd_of_numbers"


@pytest.fixture(scope="module")
def dev_task() -> Any:
    return resolve_task("procedural/train-families")


def _reply(name: str, parameters: dict[str, Any], code: str) -> str:
    spec = {"name": name, "description": "Greatest common divisor.", "parameters": parameters}
    return f"Here is the tool.\n```json\n{json.dumps(spec)}\n```\n```python\n{code}```\n"


GOOD = _reply(GCD.name, GCD.parameters, GCD.code)
# the schema calls the parameter "values", the function "numbers": the schema axis fails,
# but the harness calls the tool positionally, so it runs and answers right
MISNAMED = _reply(GCD.name, {"type": "object", "properties": {"values": GCD.parameters["properties"]["numbers"]},
                             "required": ["values"]}, GCD.code)  # fmt: skip
WRONG = _reply(GCD.name, GCD.parameters, GCD.code.replace("return g", "return g + 1"))
GARBAGE = "def gcd(: {{ not a tool"


def _gcd_question(task: ProceduralTask) -> tuple[str, str]:
    """(id, question) of a use question of the gcd family (build task b0)."""
    q = next(q for q in task.use_questions if q["id"].startswith("q0_"))
    return q["id"], q["question"]


def _build_kwargs(n: int, episode: int) -> dict[str, list[Any]]:
    return {"kind": ["build"] * n, "episode": [episode] * n, "build_id": ["b0"] * n,
            "question_id": [""] * n}  # fmt: skip


def _axes(funcs: list[Any], completions: list[Any], **kwargs: Any) -> list[tuple[float, ...]]:
    cols = [f([""] * len(completions), completions, **kwargs) for f in funcs]
    return list(zip(*cols, strict=True))


def test_rollout_dataset_mixes_build_and_use_rows(dev_task: Any) -> None:
    rows = grpo.rollout_dataset(dev_task, episodes=2, seed=3)
    ep = dev_task.with_seed(3000)
    assert len(rows) == 2 * (len(ep.build_tasks) + len(ep.use_questions))
    assert {r["episode"] for r in rows} == {3000, 3001}
    assert {r["kind"] for r in rows[:10]} == {"build", "use"}  # shuffled together
    build = next(
        r for r in rows if r["kind"] == "build" and r["episode"] == 3000 and r["build_id"] == "b0"
    )
    assert ep.build_tasks[0]["examples"][0]["question"] in build["prompt"]
    use = next(r for r in rows if r["kind"] == "use")
    assert '"name": "gcd_of_numbers"' in use["prompt"] and use["question_id"]
    assert {k for r in rows for k in r} == {"prompt", "kind", "episode", "build_id", "question_id"}


def test_reward_axes_on_hand_written_completions(
    dev_task: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[str] = []
    validate, score_calls = ProceduralTask.validate, ProceduralTask.score_calls

    def counted_validate(self: ProceduralTask, *a: Any, **kw: Any) -> Any:
        runs.append("validate")
        return validate(self, *a, **kw)

    def counted_score_calls(self: ProceduralTask, *a: Any, **kw: Any) -> Any:
        runs.append("score_calls")
        return score_calls(self, *a, **kw)

    monkeypatch.setattr(ProceduralTask, "validate", counted_validate)
    monkeypatch.setattr(ProceduralTask, "score_calls", counted_score_calls)
    funcs = grpo.reward_funcs(dev_task)
    assert [f.__name__ for f in funcs] == ["schema_reward", "code_reward", "outcome_reward"]

    episode = 7
    build = [GOOD, MISNAMED, WRONG, GARBAGE, GOOD, [{"role": "assistant", "content": GOOD}]]
    got = _axes(funcs, build, **_build_kwargs(len(build), episode))
    assert got[0] == (1.0, 1.0, 1.0)
    assert got[1] == (0.0, 1.0, 1.0)
    assert got[2] == (1.0, 1.0, 0.0)
    assert got[3] == (0.0, 0.0, 0.0)
    assert got[4] == got[5] == got[0]  # a repeat and a chat-format completion: same text
    # three axes, six completions, three distinct parseable ones: three sandbox runs
    assert runs == ["validate"] * 3

    qid, question = _gcd_question(dev_task.with_seed(episode))
    call = json.dumps({"name": GCD.name, "arguments": {"numbers": literals(question)[0]}})
    wrong_tool = json.dumps({"name": "roman_numeral", "arguments": {"number": 12}})
    use = [call, f"The call:\n```json\n{call}\n```", wrong_tool, "no call here"]
    kw = {"kind": ["use"] * 4, "episode": [episode] * 4, "build_id": [""] * 4,
          "question_id": [qid] * 4}  # fmt: skip
    got = _axes(funcs, use, **kw)
    assert got[0] == got[1] == (1.0, 1.0, 1.0)
    assert got[2] == (1.0, 1.0, 0.0)  # a valid call of the wrong tool: it runs, answers wrong
    assert got[3] == (0.0, 0.0, 0.0)
    assert runs.count("score_calls") == 3  # the unparseable reply never reaches the sandbox


def test_training_refuses_a_heldout_task(tmp_path: Path) -> None:
    heldout = resolve_task("procedural/heldout-families")
    with pytest.raises(ConfigError, match="dev tasks only") as err:
        grpo.train(heldout, None, tmp_path / "out", steps=1, episodes=1, seed=0)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_two_grpo_steps_on_a_tiny_model(
    dev_task: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl", reason="GRPO training needs the smith-train extra (trl)")
    import torch
    from transformers import AutoModelForCausalLM

    # A random model never writes a parseable tool or call: every reward is 0, so GRPO's
    # group advantages are 0 and so is the gradient. To see the update happen, every other
    # distinct completion is read as the gcd template (build rows) or a gcd call (use
    # rows), which then really runs in the sandbox: the rewards vary within each group.
    seen: dict[str, int] = {}

    def fake_tool(text: str) -> tuple[dict[str, Any] | None, str]:
        return (GCD.tool(), "") if seen.setdefault(text, len(seen)) % 2 == 0 else (None, "no")

    def fake_call(text: str) -> dict[str, Any] | None:
        if seen.setdefault(text, len(seen)) % 2:
            return None
        return {"name": GCD.name, "arguments": {"numbers": [12, 18]}}

    monkeypatch.setattr(grpo, "parse_tool", fake_tool)
    monkeypatch.setattr(grpo, "parse_call", fake_call)
    steps: list[dict[str, Any]] = []
    out = tmp_path / "run"
    result = grpo.train(dev_task, None, out, steps=2, episodes=1, seed=0, num_generations=4,
                        max_completion_length=32, on_step=steps.append)  # fmt: skip

    assert result["steps"] == 2 and result["sandbox_runs"] >= 2
    logged = grpo.step_entries(result["log"])
    assert len(logged) == 2 and len(steps) == 2
    for entry in logged:
        assert math.isfinite(entry["loss"])
        for key in grpo.LOG_KEYS.values():
            assert 0.0 <= entry[key] <= 1.0, (key, entry[key])
    assert any(e[grpo.LOG_KEYS["schema"]] > 0 for e in logged)
    assert any(e["grad_norm"] > 0 for e in logged)  # the rewards varied: a real gradient
    lines = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2]
    assert all(set(grpo.LOG_KEYS.values()) <= set(x) for x in lines)

    before = AutoModelForCausalLM.from_pretrained(out / grpo.TINY_MODEL_DIR, local_files_only=True)
    after = AutoModelForCausalLM.from_pretrained(out / grpo.MODEL_DIR, local_files_only=True)
    b, a = dict(before.named_parameters()), dict(after.named_parameters())
    assert b.keys() == a.keys()
    assert any(not torch.equal(b[k], a[k]) for k in b), "training changed no parameter"

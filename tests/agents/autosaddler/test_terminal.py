"""The terminal agent: actions, the conversation a harness builds, episodes, the agent run."""

from __future__ import annotations

import json
from pathlib import Path

from optiforge.agents.kit.harness import Patch
from optiforge.agents.terminal.agent import run_episode
from optiforge.agents.terminal.problem import (
    REMINDER_HEAD,
    SUMMARY_HEAD,
    VERIFY_TEXT,
    base_harness,
    messages_for,
    parse_action,
)
from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.evals.suites.saddle import SaddleBenchmark
from optiforge.harness.runner import run_task
from optiforge.sandboxes import get_sandbox
from optiforge.testing import ScriptedLLM


def _task(name: str):  # noqa: ANN202
    return next(t for s in ("dev", "heldout") for t in SaddleBenchmark().tasks(s) if t.name == name)


def _cmd(c: str) -> str:
    return json.dumps({"command": c})


SUBMIT = json.dumps({"submit": True})


def test_actions_are_json_and_code_blocks_only_when_the_harness_says_so() -> None:
    assert parse_action('thinking... {"command": "ls -la"} done') == ({"command": "ls -la"}, "")
    assert parse_action('{"submit": true}')[0] == {"submit": True}
    block = "I will run:\n```bash\n# list\nls -la\nwc -l a.txt\n```"
    assert parse_action(block)[0] is None and "no JSON object" in parse_action(block)[1]
    assert parse_action(block, codeblocks=True)[0] == {"command": "ls -la && wc -l a.txt"}
    assert parse_action("")[1] == "the reply was empty"
    assert (
        parse_action('{"command": ""}')[0] is None and parse_action('{"submit": false}')[0] is None
    )


def test_old_turns_shrink_to_one_line_and_hooks_restate_the_task() -> None:
    h = base_harness().apply(Patch(target="keep_turns", value=2, why="x"))
    turns = [{"kind": "command", "reply": _cmd(f"echo {i}"), "command": f"echo {i}", "returncode": 0,
              "shown": f"exit code: 0\nstdout:\n{i}"} for i in range(5)]  # fmt: skip
    msgs = messages_for(h, "Count the lines.", "", turns)
    assert SUMMARY_HEAD in msgs[1]["content"] and "3. `echo 2` -> exit 0" in msgs[1]["content"]
    assert len(msgs) == 2 + 2 * 2 and REMINDER_HEAD not in msgs[-1]["content"]
    assert "Examples:" not in msgs[0]["content"]
    h2 = h.apply(Patch(target="hooks", op="append", value="reread_instruction", why="x"))
    h2 = h2.apply(Patch(target="tool_examples", op="append", value='{"command": "ls"}', why="x"))
    msgs2 = messages_for(h2, "Count the lines.", "", turns)
    assert msgs2[-1]["content"].endswith(f"{REMINDER_HEAD}\nCount the lines.")
    assert 'Examples:\n- {"command": "ls"}' in msgs2[0]["content"]


def test_the_reference_solution_as_an_episode_passes_the_hidden_test() -> None:
    task, sb = _task("normalize-names"), get_sandbox("local")
    llm = ScriptedLLM([_cmd(c) for c in task.solution()] + [SUBMIT])
    ep = run_episode(task, base_harness(), llm, sb)
    assert ep["stop"] == "submitted" and ep["commands"] == task.solution() and ep["llm_calls"] == 3
    assert task.evaluate({"commands": ep["commands"]}, sb).value == 1.0


def test_limits_retries_and_the_verify_hook_change_the_episode() -> None:
    task, sb = _task("normalize-names"), get_sandbox("local")
    sol = task.solution()
    # no retries: an unusable reply costs a turn; the limit stops the episode
    h = base_harness().apply(Patch(target="max_steps", value=2, why="x"))
    ep = run_episode(task, h, ScriptedLLM(["```bash\nls\n```", _cmd(sol[0])]), sb)
    assert [t["kind"] for t in ep["turns"]] == ["invalid", "command"] and ep["stop"] == "step limit"
    # one retry: the re-ask happens inside the turn
    h1 = h.apply(Patch(target="retries", value=1, why="x"))
    ep = run_episode(task, h1, ScriptedLLM(["no action", _cmd(sol[0]), _cmd(sol[1])]), sb)
    assert [t["kind"] for t in ep["turns"]] == ["command", "command"] and ep["turns"][0][
        "reasks"
    ] == 1
    # verify_before_submit: the first submit is answered with a check request
    hv = base_harness().apply(
        Patch(target="hooks", op="append", value="verify_before_submit", why="x")
    )
    llm = ScriptedLLM([SUBMIT, *(_cmd(c) for c in sol), SUBMIT])
    ep = run_episode(task, hv, llm, sb)
    assert ep["turns"][0]["kind"] == "check" and ep["turns"][0]["shown"] == VERIFY_TEXT
    assert ep["stop"] == "submitted" and ep["commands"] == sol


def test_the_agent_runs_under_the_harness_and_offline_it_fails_honestly(tmp_path: Path) -> None:
    task = resolve_task("saddle/normalize-names")
    llm = ScriptedLLM([_cmd(c) for c in task.solution()] + [SUBMIT])
    s = run_task("terminal", task, RunSettings(model="scripted", memory="none"), tmp_path / "a",
                 llm=llm, with_baseline=False)  # fmt: skip
    assert s.status == "finished" and s.best_score == 1.0
    off = run_task("terminal", task, RunSettings(model="offline", memory="none"), tmp_path / "b",
                   with_baseline=False)  # fmt: skip
    assert off.status == "failed" and "needs an LLM" in off.status_reason


def test_structured_actions_ask_with_a_schema_and_an_unmatched_reply_loses_the_turn() -> None:
    task, sb = _task("normalize-names"), get_sandbox("local")
    h = base_harness().apply(Patch(target="structured_actions", value=True, why="x"))
    sol = task.solution()
    replies = [json.dumps({"command": c, "submit": False}) for c in sol] + [
        json.dumps({"submit": True})
    ]
    llm = ScriptedLLM(replies)
    ep = run_episode(task, h, llm, sb)
    assert ep["stop"] == "submitted" and ep["commands"] == sol
    llm2 = ScriptedLLM(["not json", "still not", "nope"] + replies, max_reasks=2)
    ep2 = run_episode(task, h.apply(Patch(target="max_steps", value=1, why="x")), llm2, sb)
    assert [t["kind"] for t in ep2["turns"]] == ["invalid"] and "action schema" in ep2["turns"][0][
        "why"
    ]
    assert ep2["llm_calls"] == 3

"""Code hooks: new control logic a harness patch carries, checked by an AST allow-list and
run in the sandbox; the terminal agent runs them at their points."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from optiforge.agents.autosaddler.targets import TERMINAL_LIBRARY, VERIFY_FAILED_HOOK
from optiforge.agents.kit.harness import Harness, Patch
from optiforge.agents.kit.harness_hooks import check_hook_source, run_code_hook
from optiforge.agents.terminal.agent import run_episode
from optiforge.agents.terminal.problem import base_harness
from optiforge.errors import ConfigError
from optiforge.evals.suites.saddle import SaddleBenchmark
from optiforge.sandboxes import get_sandbox
from optiforge.testing import ScriptedLLM

SB = get_sandbox("local")
NOTE_HOOK = "def hook(obs):\n    return f\"step {obs['step']} of {obs['max_steps']}\""


def _install(h: Harness, name: str, point: str, source: str) -> Harness:
    return h.apply(Patch(target="code_hooks", op="append",
                         value={"name": name, "point": point, "source": source}, why="x"))  # fmt: skip


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("import os\ndef hook(obs):\n    return None", "exactly one top-level"),
        ("def hook(obs):\n    import os\n    return None", "Import"),
        ("def hook(obs):\n    return open('/etc/passwd')", "'open'"),
        ("def hook(obs):\n    return obs.__class__", ".__class__"),
        ("def hook(obs):\n    return ().__class__.__bases__", "may not use .__"),
        ("def hook(obs):\n    while True:\n        pass", "While"),
        ("def hook(obs):\n    return 'a' * 10**9", "Mult"),
        ("def hook(obs):\n    g = obs.get\n    return g('x')", "only call .get"),
        ("def hook(obs):\n    return getattr(obs, 'x')", "'getattr'"),
        ("def hook(obs):\n    return (lambda: 1)()", "Lambda"),
        (
            "def hook(obs):\n    try:\n        return 1\n    except Exception:\n        return 2",
            "Try",
        ),
        ("def hook(obs):\n    len = 3\n    return None", "rebind 'len'"),
        ("def hook(obs, x):\n    return None", "signature"),
        ("def hook(obs):\n    return f'{obs:>99999999}'", "format spec"),
        ("def hook(obs):\n    return eval('1')", "'eval'"),
    ],
)
def test_the_allow_list_refuses_anything_but_the_hook_grammar(source: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace(".", r"\.")):
        check_hook_source(source)
    with pytest.raises(ConfigError):  # a patch carrying it is refused before any gate runs it
        _install(base_harness(), "bad", "before_submit", source)


def test_a_code_hook_is_a_file_in_the_harness_and_its_diff(tmp_path: Path) -> None:
    base = base_harness()
    h = _install(base, "verify_failed_commands", "before_submit", VERIFY_FAILED_HOOK)
    assert "code_hooks/verify_failed_commands.py" in h.files() and h.version != base.version
    assert Harness.load(h.save(tmp_path / "h")) == h and Harness.from_files(h.files()) == h
    d = base.diff(h)
    assert "+++ b/code_hooks/verify_failed_commands.py" in d and "+def hook(obs):" in d
    assert h.apply(Patch(target="code_hooks", op="remove", value="verify_failed_commands",
                         why="x")) == base  # fmt: skip
    with pytest.raises(ConfigError, match="unique"):
        _install(h, "verify_failed_commands", "before_action", NOTE_HOOK)
    with pytest.raises(ConfigError):
        _install(base, "x", "on_anything", NOTE_HOOK)


def test_hooks_run_in_the_sandbox_and_a_crash_is_a_noop() -> None:
    obs = {"submits": 1, "turns": [
        {"kind": "command", "command": "sed_ -i s/a/b/ f", "returncode": 127, "timed_out": False},
        {"kind": "command", "command": "ls", "returncode": 0, "timed_out": False}]}  # fmt: skip
    note, err = run_code_hook(VERIFY_FAILED_HOOK, obs, SB)
    assert err is None and note is not None and "`sed_ -i s/a/b/ f`" in note
    fixed = {**obs, "turns": [*obs["turns"], {"kind": "command", "command": "sed -i s/a/b/ f",
                                              "returncode": 0, "timed_out": False}]}  # fmt: skip
    assert run_code_hook(VERIFY_FAILED_HOOK, fixed, SB) == (None, None)
    assert run_code_hook("def hook(obs):\n    return 1 // 0", obs, SB)[1].startswith(
        "ZeroDivisionError"
    )
    # the runner cuts the builtins even for a source that skipped the parent's check
    assert "NameError" in str(run_code_hook("def hook(obs):\n    return open", obs, SB)[1])
    assert "not a str" in str(run_code_hook("def hook(obs):\n    return 3", obs, SB)[1])


def _task(name: str):  # noqa: ANN202
    return next(t for t in SaddleBenchmark().tasks("dev") if t.name == name)


def test_the_terminal_agent_runs_hooks_at_their_points() -> None:
    task = _task("normalize-names")
    sol = task.solution()
    typo = "catt names.txt"  # fails (exit 127); `cat names.txt` re-runs it fixed
    h = _install(base_harness(), "verify_failed_commands", "before_submit", VERIFY_FAILED_HOOK)
    h = _install(h, "where", "before_action", NOTE_HOOK)
    h = _install(h, "flag", "after_observation",
                 "def hook(obs):\n    t = obs['turns'][-1]\n    if t['returncode'] != 0:\n"
                 "        return 'that failed'\n    return None")  # fmt: skip
    replies = [json.dumps({"command": typo}), json.dumps({"submit": True}),
               json.dumps({"command": "cat names.txt"}),
               *(json.dumps({"command": c}) for c in sol), json.dumps({"submit": True})]  # fmt: skip
    llm = ScriptedLLM(replies)
    ep = run_episode(task, h, llm, SB)
    kinds = [t["kind"] for t in ep["turns"]]
    assert kinds[:2] == ["command", "check"] and ep["stop"] == "submitted", kinds
    assert f"`{typo}`" in ep["turns"][1]["shown"] and ep["turns"][1].get("hook")
    assert "Harness note:\nthat failed" in ep["turns"][0]["shown"]
    assert "step 0 of 6" in str(llm.calls[0][-1]["content"])
    assert ep["hook_errors"] == []
    assert task.evaluate({"commands": ep["commands"]}, SB).value == 1.0


def test_the_rule_library_writes_a_code_hook_after_the_switch() -> None:
    makers = TERMINAL_LIBRARY["unverified_error"]
    h = base_harness()
    first = makers[0](h)
    assert first is not None and first.target == "hooks"
    code = makers[1](h)
    assert code is not None and code.target == "code_hooks" and code.op == "append"
    assert code.value["point"] == "before_submit" and code.value["source"] == VERIFY_FAILED_HOOK
    h2 = h.apply(code)
    assert makers[1](h2) is None  # installed once


def test_an_llm_proposal_can_carry_a_code_hook_and_a_bad_one_is_refused() -> None:
    from optiforge.agents.autosaddler import diagnosis
    from optiforge.agents.autosaddler.proposers import llm_propose, proposal_prompt
    from optiforge.agents.autosaddler.targets import TERMINAL_PARTS
    from optiforge.agents.autosaddler.testing import scripted_proposer
    from optiforge.testing import FunctionLLM

    h = base_harness().apply(Patch(target="hooks", op="append", value="verify_before_submit",
                                   why="x"))  # fmt: skip
    ep = {"task": "t", "instruction": "x", "stop": "submitted", "llm_calls": 2, "turns": [
        {"kind": "command", "command": "sed_ x", "returncode": 127, "timed_out": False,
         "stdout_tail": "", "stderr_tail": "not found"}]}  # fmt: skip
    prompt = proposal_prompt(h, TERMINAL_PARTS, diagnosis.CATEGORIES, [diagnosis.render(ep)], [],
                             mode="trace", scope="one_part")  # fmt: skip
    assert "code_hooks (list" in prompt and "def hook(obs):" in prompt
    _, patches, err = llm_propose(scripted_proposer(), h, prompt, scope="one_part")
    assert err == "" and [(p.target, p.op) for p in patches] == [("code_hooks", "append")]
    assert h.apply(patches[0]).code_hooks[0].source == VERIFY_FAILED_HOOK

    def evil(messages: Any, tools: Any, schema: Any) -> str:
        return json.dumps({"root_cause": "r", "category": "unknown", "evidence": "e", "patch": {
            "target": "code_hooks", "op": "append", "why": "w", "value": {
                "name": "x", "point": "before_action",
                "source": "def hook(obs):\n    return open('/etc/shadow').read()"}}})  # fmt: skip

    _, patches, err = llm_propose(FunctionLLM(evil), h, prompt, scope="one_part")
    assert patches == [] and "may not use" in err

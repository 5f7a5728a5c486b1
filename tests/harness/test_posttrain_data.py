"""Post-training data (issue 41, part B): rows carry the agents' exact ``--model local``
requests, ``verify_reply`` separates valid from invalid replies per format, dedup, and no
held-out task's prompt or answer reaches the training rows (with the negative cases that
show the leakage check fails when one does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from optiforge.errors import ConfigError
from optiforge.harness.posttrain import Verdict, dedup, read_rows, verify_reply
from optiforge.harness.posttrain.data import make_row, near_key

CASSETTES = Path(__file__).resolve().parents[2] / "benchmarks" / "cassettes" / "local"
OK = Verdict(valid=True, score=1.0)


def _row(reply: str, user: str = "u", task: str = "funcfit/quadratic", agent: str = "evolve"):
    return make_row(
        agent, "code", task, [{"role": "user", "content": user}], reply, "test", OK, "mse"
    )


# ---------------------------------------------------------------------------- dedup


def test_dedup_drops_exact_and_caps_near_duplicate_replies() -> None:
    a = _row("```python\ndef f(x):\n    return 1.2345 * x\n```", user="p1")
    same = _row("```python\ndef f(x):\n    return 1.2345 * x\n```", user="p1")
    near = [
        _row(f"```python\ndef f(x):\n    return  1.23{i}9 * x\n```", user=f"p{i + 2}")
        for i in range(4)
    ]
    other = _row("```python\ndef f(x):\n    return np.sin(x)\n```", user="p9")
    assert a.id == same.id and near_key(a) == near_key(near[0]) != near_key(other)
    kept, dropped = dedup([a, same, *near, other], max_per_reply=3)
    assert dropped == {"exact": 1, "near": 2}
    assert [r.id for r in kept] == [a.id, near[0].id, near[1].id, other.id]
    # another task's identical reply is no near duplicate (it answers another problem)
    kept, dropped = dedup([a, _row(a.reply, user="p1 sine", task="funcfit/sine")], max_per_reply=1)
    assert len(kept) == 2 and dropped == {"exact": 0, "near": 0}


def test_make_row_refuses_an_invalid_reply() -> None:
    with pytest.raises(ValueError, match="invalid reply"):
        make_row("evolve", "code", "funcfit/quadratic", [], "x", "t", Verdict(valid=False), "mse")


def test_unknown_agent_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="no post-training data source for agent 'nope'"):
        verify_reply("nope", "funcfit/quadratic", [], "x")


# ---------------------------------------------------------------------------- prompts


def _cassette(agent: str) -> list[dict]:
    return [json.loads(line) for line in (CASSETTES / f"{agent}.jsonl").read_text().splitlines()]


def test_evolve_prompt_is_the_request_the_local_model_got() -> None:
    """The cassette of a real ``--model local`` eval holds round 1's requests: ours match."""
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.posttrain import evolve

    t = resolve_task("funcfit/quadratic")
    pop = [evolve._evaluated(0, evolve.SEED_CODE, 46.7268, 0)]
    # the cassette shows the seed's score to 6 digits, which is what the prompt prints
    ours = evolve.prompts(t, pop, 1)
    recorded = [c["messages"] for c in _cassette("evolve") if "(round 1)" in c["messages"][-1]["content"]
                and "[-2.0, 2.0]" in c["messages"][-1]["content"]]  # fmt: skip
    assert len(ours) == 4 and all(any(o == [dict(m) for m in r] for r in recorded) for o in ours)


def test_autorem_prompt_is_the_request_the_local_model_got() -> None:
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.posttrain import autorem

    t = resolve_task("autoro/autoro-dev-d1-0000-s0")
    recorded = [c["messages"] for c in _cassette("autorem") if len(c["messages"]) == 2]
    assert autorem.code_request(t) in [[dict(m) for m in r] for r in recorded]


def test_model_request_is_what_model_with_llm_sends() -> None:
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.posttrain import autorem

    st = autorem.text_task(resolve_task("autoro/autoro-dev-d2-0001-s0"))
    assert autorem._check_model_request(st.statement) == autorem.model_request(st.statement)


# ---------------------------------------------------------------------------- verify_reply


def test_verify_reply_evolve_code() -> None:
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.posttrain import evolve

    msgs = evolve.prompts(
        resolve_task("funcfit/quadratic"), [evolve._evaluated(0, evolve.SEED_CODE, 46.7268, 0)], 1
    )[0]
    good = verify_reply(
        "evolve", "funcfit/quadratic", msgs, "```python\ndef f(x):\n    return 3*x**2 - 2*x\n```"
    )
    assert good.valid and good.score == pytest.approx(1.0) and "beats" in good.detail
    for bad in ("```python\ndef f(x) return x\n```", "```python\ndef g(x):\n    return x\n```",
                "```python\ndef f(x):\n    return x[:3]\n```"):  # fmt: skip
        v = verify_reply("evolve", "funcfit/quadratic", msgs, bad)
        assert not v.valid and v.score is None, bad


@pytest.fixture(scope="module")
def smith_episode():
    from optiforge.harness.posttrain import smith
    from optiforge.sandboxes import get_sandbox

    t = smith.episode("procedural/train-families#3")
    pool = smith.episode_pool(t, get_sandbox("local"))
    return t, pool


def test_verify_reply_smith_build_formats(smith_episode) -> None:
    from optiforge.agents.smith.proposers import build_prompt
    from optiforge.harness.posttrain import smith

    t, pool = smith_episode
    tool = {k: pool[0][k] for k in ("name", "description", "parameters", "code")}
    tr = smith.tool_reply(tool)
    msgs = smith.build_messages(t.build_tasks[0]["examples"], tr)
    task = "procedural/train-families#3"
    assert verify_reply("smith", task, msgs, json.dumps(tr.model_dump(exclude_none=True))).valid
    wrong = tr.model_copy(update={"code": tr.code.replace("return g", "return g + 1")})
    v = verify_reply("smith", task, msgs, wrong.model_dump_json())
    assert not v.valid and v.score is not None and v.score < 1.0
    # another family's tool for this build task: valid JSON, wrong answers
    other = smith.tool_reply({k: pool[1][k] for k in ("name", "description", "parameters", "code")})
    assert not verify_reply("smith", task, msgs, other.model_dump_json()).valid
    gmsgs = [{"role": "user", "content": build_prompt(t.build_tasks[0]["examples"])}]
    assert verify_reply("smith", task, gmsgs, smith.blocks_reply(tool)).valid
    assert not verify_reply("smith", task, gmsgs, "```python\nprint(1)\n```").valid


def test_verify_reply_smith_call_json(smith_episode) -> None:
    from optiforge.agents.smith.proposers import offline_call
    from optiforge.harness.posttrain import smith

    t, pool = smith_episode
    specs = [{k: p[k] for k in ("name", "description", "parameters", "code")} for p in pool]
    # a question whose call has an integer argument (the wrong reply changes it)
    q, call = next((q, c) for q in t.use_questions if (c := offline_call(q["question"], specs))
                   and any(type(v) is int for v in c["arguments"].values()))  # fmt: skip
    msgs = smith.call_messages(q["question"], specs, call)
    task = "procedural/train-families#3"
    good = verify_reply("smith", task, msgs, json.dumps(call))
    assert good.valid and good.score == 1.0
    args = {k: (3 * v + 7 if type(v) is int else v) for k, v in call["arguments"].items()}
    assert not verify_reply(
        "smith", task, msgs, json.dumps({"name": call["name"], "arguments": args})
    ).valid
    assert not verify_reply("smith", task, msgs, "I would call the tool").valid


@pytest.mark.slow
def test_verify_reply_autorem_formats() -> None:
    from optiforge.agents.autorem.modeller import reference_modeller
    from optiforge.agents.autorem.proposers import counterpart_program
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.posttrain import autorem

    name = "autoro/autoro-dev-d1-0000-s0"
    t = resolve_task(name)
    msgs = autorem.code_request(t)
    assert verify_reply(
        "autorem", name, msgs, autorem.code_reply(counterpart_program(t.instance.problem))
    ).valid
    nominal = autorem.code_reply(counterpart_program(t.instance.problem, robust=False))
    assert not verify_reply("autorem", name, msgs, nominal).valid
    st = autorem.text_task(t)
    model = reference_modeller(st.statement)
    mmsgs = autorem.model_request(st.statement)
    good = json.dumps(model.model_dump(mode="json", exclude_none=True))
    assert verify_reply("autorem", name + "#text", mmsgs, good).valid
    wrong = json.loads(good)
    wrong["upper"][0] = wrong["upper"][0] + 1.0  # a misread bound: schema-valid, wrong model
    v = verify_reply("autorem", name + "#text", mmsgs, json.dumps(wrong))
    assert not v.valid and v.score == 0.0
    cmsgs = autorem.code_request(st, model)
    assert verify_reply(
        "autorem", name + "#text", cmsgs, autorem.code_reply(counterpart_program(model))
    ).valid
    assert not verify_reply("autorem", name + "#text", cmsgs, "```python\nprint('{}')\n```").valid


# ---------------------------------------------------------------------------- leakage


@pytest.fixture(scope="module")
def small_rows():
    """Rows of every source at a test's size (the same builders as the full data)."""
    from optiforge.harness.posttrain import evolve
    from optiforge.harness.posttrain.data import agent_rows

    keep, evolve.ROUNDS, evolve.SEARCHES = (evolve.ROUNDS, evolve.SEARCHES), 2, 1
    try:
        rows = [
            *agent_rows("evolve", limit=1),
            *agent_rows("smith", limit=1),
            *agent_rows("terminal", limit=2),
            *agent_rows("autorem", limit=1),
        ]
    finally:
        evolve.ROUNDS, evolve.SEARCHES = keep
    return rows


@pytest.fixture(scope="module")
def heldout():
    from optiforge.harness.posttrain import heldout_texts

    return {a: heldout_texts(a) for a in ("evolve", "smith", "autorem", "terminal")}


@pytest.mark.slow
def test_rows_are_dev_only_and_leak_nothing(small_rows, heldout) -> None:
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.posttrain.leakage import find_leaks

    assert {r.agent for r in small_rows} == {"evolve", "smith", "autorem", "terminal"}
    for r in small_rows:
        assert r.split == "dev" and r.verified.valid
        assert resolve_task(r.task.split("#")[0]).split == "dev"
    assert find_leaks(small_rows, heldout) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "how", ["heldout-prompt", "answer-in-reply", "reformatted-question", "problem-json"]
)
def test_leak_check_catches_an_injected_heldout_row(small_rows, heldout, how) -> None:
    """The negative case: one held-out row (or its answer, or a near copy of its data)
    slipped into the rows is found."""
    from optiforge.harness.posttrain.leakage import find_leaks

    if how == "heldout-prompt":
        item = heldout["smith"][0]
        bad = make_row(
            "smith",
            "build-json",
            "procedural/train-families#0",
            item["prompts"][0],
            "{}",
            "t",
            OK,
            "x",
        )
    elif how == "answer-in-reply":
        item = heldout["evolve"][0]  # the held-out target as a dev row's program
        bad = make_row("evolve", "code", "funcfit/quadratic", small_rows[0].prompt,
                       f"```python\ndef f(x):\n    return {item['answers'][0]}\n```", "t", OK, "mse")  # fmt: skip
    elif how == "reformatted-question":
        item = heldout["smith"][1]
        q = item["distinctive"][0]
        user = "Q:  " + "  ".join(q.split()) + "\nA: ?"  # spacing changed, embedded
        bad = make_row("smith", "call-json", "procedural/train-families#0", [{"role": "user", "content": user}],
                       "{}", "t", OK, "x")  # fmt: skip
    elif how == "shell-solution":
        item = next(i for i in heldout["terminal"] if i["answers"])  # a held-out reference command
        bad = make_row("terminal", "action-json", "saddle/normalize-names", small_rows[-1].prompt,
                       json.dumps({"command": item["answers"][0]}), "t", OK, "x")  # fmt: skip
    else:
        item = next(i for i in heldout["autorem"] if "heldout" in i["task"])
        bad = make_row("autorem", "text-model-json", "autoro/autoro-dev-d1-0000-s0#text", small_rows[-1].prompt,
                       item["answers"][1], "t", OK, "x")  # fmt: skip
    leaks = find_leaks([*small_rows, bad], heldout)
    assert leaks and {lk.row_id for lk in leaks} == {bad.id}
    assert any(lk.heldout_task == item["task"] for lk in leaks)


@pytest.mark.skipif(
    not os.environ.get("POSTTRAIN_DATA"), reason="set POSTTRAIN_DATA=DIR to check a written dataset"
)
def test_written_dataset_leaks_nothing() -> None:
    from optiforge.harness.posttrain.leakage import find_leaks

    folder = Path(os.environ["POSTTRAIN_DATA"])
    rows = read_rows(folder / "train.jsonl")
    if (folder / "too_long.jsonl").is_file():  # set aside for length, still training data
        rows += read_rows(folder / "too_long.jsonl")
    assert rows and all(r.split == "dev" for r in rows)
    assert find_leaks(rows) == []


def test_verify_reply_terminal_actions() -> None:
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.posttrain import terminal
    from optiforge.sandboxes import get_sandbox

    name = "saddle/normalize-names"
    t = resolve_task(name)
    sol = t.solution()
    actions = [{"command": c} for c in sol] + [{"submit": True}]
    requests, ep = terminal.episode_requests(t, actions, get_sandbox("local"))
    assert ep["stop"] == "submitted" and len(requests) == len(actions)
    first, last = requests[0], requests[-1]
    assert verify_reply("terminal", name, first, terminal.action_text(actions[0])).valid
    # a premature submit, a failing command, a command that wrecks the inputs, no action
    assert not verify_reply("terminal", name, first, '{"submit": true}').valid
    assert not verify_reply("terminal", name, first, '{"command": "false"}').valid
    assert not verify_reply("terminal", name, first, '{"command": "rm -f *"}').valid
    assert not verify_reply("terminal", name, first, "I will look at the files.").valid
    assert verify_reply("terminal", name, last, '{"submit": true}').valid


@pytest.mark.slow
def test_verify_reply_kernel_code() -> None:
    from optiforge.harness.posttrain import kd

    name = "hdbo/levy4_in_25"
    msgs = kd.prompt("RBF")
    src = kd.kernel_source("RBF")
    good = verify_reply("kernel-discovery", name, msgs, f"```python\n{src}```")
    assert good.valid and good.score is not None and good.score > 0
    not_psd = src.replace("torch.exp(-0.5 *", "torch.exp(0.5 *")
    v = verify_reply("kernel-discovery", name, msgs, f"```python\n{not_psd}```")
    assert not v.valid and "PSD" in v.detail
    assert not verify_reply("kernel-discovery", name, msgs, "k(x, y) = exp(-|x-y|^2)").valid


def test_kernel_code_equals_the_library_kernel() -> None:
    """The code written for every form computes the library kernel's Gram matrix; a wrong
    formula does not (the check is no formality)."""
    from optiforge.harness.posttrain import kd

    forms = kd.expressions()
    assert len(forms) >= kd.FORMS and all(
        kd._same_gram(kd.kernel_source(e), e, 3) for e in forms[:30]
    )
    wrong = kd.kernel_source("Matern52").replace("5.0 / 3.0", "4.0 / 3.0")
    assert not kd._same_gram(wrong, "Matern52", 3)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "OMP_NUM_THREADS": "1",
    }
    return subprocess.run([sys.executable, "-m", "optiforge.cli", *args], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip


def test_cli_unknown_agent_is_one_line() -> None:
    res = _cli("posttrain", "data", "--out", "/nonexistent/x", "--agents", "evolve,nope")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "error: ConfigError: --agents: no data source for nope (sources: evolve, smith, autorem, terminal, "
        "kernel-discovery, hawkeye)"
    ]


@pytest.mark.slow
def test_cli_writes_rows_and_summary(tmp_path: Path) -> None:
    out = tmp_path / "data"
    res = _cli(
        "posttrain", "data", "--out", str(out), "--agents", "terminal,hawkeye", "--limit", "1"
    )
    assert res.returncode == 0, res.stderr
    assert "terminal: 4 rows" in res.stdout and "hawkeye: not built" in res.stdout
    rows = read_rows(out / "train.jsonl")
    summary = json.loads((out / "summary.json").read_text())
    assert len(rows) == summary["rows"] == summary["per_agent_format"]["terminal/action-json"] == 4
    assert "hawkeye" in summary["agents_failed"] and (out / "too_long.jsonl").is_file()
    for r in rows:  # contract 2
        raw = json.loads(r.model_dump_json())
        assert set(raw) == {
            "id",
            "agent",
            "format",
            "task",
            "split",
            "messages",
            "source",
            "verified",
        }
        assert raw["messages"][-1]["role"] == "assistant" and raw["split"] == "dev"
        from optiforge.harness.posttrain.data import messages_id

        assert raw["id"] == messages_id(raw["messages"])
    if summary["tokens"] is not None:
        assert summary["tokens"]["terminal/action-json"]["max"] <= 768

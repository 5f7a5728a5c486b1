"""The procedural suite's reward axes, each failing alone, and the harness's re-measurement."""

from __future__ import annotations

import json
from typing import Any

import pytest

from optiforge.evals.registry import get_benchmark, resolve_task
from optiforge.evals.suites.procedural import rewards
from optiforge.evals.suites.procedural.rewards import schema_check

GCD = {
    "name": "gcd_list",
    "description": "greatest common divisor of numbers",
    "parameters": {
        "type": "object",
        "properties": {"numbers": {"type": "array", "items": {"type": "integer"}}},
        "required": ["numbers"],
    },  # fmt: skip
    "code": "import math\n\ndef gcd_list(numbers):\n    g = 0\n    for x in numbers:\n        g = math.gcd(g, x)\n    return g\n",
}


# CPU-bound work past a soft limit lowered to 0.05 s (the code axis counts CPU seconds of
# the call, measured outside the tool; sleeping costs none)
_SPIN = "    import time\n    _t = time.process_time()\n    while time.process_time() - _t < 0.15:\n        pass\n"


@pytest.fixture
def low_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Soft limit 0.05 s and hard limit 0.3 s of CPU: slow and endless tools test fast."""
    monkeypatch.setattr(rewards, "SOFT_S", 0.05)
    monkeypatch.setattr(rewards, "HARD_S", 0.3)


def _axes(check: dict[str, Any]) -> tuple[float, float, float]:
    return check["schema"], check["code"], check["outcome"]


@pytest.fixture(scope="module")
def task() -> Any:
    return resolve_task("procedural/train-families")


def test_a_correct_tool_passes_all_three_axes(task: Any) -> None:
    check = task.validate("b0", GCD)
    assert _axes(check) == (1.0, 1.0, 1.0) and check["passed"]


def test_only_the_schema_axis_fails(task: Any) -> None:
    """The schema names a property the function does not take; the code (called
    positionally) runs and answers right."""
    bad = {**GCD, "parameters": {"type": "object", "properties": {"values": GCD["parameters"]["properties"]["numbers"]},
                                 "required": ["values"]}}  # fmt: skip
    check = task.validate("b0", bad)
    assert _axes(check) == (0.0, 1.0, 1.0) and not check["passed"]
    assert "does not match the schema" in check["schema_error"]
    invalid = {
        **GCD,
        "parameters": {"type": "object", "properties": {"numbers": {"type": "lists"}}},
    }
    assert not schema_check(invalid)[0] and "not valid JSON Schema" in schema_check(invalid)[1]


@pytest.mark.usefixtures("low_limits")
def test_only_the_code_axis_fails(task: Any) -> None:
    """Right answers, but the tool blows a soft limit (slow, or chatty): code fails,
    outcome still passes."""
    slow = {**GCD, "code": GCD["code"].replace("    return g\n", f"{_SPIN}    return g\n")}
    chatty = {
        **GCD,
        "code": GCD["code"].replace("    return g\n", "    print('x' * 10000)\n    return g\n"),
    }
    for tool in (slow, chatty):
        check = task.validate("b0", tool)
        assert check["schema"] == 1.0 and check["code"] == 0.0 and check["outcome"] == 1.0
        assert "over the soft limits" in check["limits"]
    sleepy = {
        **GCD,
        "code": GCD["code"].replace(
            "    return g\n", "    import time\n    time.sleep(0.1)\n    return g\n"
        ),
    }
    assert task.validate("b0", sleepy)["code"] == 1.0  # waiting is not computing
    assert "soft limits" in check["limits"]


def test_only_the_outcome_axis_fails(task: Any) -> None:
    """Runs cleanly, valid schema, but the answer is a string: the strict verifier gives no
    substring credit."""
    wrong = {**GCD, "code": GCD["code"].replace("return g", "return str(g)")}
    check = task.validate("b0", wrong)
    assert _axes(check) == (1.0, 1.0, 0.0)
    assert check["first_failure"]["got"] == str(check["first_failure"]["expected"])


@pytest.mark.usefixtures("low_limits")
def test_a_crashing_tool_fails_code_and_outcome_and_an_endless_one_is_cut(task: Any) -> None:
    crash = {**GCD, "code": "def gcd_list(numbers):\n    return 1 // 0\n"}
    assert _axes(task.validate("b0", crash)) == (1.0, 0.0, 0.0)
    loop = {**GCD, "code": "def gcd_list(numbers):\n    while True:\n        pass\n"}
    check = task.validate("b0", loop)
    assert _axes(check) == (1.0, 0.0, 0.0) and "timed out" in check["first_failure"]["error"]


def _calls(task: Any, name: str, fam: int, args: Any) -> dict[str, list[dict[str, Any]]]:
    return {
        q["id"]: [{"name": name, "arguments": args(q)}] for q in task._use if q["family"] == fam
    }


def _numbers(q: dict[str, Any]) -> dict[str, Any]:
    text = q["question"]
    return {"numbers": json.loads(text[text.index("[") : text.index("]") + 1])}


@pytest.mark.usefixtures("low_limits")
def test_use_axes_are_measured_separately(task: Any) -> None:
    pool = [{**GCD, "build": "b0"}]
    qid = next(q["id"] for q in task._use if q["family"] == 0)
    q = next(q for q in task._use if q["id"] == qid)
    good = task.score_calls({qid: {"name": "gcd_list", "arguments": _numbers(q)}}, pool)[qid]
    assert good == {"schema": 1.0, "code": 1.0, "outcome": 1.0}
    # only schema: an argument the schema forbids (maxItems), the function still answers
    strict = [{**GCD, "parameters": {**GCD["parameters"], "properties": {"numbers": {
        **GCD["parameters"]["properties"]["numbers"], "maxItems": 1}}}}]  # fmt: skip
    assert task.score_calls({qid: {"name": "gcd_list", "arguments": _numbers(q)}}, strict)[qid] == {
        "schema": 0.0, "code": 1.0, "outcome": 1.0}  # fmt: skip
    # only outcome: valid call, wrong values
    wrong = task.score_calls({qid: {"name": "gcd_list", "arguments": {"numbers": [7, 14]}}}, pool)[
        qid
    ]
    assert wrong == {"schema": 1.0, "code": 1.0, "outcome": 0.0}
    # only code: the pooled tool is slow but right
    slow = [{**GCD, "code": GCD["code"].replace("    return g\n", f"{_SPIN}    return g\n")}]
    assert task.score_calls({qid: {"name": "gcd_list", "arguments": _numbers(q)}}, slow)[qid] == {
        "schema": 1.0, "code": 0.0, "outcome": 1.0}  # fmt: skip
    # no such tool: nothing runs
    assert task.score_calls({qid: {"name": "nope", "arguments": {}}}, pool)[qid] == {
        "schema": 0.0, "code": 0.0, "outcome": 0.0}  # fmt: skip


def test_the_harness_re_measures_tools_and_calls(task: Any) -> None:
    cand = {"tools": [{**GCD, "build": "b0"}], "calls": _calls(task, "gcd_list", 0, _numbers)}
    score = task.evaluate(cand)
    assert score.passed and score.value == pytest.approx(1 / 9)  # one family of nine
    m = score.metrics
    assert m["build_pass_rate"] == pytest.approx(1 / 9) and m["pool_size"] == 1
    assert m["reuse_rate"] == pytest.approx(4 / 36) and m["use_outcome"] == pytest.approx(4 / 36)
    assert score.details["families"]["gcd_of_list"] == {"accuracy": 1.0, "built": True}
    # a claimed answer without a tool is checked strictly: the expected int as a string fails
    direct = {"tools": [], "calls": {q["id"]: [{"answer": "6"}] for q in task._use}}
    assert task.evaluate(direct).value == 0.0
    assert not task.evaluate("not json").passed


def test_splits_keep_heldout_families_out_of_dev() -> None:
    bench = get_benchmark("procedural")
    dev = {f for t in bench.tasks("dev") for f in t.family_names}
    held = {f for t in bench.tasks("heldout") for f in t.family_names}
    assert len(dev) == 9 and len(held) == 6 and not dev & held
    with pytest.raises(Exception, match="no split"):
        bench.tasks("test")


def test_use_questions_and_descriptions_hold_no_answers(task: Any) -> None:
    assert all(set(q) == {"id", "question"} for q in task.use_questions)
    shown = {q["id"]: q["question"] for q in task.use_questions}
    for q in task._use:
        if isinstance(q["answer"], str) and len(q["answer"]) >= 3:
            assert q["answer"] not in shown[q["id"]] and q["answer"] not in task.description

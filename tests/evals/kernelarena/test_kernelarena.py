"""KernelArena: task table, anti-cheat harness (red-team fixtures), metrics."""

from __future__ import annotations

import math

import kernelarena_fixtures as fx
import pytest
import torch

from optiforge.errors import ConfigError, InvalidCandidate
from optiforge.evals.suites.kernelarena import (
    KernelArenaBenchmark,
    KernelTask,
    aggregate,
    clipped_geomean_speedup,
    fast_p,
)
from optiforge.evals.suites.kernelarena.static_checks import check_candidate_source
from optiforge.evals.suites.kernelarena.templates import TEMPLATES, read_params, render


def _task(name: str, split: str = "dev") -> KernelTask:
    return next(t for t in KernelArenaBenchmark().tasks(split) if t.name == name)


def test_suite_has_24_plus_tasks_in_two_families_with_unseen_heldout_shapes() -> None:
    dev, held = KernelArenaBenchmark().tasks("dev"), KernelArenaBenchmark().tasks("heldout")
    assert len(dev) >= 24 and [t.name for t in dev] == [t.name for t in held]
    fams = {t.family for t in dev}
    assert fams == {"triton2triton", "torch2triton"}
    for d, h in zip(dev, held, strict=True):
        dev_shapes = {repr(c.shape) for c in d.cases}
        assert not dev_shapes & {repr(c.shape) for c in h.cases}, d.name
        dims = [v for c in h.cases for k, v in c.shape.items() if k in ("M", "N", "K")]
        assert any(v & (v - 1) for v in dims), f"{d.name}: no non-power-of-two held-out dim"
        assert any(c.shape.get("layout") in ("strided", "transposed") for c in h.cases), d.name
        assert all(len(c.seeds) >= 2 for c in d.cases + h.cases)
        assert d.seed_code and d.op in TEMPLATES
    with pytest.raises(ConfigError, match="no split"):
        KernelArenaBenchmark().tasks("test")


def test_templates_render_and_round_trip_params() -> None:
    code = render("matmul", {"BLOCK_M": 32, "SPLIT_K": 2})
    assert read_params(code) == {**TEMPLATES["matmul"][1], "BLOCK_M": 32, "SPLIT_K": 2}
    for op in TEMPLATES:  # every starting kernel obeys the same rules as candidates
        check_candidate_source(render(op, {}))
    with pytest.raises(InvalidCandidate, match="unknown params"):
        render("matmul", {"BLOCK_Q": 1})


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (fx.TORCH_REFERENCE, "calls torch.softmax"),
        (fx.TORCH_FUNCTIONAL, "uses torch.nn.functional"),
        (fx.TENSOR_METHOD, "tensor method .amax()"),
        (fx.PATCHES_TIMER, "imports time"),
        (fx.PATCHES_DO_BENCH_IN_LAUNCH, "touches the timer"),
        (fx.TAMPERS_HARNESS, "forbidden name `open`"),
        ("import torch\ndef launch(a, b):\n    return a @ b\n", "@ operator"),
        ("import os\ndef launch(x):\n    return x\n", "imports os"),
        (
            "from optiforge.kernels.softmax import reference_softmax\ndef launch(x):\n    return reference_softmax(x)\n",
            "a reference implementation",
        ),
        ("def run(x):\n    return x\n", "does not define a top-level `def launch"),
    ],
)
def test_static_checks_reject_with_reason(source: str, reason: str) -> None:
    score = _task("torch_softmax").evaluate({"code": source})  # never reaches a sandbox
    assert not score.passed and score.details["stage"] == "static"
    assert reason in score.details["reason"]


def test_correct_kernel_passes_dev_and_heldout() -> None:
    dev = _task("torch_softmax").evaluate({"code": fx.GOOD})
    assert dev.passed, dev.details
    assert dev.value == 1.0 and dev.metrics["correctness"] == 1.0
    assert dev.details["performance"] == "not measured without GPU"
    held = _task("torch_softmax", "heldout").evaluate({"code": fx.GOOD})
    assert held.passed and held.metrics["conditional_correctness"] == 1.0, held.details
    assert held.metrics["n_cases"] == 6


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (fx.ZEROS, "output is all zeros but the reference is not constant"),
        (fx.CACHED, "earlier call's output (cached result)"),
        (fx.MUTATES, "mutated input 0 in place"),
        (fx.TORCH_REFERENCE, "called torch.softmax during the launch"),
        (fx.PATCHES_TIMER, "patched the timer at import time"),
        (fx.PATCHES_DO_BENCH_IN_LAUNCH, "patched the timer: triton.testing.do_bench replaced"),
        (fx.TAMPERS_HARNESS, "harness file references.py was modified"),
    ],
)
def test_runtime_defences_reject_with_reason(source: str, reason: str) -> None:
    # Static checks off: the sandboxed harness alone must catch each cheat.
    score = _task("torch_softmax").evaluate({"code": source}, static_checks=False)
    assert not score.passed
    assert reason in score.details["reason"], score.details


def test_dev_shape_special_casing_fails_heldout() -> None:
    dev = _task("torch_softmax").evaluate({"code": fx.SPECIAL_CASES_DEV})
    assert dev.passed  # indistinguishable on the visible shapes...
    held = _task("torch_softmax", "heldout").evaluate({"code": fx.SPECIAL_CASES_DEV})
    assert not held.passed and held.metrics["conditional_correctness"] == 0.0
    assert "all zeros" in held.details["reason"]


def test_triton2triton_heldout_conditions_on_the_reference_kernel() -> None:
    # The starting kernel itself is correct on every held-out case: P(ok | ref ok) = 1.
    t = _task("t2t_relu", "heldout")
    s = t.evaluate({"code": t.seed_code})
    assert s.passed and s.metrics["conditional_correctness"] == 1.0 and s.metrics["n_cases"] == 6


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: timing is GPU-only")
def test_timed_outputs_are_validated_on_gpu() -> None:
    score = _task("torch_softmax").evaluate({"code": fx.CALLS_LATE_GARBAGE})
    assert not score.passed and "timed run" in score.details["reason"]
    good = _task("torch_softmax").evaluate({"code": fx.GOOD})
    assert good.passed and good.metrics["speedup"] > 0 and good.value == good.metrics["speedup"]


def test_suite_metrics_by_hand() -> None:
    # speedups 2, 0.5, 100 (clipped to 10), incorrect (counts as 0.1): geomean of 2, .5, 10, .1
    sp = [2.0, 0.5, 100.0, None]
    assert clipped_geomean_speedup(sp) == pytest.approx((2 * 0.5 * 10 * 0.1) ** 0.25)
    assert fast_p(sp, 1.0) == 0.5 and fast_p(sp, 2.0) == 0.25
    assert math.isnan(fast_p([], 1.0))
    rows = [{"verified": True, "verification": {"metrics": {"conditional_correctness": 1.0}}},
            {"verified": False, "verification": {"metrics": {"conditional_correctness": 0.5}}}]  # fmt: skip
    per = KernelArenaBenchmark().suite_metrics([{**r, "method": "hawkeye"} for r in rows])
    assert per["hawkeye"]["correctness"] == 0.5
    agg = aggregate(rows)
    assert agg == {
        "correctness": 0.5,
        "conditional_correctness": 0.75,
        "performance": "not measured without GPU",
    }
    assert (
        "not measured without GPU" in " ".join(KernelArenaBenchmark().notes("heldout"))
        or torch.cuda.is_available()
    )

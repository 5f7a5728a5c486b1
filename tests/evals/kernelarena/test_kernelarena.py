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
from optiforge.kernels.checks import check_candidate_source
from optiforge.kernels.templates import TEMPLATES, read_params, render


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
        (fx.TORCH_FUNCTIONAL, "`torch.nn.functional` is not a constant expression"),
        (fx.TENSOR_METHOD, "`x` is a tensor, used where only scalars"),
        (fx.PATCHES_TIMER, "imports time"),
        (fx.PATCHES_DO_BENCH_IN_LAUNCH, "assigns to `triton.testing.do_bench`"),
        (fx.TAMPERS_HARNESS, "top-level With"),
        ("import torch\ndef launch(a, b):\n    return a @ b\n", "@ operator"),
        ("import os\ndef launch(x):\n    return x\n", "imports os"),
        (
            "from optiforge.kernels.softmax import reference_softmax\ndef launch(x):\n    return reference_softmax(x)\n",
            "imports reference_softmax from optiforge.kernels.softmax",
        ),
        ("def run(x):\n    return x\n", "does not define a top-level `def launch"),
    ],
)
def test_static_checks_reject_with_reason(source: str, reason: str) -> None:
    score = _task("torch_softmax").evaluate({"code": source})  # never reaches a sandbox
    assert not score.passed and score.details["stage"] == "static"
    assert reason in score.details["reason"]


@pytest.mark.slow
def test_correct_kernel_passes_dev_and_heldout() -> None:
    dev = _task("torch_softmax").evaluate({"code": fx.GOOD})
    assert dev.passed, dev.details
    assert dev.metrics["correctness"] == 1.0
    if not torch.cuda.is_available():  # the cost model's estimate over the starting kernel
        assert (
            dev.value == dev.metrics["cost_speedup"] > 0
            and "cost model" in dev.details["performance"]
        )
        task = _task("torch_softmax")
        assert task.evaluate({"code": task.seed_code}).value == pytest.approx(1.0)
    held = _task("torch_softmax", "heldout").evaluate({"code": fx.GOOD})
    assert held.passed and held.metrics["conditional_correctness"] == 1.0, held.details
    assert held.metrics["n_cases"] == 6


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (fx.ZEROS, "output is all zeros but the reference is not constant"),
        (fx.CACHED, "earlier call's output (cached result)"),
        (fx.MUTATES, "mutated input 0 in place"),
        (fx.TORCH_REFERENCE, "called aten::_softmax during the launch"),
        (fx.PATCHES_TIMER, "patched the timer at import time"),
        (fx.PATCHES_DO_BENCH_IN_LAUNCH, "patched the timer: triton.testing.do_bench replaced"),
        (fx.TAMPERS_HARNESS, "attempted writing 'references.py'"),
    ],
)
def test_runtime_defences_reject_with_reason(source: str, reason: str) -> None:
    # Static checks off: the sandboxed harness alone must catch each cheat.
    score = _task("torch_softmax").evaluate({"code": source}, static_checks=False)
    assert not score.passed
    assert reason in score.details["reason"], score.details


# -- issue 11: each cheat the old in-process harness accepted at 1.0, with its reason ------------
@pytest.mark.parametrize(
    ("source", "reason"),
    [
        # DisableTorchFunction is refused in a candidate run (it would hide host reads from
        # the tripwire); the dispatcher denies torch compute whatever happened to the tripwire
        # (TORCH_REFERENCE above: "called aten::_softmax during the launch")
        (fx.TRIPWIRE_EMPTIED, "this torch hook is not allowed in a candidate run"),
        # there is no compare in the candidate's process: the parent compares
        (fx.REPLACES_COMPARE, "384/384 elements off"),
        (fx.TIMER_BLINDED, "patched the timer at import time (time.perf_counter replaced)"),
        # the references never ship into a candidate run
        (fx.READS_REFERENCE, "No module named 'references'"),
        # a result.json is never read; an out.meta without this run's nonce is ignored
        (fx.WRITES_RESULT_JSON, "out.meta was not written by the harness (no nonce of this run)"),
        (fx.ATEXIT_REWRITE, "384/384 elements off"),
        (fx.EDITS_AND_RESTORES, "attempted writing"),
        # past the audit hook (a child process): the parent's hash guard
        (fx.CHILD_EDITS_HARNESS, "harness file job.json was modified or removed during the run"),
    ],
)
def test_issue11_cheats_rejected_with_reason(source: str, reason: str) -> None:
    score = _task("torch_softmax").evaluate({"code": source}, static_checks=False)
    assert not score.passed and score.value == 0.0
    assert reason in score.details["reason"], score.details


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (
            "import torch\nm = torch.sys.modules['time']\ndef launch(x):\n    return x\n",
            "`torch.sys.modules['time']` is not a constant expression",
        ),
        (
            "import builtins\nbuiltins.setattr(1, 'a', 2)\ndef launch(x):\n    return x\n",
            "imports builtins",
        ),
        (
            "import torch\nt = torch\nt.softmax = None\ndef launch(x):\n    return x\n",
            "`torch` in a constant is not an earlier constant",
        ),
        (
            "import triton\ntt = triton.testing\ntt.do_bench = None\ndef launch(x):\n    return x\n",
            "`triton.testing` is not a constant expression",
        ),
        ("def launch(x):\n    return x.numpy()\n", "calls `.numpy()` on the host"),
        (
            "import torch\nf = torch.softmax\ndef launch(x):\n    return f(x, -1)\n",
            "`torch.softmax` is not a constant expression",
        ),
    ],
)
def test_static_check_gaps_closed(source: str, reason: str) -> None:
    with pytest.raises(InvalidCandidate) as err:
        check_candidate_source(source)
    assert reason in str(err.value)


def test_candidate_run_ships_no_reference_and_parent_ignores_result_json() -> None:
    t = _task("torch_softmax")
    files, guarded = t.run_files("candidate", fx.GOOD, b"", timing=False)
    assert "references.py" not in files and "harness.py" not in files
    assert set(guarded) >= {"runner.py", "job.json", "inputs.pt"} and "candidate.py" not in guarded
    assert not any("reference" in k for k in files if k.endswith(".py") and "kernels" not in k)


def test_runner_code_next_to_kernel_code_loads_no_global_name() -> None:
    # Replacing names in the runner module, builtins or torch cannot change what _run does.
    import dis
    import types

    from optiforge.evals.suites.kernelarena import runner

    def codes(co: types.CodeType):
        yield co
        for k in co.co_consts:
            if isinstance(k, types.CodeType):
                yield from codes(k)

    for co in codes(runner._run.__code__):
        loads = [
            i.argval for i in dis.get_instructions(co) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")
        ]
        assert loads == [], (co.co_name, loads)


def test_dev_shape_special_casing_fails_heldout() -> None:
    dev = _task("torch_softmax").evaluate({"code": fx.SPECIAL_CASES_DEV})
    assert dev.passed  # indistinguishable on the visible shapes...
    held = _task("torch_softmax", "heldout").evaluate({"code": fx.SPECIAL_CASES_DEV})
    assert not held.passed and held.metrics["conditional_correctness"] == 0.0
    assert "all zeros" in held.details["reason"]


@pytest.mark.slow
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
        "no GPU, so not timed" in " ".join(KernelArenaBenchmark().notes("heldout"))
        or torch.cuda.is_available()
    )
    costed = [
        {**r, "verification": {"metrics": {**r["verification"]["metrics"], "cost_speedup": 2.0}}}
        for r in rows
    ]
    assert aggregate(costed)["geomean_cost_speedup"] == pytest.approx((2.0 * 0.1) ** 0.5)


TAMPERS_COUNTER = (
    fx.GOOD_KERNEL
    + """
import optiforge.kernels.traffic as tr


def launch(x):
    tr.PatchState.active.clear()
    return _good(x)
"""
)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the counter runs under the interpreter only")
def test_kernel_code_that_touches_the_traffic_counter_is_refused() -> None:
    task = _task("torch_softmax")
    static = task.evaluate({"code": TAMPERS_COUNTER})
    assert not static.passed and static.details["stage"] == "static"
    ran = task.evaluate({"code": TAMPERS_COUNTER}, static_checks=False)
    assert (
        not ran.passed
        and "tampered with the interpreter's traffic counter" in ran.details["reason"]
    )


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="the cost model scores CPU runs only")
def test_t2t_matmul_cost_speedup_ranks_tile_sizes_and_ties_what_it_cannot_see() -> None:
    # Issue 40: every t2t_matmul candidate scored exactly 1.0. Tiles of 64 x 64 load A and B
    # 4x less often than the starting kernel's 16 x 16 (MNK (1/BN + 1/BM) elements), 32 x 32
    # 2x less; GROUP_M and num_warps change no requested byte and must not move the score.
    task = _task("t2t_matmul")
    scores = {
        label: task.evaluate({"code": render("matmul", params)})
        for label, params in (("32", {"BLOCK_M": 32, "BLOCK_N": 32}),
                              ("64", {"BLOCK_M": 64, "BLOCK_N": 64}),
                              ("group8_warps8", {"GROUP_M": 8, "num_warps": 8}))
    }  # fmt: skip
    assert all(s.passed for s in scores.values()), {k: s.details for k, s in scores.items()}
    v = {k: s.value for k, s in scores.items()}
    assert v["64"] > v["32"] > 1.0 == pytest.approx(v["group8_warps8"])
    # the counting case decides: the carried re-read ratios of the tile model (writes aside)
    assert v["64"] == pytest.approx(4.0, rel=0.05) and v["32"] == pytest.approx(2.0, rel=0.05)
    assert "GROUP_M" in scores["64"].details["performance"]


def test_counting_cases_decide_when_a_task_has_them() -> None:
    from optiforge.evals.suites.kernelarena import cost_over_cases

    row = {"bytes_loaded": 100.0, "bytes_stored": 0.0, "atomic_bytes": 0.0, "dot_flops": 1.0,
           "launches": 1.0}  # fmt: skip
    bounds, target = [(100.0, 1.0), (100.0, 1.0)], (1e9, 1e6)
    better_on_count = [row, {**row, "bytes_loaded": 25.0}]
    worse_small = [{**row, "bytes_loaded": 200.0}, {**row, "bytes_loaded": 25.0}]
    m, why = cost_over_cases(worse_small, better_on_count, bounds, target, [False, True])
    assert why is None and m["cost_worst_case"] == 1.0 and m["cost_speedup"] == pytest.approx(1.0)
    m_all, _ = cost_over_cases(worse_small, better_on_count, bounds, target)  # no flags: all decide
    assert m_all["cost_worst_case"] == 0.0 and m_all["cost_speedup"] == pytest.approx(0.5, rel=1e-3)
    with pytest.raises(ValueError, match="flags"):
        cost_over_cases(worse_small, better_on_count, bounds, target, [True])
    mm = _task("t2t_matmul")
    assert [c.cost for c in mm.cases] == [False, False, True]
    assert all(64 % b == 0 for b in TEMPLATES["matmul"][2]["BLOCK_M"])

"""Issue 39: the cost-model forges of kernelarena on CPU, each rejected with its reason.

Before the fix each cheat of :mod:`kernelarena_cheats_i39` scored ``cost_speedup`` 6.01 on
``torch_relu`` (the honest kernel: 1.00), through the static check and the run-time
guards; through the hawkeye agent the search kept it as its best candidate.
"""

from __future__ import annotations

from pathlib import Path

import kernelarena_cheats_i39 as cheats
import pytest
import torch

from optiforge.errors import InvalidCandidate
from optiforge.evals.suites.kernelarena import KernelArenaBenchmark, KernelTask, cost_over_cases
from optiforge.kernels.checks import check_candidate_source

CPU_ONLY = pytest.mark.skipif(
    torch.cuda.is_available(), reason="the cost model runs under the interpreter only"
)


def _task(name: str = "torch_relu") -> KernelTask:
    return next(t for t in KernelArenaBenchmark().tasks("dev") if t.name == name)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("fake_jit", "top-level ClassDef"),
        ("match_attr", "`Match` statements are not allowed in host code"),
        ("counter_add", "imports optiforge.kernels"),
        ("host_numpy", "calls `.new_empty()` on the host"),
        ("largest_case_only", "`Match` statements are not allowed in host code"),
    ],
)
def test_issue39_cheats_fail_the_grammar(name: str, reason: str) -> None:
    with pytest.raises(InvalidCandidate) as err:
        check_candidate_source(cheats.CHEATS[name])
    assert reason in str(err.value) and "\n" not in str(err.value)


_K = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
_LAUNCH = (
    "\n\ndef launch(x):\n    out = torch.empty_like(x)\n    _k[(1,)](x, out)\n    return out\n"
)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        # a decorator named like jit is not triton.jit: no body goes unchecked
        (
            _K
            + "def host_jit(fn):\n    return fn\n\n\n@host_jit\ndef _k(x, o):\n    pass\n"
            + _LAUNCH,
            "decorator `@host_jit` is not triton.jit",
        ),
        (
            _K + "from triton import jit\n\n\n@jit\ndef _k(x, o):\n    pass\n" + _LAUNCH,
            "imports jit from triton",
        ),
        (_K + "triton2 = triton\n", "`triton` in a constant is not an earlier constant"),
        # kernel bodies: Triton only
        (_K + "@triton.jit\ndef _k(x, o):\n    d = x.handle.data\n" + _LAUNCH, "reads `.data`"),
        (
            _K + "@triton.jit\ndef _k(x, o):\n    y = torch.relu(x)\n" + _LAUNCH,
            "host modules are not reachable",
        ),
        (
            _K
            + "@triton.jit\ndef _k(x, o):\n    match x:\n        case object(numpy=f):\n            pass\n"
            + _LAUNCH,
            "`Match` statements are not allowed in a kernel",
        ),
        (
            _K + "def _h(a):\n    return a\n\n\n@triton.jit\ndef _k(x, o):\n    _h(x)\n" + _LAUNCH,
            "calls `_h`",
        ),
        (
            _K
            + "@triton.jit\ndef _k(x, o):\n    tl.store(o, tl.load(x))\n    f = lambda: 0\n"
            + _LAUNCH,
            "`Lambda` expressions are not allowed in a kernel",
        ),
        # the launch path: tensors are never host values
        (
            _K
            + "@triton.jit\ndef _k(x, o):\n    pass\n\n\ndef launch(x):\n    out = torch.empty_like(x)\n"
            "    if x.sum() > 0:\n        _k[(1,)](x, out)\n    return out\n",
            "calls `.sum()` on the host",
        ),
        (
            _K
            + "@triton.jit\ndef _k(x, o):\n    pass\n\n\ndef launch(x):\n    out = torch.empty_like(x)\n"
            "    n = int(x[0, 0])\n    _k[(n,)](x, out)\n    return out\n",
            "`x` is a tensor, used where only scalars",
        ),
        (
            _K
            + "@triton.jit\ndef _k(x, o):\n    pass\n\n\ndef launch(x):\n    f = x.numpy\n    out = torch.empty_like(x)\n"
            "    _k[(1,)](x, out)\n    return out\n",
            "reads `x.numpy` on the host",
        ),
        (
            _K
            + "@triton.jit\ndef _k(x, o):\n    pass\n\n\ndef launch(x):\n    out = torch.empty_like(x)\n"
            "    out[0] = 1.0\n    _k[(1,)](x, out)\n    return out\n",
            "assigns to `out[0]`",
        ),
        (
            "import torch\n\n\ndef launch(x):\n    return torch.zeros_like(x)\n",
            "launches no Triton kernel",
        ),
    ],
)
def test_grammar_rejects_with_reason(source: str, reason: str) -> None:
    with pytest.raises(InvalidCandidate) as err:
        check_candidate_source(source)
    assert reason in str(err.value)


def test_honest_kernels_fit_the_grammar() -> None:
    check_candidate_source(cheats.HONEST_RELU)
    check_candidate_source(_task().seed_code)


@CPU_ONLY
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("fake_jit", "read tensor data on the host with torch.numpy during the launch"),
        ("match_attr", "read tensor data on the host with torch.numpy during the launch"),
        ("host_numpy", "read tensor data on the host with torch.numpy during the launch"),
        ("largest_case_only", "read tensor data on the host with torch.numpy during the launch"),
        ("counter_add", "tampered with the interpreter's traffic counter"),
    ],
)
def test_issue39_cheats_rejected_at_run_time_too(name: str, reason: str) -> None:
    # Static checks off: the sandboxed harness alone must refuse each forge.
    score = _task().evaluate({"code": cheats.CHEATS[name]}, static_checks=False)
    assert not score.passed and score.value == 0.0
    assert reason in score.details["reason"], score.details


def test_every_dev_case_is_counted_and_the_worst_decides() -> None:
    honest = {
        "bytes_loaded": 400.0,
        "bytes_stored": 400.0,
        "atomic_bytes": 0.0,
        "dot_flops": 0.0,
        "launches": 1.0,
    }
    cheap = {**honest, "bytes_loaded": 0.0, "bytes_stored": 0.0}
    bounds = [(800.0, 0.0)] * 4
    target = (0.0, 1e8)
    # cheap (no traffic) on the last, largest case only: the old rule scored that case alone
    metrics, why = cost_over_cases([honest, honest, honest, cheap], [honest] * 4, bounds, target)
    assert why is None and metrics["cost_cases"] == 4.0
    assert metrics["cost_speedup"] == pytest.approx(1.0) and metrics["cost_worst_case"] == 0.0
    only_largest, _ = cost_over_cases([cheap], [honest], bounds[:1], target)
    assert only_largest["cost_speedup"] > 5.0  # what the cheat got when one case decided
    none = {**honest, "launches": 0.0}
    metrics, why = cost_over_cases([honest, none], [honest] * 2, bounds[:2], target)
    assert metrics == {} and why == "the candidate launched no Triton kernel on dev case 1"


@pytest.mark.slow
@CPU_ONLY
def test_hawkeye_search_does_not_keep_a_forged_kernel(tmp_path: Path) -> None:
    # End to end through the agent: an LLM answering with the forge (8.51 / 6.01 before).
    from optiforge.agents.hawkeye.problem import KernelProblem
    from optiforge.agents.hawkeye.proposers import LLMKernelProposer
    from optiforge.agents.kit import RunContext, SearchConfig, run_search
    from optiforge.testing import ScriptedLLM

    llm = ScriptedLLM(
        outputs=[f"```python\n{src}```\n" for src in (cheats.MATCH_ATTR, cheats.HONEST_RELU)]
    )
    ctx = RunContext(llm=llm, seed=0, run_dir=tmp_path / "run", agent="hawkeye")
    problem = KernelProblem(_task(), "interpreter")
    result = run_search(problem, LLMKernelProposer(strategies_per_task=1), ctx,
                        SearchConfig(max_evaluations=2, proposals_per_round=1, max_rounds=3))  # fmt: skip
    seed, forged, honest = result.history
    assert seed.passed and honest.passed and not forged.passed
    assert forged.error is not None and "`Match` statements are not allowed" in forged.error
    assert result.best is not None and result.best.value == pytest.approx(1.0)


_GRID_KERNEL = (
    _K + "@triton.jit\ndef _k(x, o, n, BLOCK: tl.constexpr):\n    pass\n\n\ndef launch(x):\n"
    "    out = torch.empty_like(x)\n    n = x.numel()\n"
)


@pytest.mark.parametrize(
    ("grid", "reason"),
    [
        ("lambda meta: (triton.cdiv(n, meta['BLOCK']),)", None),
        # meta also holds the launch's tensors: reading one is a host read
        ("lambda meta: (int(meta['x']),)", "a grid reads only meta['<constexpr parameter>']"),
        ("lambda meta: (len(meta),)", "`meta` is a meta"),
    ],
)
def test_grid_functions_read_only_constexprs_from_meta(grid: str, reason: str | None) -> None:
    src = _GRID_KERNEL + f"    _k[{grid}](x, out, n, BLOCK=64)\n    return out\n"
    if reason is None:
        check_candidate_source(src)
        return
    with pytest.raises(InvalidCandidate) as err:
        check_candidate_source(src)
    assert reason in str(err.value)


def test_triton_heuristics_is_not_in_the_grammar() -> None:
    # its functions get the launch's arguments, tensors included, on the host
    src = (
        _K
        + "@triton.heuristics({'E': lambda a: int(a['x'][0])})\n@triton.jit\ndef _k(x, o):\n    pass\n"
        + _LAUNCH
    )
    with pytest.raises(InvalidCandidate, match="is not triton.jit/triton.autotune"):
        check_candidate_source(src)

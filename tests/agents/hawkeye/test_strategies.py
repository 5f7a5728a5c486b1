"""Strategy taxonomy: every example vs torch, detectors on positives/negatives, strategy choice."""

from __future__ import annotations

import pytest
import torch

from optiforge.agents.hawkeye.strategies import (
    ARCHS,
    TAXONOMY,
    KernelFacts,
    choose_strategies,
    detect_all,
    get_strategy,
    ir_markers_found,
    run_example,
)
from optiforge.errors import ConfigError, InvalidCandidate

ENTRIES = [(s, a) for s in TAXONOMY for a in ARCHS]

NAIVE_ADD = """
import torch
import triton
import triton.language as tl


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def launch(x, y):
    out = torch.empty_like(x)
    _add[(triton.cdiv(x.numel(), 128),)](x, y, out, x.numel(), BLOCK=128)
    return out
"""


def test_taxonomy_has_ten_strategies_with_every_arch() -> None:
    assert len(TAXONOMY) == 10
    for s in TAXONOMY.values():
        assert set(s.archs) >= set(ARCHS), s.name
        for arch, e in s.archs.items():
            # An entry either has a runnable example or says why it does not apply.
            assert (e.example is None) == (e.not_applicable is not None), (s.name, arch)


@pytest.mark.parametrize(("strategy", "arch"), ENTRIES)
def test_example_matches_torch(strategy: str, arch: str) -> None:
    entry = TAXONOMY[strategy].archs[arch]
    ok, why = entry.runnable_here()
    if not ok:
        pytest.skip(why)
    check = run_example(entry)
    assert check.ok, f"{strategy}/{arch}: max abs err {check.max_abs_err} > atol {check.atol}"


def test_example_check_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    # The checker must catch a wrong kernel: perturb the example's output by 1e-2.
    from optiforge.agents.hawkeye.strategies.examples import tiled_matmul

    real = tiled_matmul.launch
    monkeypatch.setattr(tiled_matmul, "launch", lambda a, b, **kw: real(a, b, **kw) + 1e-2)
    check = run_example(TAXONOMY["tiling_autotune"].archs["interpreter"], seeds=(0,))
    assert not check.ok and check.max_abs_err == pytest.approx(1e-2, rel=1e-2)


def test_not_applicable_entry_refuses_to_run() -> None:
    entry = TAXONOMY["warp_specialization"].archs["sm80"]
    with pytest.raises(InvalidCandidate, match="not applicable on sm80"):
        run_example(entry)


@pytest.mark.parametrize("strategy", list(TAXONOMY))
def test_detector_positive_on_own_example_negative_on_naive_kernel(strategy: str) -> None:
    s = TAXONOMY[strategy]
    entry = s.archs["interpreter"]
    pos = s.detect(entry.example_source(), "interpreter")
    assert pos.applies and pos.evidence, strategy
    neg = s.detect(NAIVE_ADD, "interpreter")
    assert not neg.applies, (strategy, neg.evidence)


def test_detectors_distinguish_matmul_variants() -> None:
    tiled = TAXONOMY["tiling_autotune"].archs["interpreter"].example_source()
    found = {k for k, v in detect_all(tiled).items() if v.applies}
    assert {"tiling_autotune", "tensor_cores_low_precision"} <= found
    assert not found & {"split_k_reduction", "persistent_swizzle", "tma", "warp_specialization",
                        "software_pipelining", "fusion"}  # fmt: skip
    fused = TAXONOMY["fusion"].archs["interpreter"].example_source()
    assert detect_all(fused)["fusion"].applies
    assert TAXONOMY["tma"].detect(
        TAXONOMY["tma"].archs["sm80"].example_source(), "sm80"
    ).evidence == ["make_block_ptr call"]


def test_detector_rejects_unparsable_source() -> None:
    with pytest.raises(InvalidCandidate, match="syntax error"):
        TAXONOMY["fusion"].detect("def launch(:\n")


def test_choose_strategies_follows_roofline_facts() -> None:
    mm = choose_strategies(
        KernelFacts(bound="compute", matmul=True, low_precision=True), "sm90", k=3
    )
    assert mm[0].name == "tensor_cores_low_precision"
    ew = choose_strategies(KernelFacts(bound="memory", elementwise_chain=3), "interpreter", k=2)
    assert [s.name for s in ew] == ["fusion", "coalesced_vectorized"]
    # sm80 has no warp-specialization example, so it is never chosen there.
    all_sm80 = choose_strategies(KernelFacts(bound="compute", matmul=True), "sm80", k=10)
    assert "warp_specialization" not in {s.name for s in all_sm80}


def test_unknown_names_fail_loudly() -> None:
    with pytest.raises(ConfigError, match="unknown strategy"):
        get_strategy("magic")
    with pytest.raises(ConfigError, match="no entry for arch"):
        TAXONOMY["fusion"].entry("sm70")


def test_ir_markers_logic() -> None:
    res = ir_markers_found("tma", {"ptx": "... cp.async.bulk.tensor.2d ...", "ttgir": "no"})
    assert res is not None and res.applies and res.evidence == ["cp.async.bulk.tensor in ptx"]
    assert not ir_markers_found("tma", {"ptx": "ld.global"}).applies  # type: ignore[union-attr]
    assert ir_markers_found("fusion", {"ptx": ""}) is None


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs CUDA: compiled IR only exists for a GPU target"
)
def test_compiled_ir_shows_tensor_cores() -> None:
    from optiforge.agents.hawkeye.strategies.examples import fp16_dot

    a, b = fp16_dot.make_inputs(0)
    fp16_dot.launch(a, b)
    kernel = next(iter(fp16_dot._fp16_mm.device_caches[torch.cuda.current_device()][0].values()))
    res = ir_markers_found("tensor_cores_low_precision", kernel.asm)
    assert res is not None and res.applies, res


def test_every_example_shown_to_the_model_passes_the_static_checks() -> None:
    from optiforge.kernels.checks import check_candidate_source

    shown = 0
    for strategy in TAXONOMY.values():
        for entry in strategy.archs.values():
            if entry.example is None:
                continue
            src = entry.example_source()
            check_candidate_source(src)  # raises InvalidCandidate with the reason
            assert "def launch" in src and "def make_inputs" not in src and "reference" not in src
            shown += 1
    assert shown >= 28

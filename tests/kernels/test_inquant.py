import pytest
import torch
from kernel_cases import DEVICE

from optiforge.kernels import inquant as iq
from optiforge.kernels.inquant_eval import evaluate, format_table, make_synthetic_kv


def _kv(h=2, t=24, d=32, outliers=3, seed=0):
    k, v, mask = make_synthetic_kv(h, t, d, outliers, seed)
    return k.to(DEVICE), v.to(DEVICE), mask


@pytest.fixture(scope="module")
def triton_roundtrip():
    """One Triton quantise/dequantise shared by several tests (the interpreter is slow)."""
    k, _, mask = _kv()
    desc = iq.build_descriptor(k, 3, n_sample=16, seed=0)
    cache = iq.quantize(k, desc, group_size=8)
    return k, mask, desc, cache, iq.dequantize(cache, dtype=torch.float32)


def test_payload_is_exactly_half_a_byte_per_element(triton_roundtrip):
    k, _, desc, cache, _ = triton_roundtrip
    assert cache.packed.dtype == torch.uint8
    assert cache.packed.numel() == k.numel() // 2  # 4.0x vs fp16, outliers included
    nb = cache.nbytes()
    h, t, d = k.shape
    assert nb["payload"] == h * t * d // 2
    assert nb["metadata"] == h * t * (4 * (d // 8) + 2)  # scale+zero per group, oscale per token
    assert nb["descriptor"] == h * (d // 8 + 3 * 3)  # bitmask + k offsets + k fp16 fills
    assert 2 * k.numel() / nb["payload"] == 4.0


def test_triton_matches_reference_bit_for_bit(triton_roundtrip):
    k, _, desc, cache, deq = triton_roundtrip
    ref = iq.reference_quantize(k, desc, group_size=8)
    if DEVICE == "cpu":  # the interpreter runs the same IEEE fp32 ops as torch
        for name in ("packed", "scale", "zero", "oscale"):
            assert torch.equal(getattr(cache, name), getattr(ref, name)), name
        assert torch.equal(deq, iq.reference_dequantize(ref, dtype=torch.float32))
    else:  # GPU: codes may flip at exact rounding ties; values agree to ~an ulp
        assert (cache.packed != ref.packed).float().mean() < 1e-3
        torch.testing.assert_close(
            deq, iq.reference_dequantize(ref, dtype=torch.float32), atol=1e-2, rtol=1e-3
        )


def test_outliers_recovered_at_8_bit_precision(triton_roundtrip):
    k, mask, desc, cache, deq = triton_roundtrip
    outlier = iq.unpack_mask(desc.outlier_mask, k.shape[2])
    assert torch.equal(outlier.cpu(), mask)  # sampling found the planted channels
    osc = cache.oscale.float()[..., None]
    err = (deq - k).abs()
    om = outlier[:, None, :].expand_as(k)
    # Symmetric 8-bit rounding bound; the fp16 scale adds at most ~1e-3 relative.
    assert (err[om] <= (0.5 * osc.expand_as(k))[om] * 1.01 + 1e-6).all()
    # Plain 4-bit keeps a group's extreme (the outlier) nearly exact but stretches the
    # range for the other channels of the group; InQuant's normal channels avoid that.
    role, _, _ = iq.slot_tables(desc)
    normal = (role == iq.ROLE_NORMAL)[:, None, :].expand_as(k)
    p4 = iq.reference_uniform_roundtrip(k, bits=4, group_size=8)
    assert (p4 - k).abs()[normal].mean() > 3 * err[normal].mean()


def test_zero_outliers_equals_independent_plain_4bit():
    k, _, _ = _kv(h=1, t=8, d=16, outliers=2, seed=3)
    desc = iq.build_descriptor(k, 0)
    out = iq.dequantize(iq.quantize(k, desc, group_size=8), dtype=torch.float32)
    assert torch.equal(out, iq.reference_uniform_roundtrip(k, bits=4, group_size=8))


def test_non_contiguous_fp16_input():
    k, _, _ = _kv(h=2, t=6, d=16, outliers=2, seed=4)
    kh = k.half().transpose(0, 1).contiguous().transpose(0, 1)  # `H x T x D` view, T-major storage
    assert not kh.is_contiguous()
    desc = iq.build_descriptor(kh, 2, n_sample=6)
    cache = iq.quantize(kh, desc, group_size=16)
    ref = iq.reference_quantize(kh.contiguous(), desc, group_size=16)
    if DEVICE == "cpu":
        assert torch.equal(cache.packed, ref.packed)
    out = iq.dequantize(cache, dtype=torch.float16)
    torch.testing.assert_close(out, iq.reference_dequantize(ref, dtype=torch.float16))


def test_donor_rule_strides_over_adjacent_outliers_and_wraps():
    d = 16
    outlier = torch.zeros(1, d, dtype=torch.bool)
    outlier[0, [3, 4, 14, 15]] = True
    flat = torch.ones(1, d)
    donors = iq.choose_donors(outlier, flat, window=1)[0]
    assert donors[[3, 4, 14, 15]].tolist() == [5, 6, 0, 1]
    # Window 3 picks the lowest-spread free channel among the next three.
    spread = torch.ones(1, d)
    spread[0, 7] = 0.1
    donors = iq.choose_donors(outlier, spread, window=3)[0]
    assert donors[3].item() == 7 and donors[4].item() == 5
    # Descriptor round trip: offsets point at the donors and slot tables agree.
    x = torch.randn(1, 4, d)
    x[0, :, [3, 4, 14, 15]] *= 40
    desc = iq.build_descriptor(x, 4, n_sample=4, donor_window=1)
    role, partner, _ = iq.slot_tables(desc)
    assert role[0, [3, 4, 14, 15]].tolist() == [1, 1, 1, 1]
    assert role[0, [5, 6, 0, 1]].tolist() == [2, 2, 2, 2]
    assert partner[0, [3, 4, 14, 15]].tolist() == [5, 6, 0, 1]
    assert partner[0, [5, 6, 0, 1]].tolist() == [3, 4, 14, 15]


def test_min_ratio_skips_heads_without_outliers():
    _, v, _ = _kv(h=2, t=32, d=32, outliers=0)
    desc = iq.build_descriptor(v, 4, min_ratio=20.0)
    assert not iq.unpack_mask(desc.outlier_mask, 32).any()
    assert desc.donor_offset.shape == (2, 4)  # entries stay allocated (counted in bytes)


def test_bad_inputs_and_corrupt_descriptor():
    x = torch.randn(1, 4, 16)
    with pytest.raises(ValueError, match="n_outliers"):
        iq.build_descriptor(x, 9)
    desc = iq.build_descriptor(x, 2)
    with pytest.raises(ValueError, match="D % G"):
        iq.reference_quantize(x, desc, group_size=6)
    bad = iq.InQuantDescriptor(
        desc.outlier_mask, torch.zeros_like(desc.donor_offset), desc.donor_fill, 16
    )
    with pytest.raises(ValueError, match="corrupt descriptor"):
        iq.slot_tables(bad)
    with pytest.raises(ValueError, match="descriptor"):
        iq.reference_quantize(torch.randn(2, 4, 16), desc, group_size=8)


def test_accuracy_between_int4_and_int8_on_outlier_heavy_keys():
    rows, _ = evaluate(
        heads=2, tokens=128, dim=64, group=32, n_true_outliers=3, seeds=(0,), use_triton=False
    )
    by = {r.method.split(" ")[0] + ("" if "InQ" not in r.method else r.method[3:]): r for r in rows}
    int4, int8 = by["int4"], by["int8"]
    inq = by["InQ k=3 W=4 r4"]
    assert int8.k_rel_err < inq.k_rel_err < 0.5 * int4.k_rel_err
    assert inq.attn_rel_err < int4.attn_rel_err
    assert inq.compression_payload == 4.0 and int4.compression_payload == 4.0
    assert inq.compression_total < int4.compression_total  # metadata is counted
    assert "InQ" in format_table(rows)


def test_compress_with_config_and_extra_keys_rejected():
    import pydantic

    k, _, mask = _kv(h=1, t=8, d=16, outliers=2, seed=5)
    cache = iq.compress(k, iq.InQuantConfig(group_size=8, n_outliers=2, n_sample=8))
    assert torch.equal(iq.unpack_mask(cache.descriptor.outlier_mask, 16).cpu(), mask)
    assert cache.shape == (1, 8, 16)
    with pytest.raises(pydantic.ValidationError):
        iq.InQuantConfig(group_sise=8)

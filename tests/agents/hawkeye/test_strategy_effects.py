"""Issue 40: each strategy check looks for the strategy's effect in the kernel's code paths.

For every strategy, two kernels: one that *names* the strategy (a constant, a parameter,
a comment, an unused helper or value) without applying it must be reported absent; one
that applies it under other names must be reported present. A name-only check (the
weaker stand-in: the strategy's identifiers in the source, what the old ``SPLIT_K``
check amounted to) gets at least one of each pair wrong, so these tests tell the two apart.
"""

from __future__ import annotations

import re

import pytest

from optiforge.agents.hawkeye.strategies import TAXONOMY

_HOST = """

def launch(a, b):
    c = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=a.dtype)
    {launch}
    return c
"""
_HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"

_PLAIN_MM_BODY = """
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
"""
_MM_SIG = "(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr"
_MM_LAUNCH = (
    "_mm[(2, 2)](a, b, c, a.shape[0], b.shape[1], a.shape[1], BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)"
)


def _src(kernels: str, launch: str = _MM_LAUNCH) -> str:
    return _HEAD + kernels.strip() + "\n" + _HOST.format(launch=launch)


CASES: dict[str, tuple[str, str]] = {}
"""strategy -> (names it without applying it, applies it under other names)."""

CASES["split_k_reduction"] = (
    _src(
        f"""
SPLIT_K = 4  # split-K over K: tl.atomic_add partials (not really)


@triton.jit
def _split_k_helper(p, x, SPLIT_K: tl.constexpr):  # never launched
    for kt in range(tl.program_id(2), 8, SPLIT_K):
        x += kt
    tl.atomic_add(p, x)


@triton.jit
def _mm{_MM_SIG}, SPLIT_K: tl.constexpr):
{_PLAIN_MM_BODY}
"""
    ),
    _src(
        f"""
@triton.jit
def _mm{_MM_SIG}, PARTS: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    part = tl.program_id(2)
    s = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(part, tl.cdiv(K, BLOCK_K), PARTS):
        kk = t * BLOCK_K + tl.arange(0, BLOCK_K)
        x = tl.load(a_ptr + rows[:, None] * K + kk[None, :], mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0)
        y = tl.load(b_ptr + kk[:, None] * N + cols[None, :], mask=(kk[:, None] < K) & (cols[None, :] < N), other=0.0)
        s = tl.dot(x, y, s)
    tl.atomic_add(c_ptr + rows[:, None] * N + cols[None, :], s, mask=(rows[:, None] < M) & (cols[None, :] < N))
""",
        "_mm[(2, 2, 4)](a, b, c, a.shape[0], b.shape[1], a.shape[1], BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, PARTS=4)",
    ),
)

_ROW_LAUNCH = "_k[(a.shape[0],)](a, c, a.shape[1], BLOCK_M=16, BLOCK_N=128)"
CASES["tiling_autotune"] = (
    _src(
        """
@triton.jit
def _k(x_ptr, o_ptr, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):  # "tiles" by name only
    offs = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
""",
        _ROW_LAUNCH,
    ),
    _src(
        """
@triton.jit
def _mm(p, q, r, M, N, K, TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr):
    i = tl.program_id(0) * TM + tl.arange(0, TM)
    j = tl.program_id(1) * TN + tl.arange(0, TN)
    s = tl.zeros((TM, TN), dtype=tl.float32)
    for k0 in range(0, K, TK):
        kk = k0 + tl.arange(0, TK)
        s += tl.dot(tl.load(p + i[:, None] * K + kk[None, :]), tl.load(q + kk[:, None] * N + j[None, :]))
    tl.store(r + i[:, None] * N + j[None, :], s)
""",
        "_mm[(2, 2)](a, b, c, a.shape[0], b.shape[1], a.shape[1], TM=32, TN=32, TK=32)",
    ),
)

_EW_LAUNCH = "_k[(8,)](a, c, a.numel(), BLOCK=128)"
CASES["coalesced_vectorized"] = (
    _src(
        """
@triton.jit
def _k(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    vectorized = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)  # computed, never used
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
""",
        _EW_LAUNCH,
    ),
    _src(
        """
@triton.jit
def _k(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    i = tl.max_contiguous(tl.multiple_of(i, BLOCK), BLOCK)
    tl.store(o_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2.0, mask=i < n)
""",
        _EW_LAUNCH,
    ),
)

_SM_LAUNCH = "_k[(a.shape[0],)](a, c, a.shape[1], BLOCK=128)"
CASES["shared_memory_staging"] = (
    _src(
        """
@triton.jit
def _k(x_ptr, o_ptr, n, BLOCK: tl.constexpr):  # staged in shared memory (claimed): three HBM reads
    cols = tl.arange(0, BLOCK)
    row = x_ptr + tl.program_id(0) * n
    staged = tl.load(row + cols, mask=cols < n, other=-float("inf"))
    m = tl.max(staged, axis=0)
    e = tl.exp(tl.load(row + cols, mask=cols < n, other=-float("inf")) - m)
    d = tl.sum(tl.exp(tl.load(row + cols, mask=cols < n, other=-float("inf")) - m), axis=0)
    tl.store(o_ptr + tl.program_id(0) * n + cols, e / d, mask=cols < n)
""",
        _SM_LAUNCH,
    ),
    _src(
        """
@triton.jit
def _k(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + tl.program_id(0) * n + cols, mask=cols < n, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(o_ptr + tl.program_id(0) * n + cols, e / tl.sum(e, axis=0), mask=cols < n)
""",
        _SM_LAUNCH,
    ),
)

CASES["software_pipelining"] = (
    _src(
        f"""
@triton.jit
def _mm{_MM_SIG}, NUM_STAGES: tl.constexpr):  # software pipelining: NUM_STAGES (unused)
{_PLAIN_MM_BODY.replace("range(0, K, BLOCK_K)", "tl.range(0, K, BLOCK_K, num_stages=1)")}
""",
        _MM_LAUNCH[:-1] + ", NUM_STAGES=3)",
    ),
    _src(
        f"""
@triton.jit
def _mm{_MM_SIG}, DEPTH: tl.constexpr):
{_PLAIN_MM_BODY.replace("range(0, K, BLOCK_K)", "tl.range(0, K, BLOCK_K, num_stages=DEPTH)")}
""",
        _MM_LAUNCH[:-1] + ", DEPTH=3)",
    ),
)

CASES["tensor_cores_low_precision"] = (
    _src(
        """
PRECISION = tl.float16  # tensor cores via tl.dot... in a helper nobody calls


@triton.jit
def _unused_dot(a, b):
    return tl.dot(a, b)


@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.sum(a[:, :, None] * b[None, :, :], axis=1))
"""
    ),
    _src(
        """
@triton.jit
def _mm(p, q, r, M, N, K, TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr):
    i = tl.program_id(0) * TM + tl.arange(0, TM)
    j = tl.program_id(1) * TN + tl.arange(0, TN)
    kk = tl.arange(0, TK)
    x = tl.load(p + i[:, None] * K + kk[None, :]).to(tl.float16)
    y = tl.load(q + kk[:, None] * N + j[None, :]).to(tl.float16)
    tl.store(r + i[:, None] * N + j[None, :], tl.dot(x, y, out_dtype=tl.float32))
""",
        "_mm[(2, 2)](a, b, c, a.shape[0], b.shape[1], a.shape[1], TM=32, TN=32, TK=32)",
    ),
)

CASES["tma"] = (
    _src(
        f"""
@triton.jit
def _mm{_MM_SIG}):
    tma_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])  # TMA, unused
{_PLAIN_MM_BODY}
"""
    ),
    _src(
        """
@triton.jit
def _mm(p, q, r, M, N, K, TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr):
    x_d = tl.make_tensor_descriptor(p, [M, K], [K, 1], [TM, TK])
    y_d = tl.make_tensor_descriptor(q, [K, N], [N, 1], [TK, TN])
    s = tl.zeros((TM, TN), dtype=tl.float32)
    for k0 in range(0, K, TK):
        s = tl.dot(x_d.load([tl.program_id(0) * TM, k0]), y_d.load([k0, tl.program_id(1) * TN]), s)
    i = tl.program_id(0) * TM + tl.arange(0, TM)
    j = tl.program_id(1) * TN + tl.arange(0, TN)
    tl.store(r + i[:, None] * N + j[None, :], s)
""",
        "_mm[(2, 2)](a, b, c, a.shape[0], b.shape[1], a.shape[1], TM=32, TN=32, TK=32)",
    ),
)

CASES["warp_specialization"] = (
    _src(
        f"""
@triton.jit
def _mm{_MM_SIG}, WARP_SPECIALIZE: tl.constexpr):
{_PLAIN_MM_BODY.replace("range(0, K, BLOCK_K)", "tl.range(0, K, BLOCK_K, warp_specialize=False)")}
""",
        _MM_LAUNCH[:-1] + ", WARP_SPECIALIZE=True)",
    ),
    _src(
        f"""
@triton.jit
def _mm{_MM_SIG}):
{_PLAIN_MM_BODY.replace("range(0, K, BLOCK_K)", "tl.range(0, K, BLOCK_K, num_stages=2, warp_specialize=True)")}
"""
    ),
)

_GROUPED = """
@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
        {G}: tl.constexpr):
    pid = tl.program_id(0)
    n_m = tl.cdiv(M, BLOCK_M)
    n_n = tl.cdiv(N, BLOCK_N)
    {MAP}
    rm = pm * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pn * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        acc = tl.dot(tl.load(a_ptr + rm[:, None] * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * N + rn[None, :]), acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
"""
_ROW_MAJOR = "group = pid // (GROUP_M * n_n)  # GROUP_M swizzle (computed, never used)\n    pm = pid // n_n\n    pn = pid % n_n"
_BANDS = (
    "width = BAND * n_n\n    top = (pid // width) * BAND\n    rows = tl.minimum(n_m - top, BAND)\n"
    "    pm = top + (pid % width) % rows\n    pn = (pid % width) // rows"
)
CASES["persistent_swizzle"] = (
    _src(
        _GROUPED.replace("{G}", "GROUP_M").replace("{MAP}", _ROW_MAJOR),
        "_mm[(4,)](a, b, c, a.shape[0], b.shape[1], a.shape[1], BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=8)",
    ),
    _src(
        _GROUPED.replace("{G}", "BAND").replace("{MAP}", _BANDS),
        "_mm[(4,)](a, b, c, a.shape[0], b.shape[1], a.shape[1], BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, BAND=2)",
    ),
)

_FUSED_TAIL = """
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    out = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], {STORED}, mask=(rm[:, None] < M) & (rn[None, :] < N))
"""
_FUSED = f"""
@triton.jit
def _mm(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr):
{_PLAIN_MM_BODY.rsplit("    tl.store", 1)[0]}{_FUSED_TAIL}
"""
_FUSED_LAUNCH = "_mm[(2, 2)](a, b, b[0], c, a.shape[0], b.shape[1], a.shape[1], BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)"
CASES["fusion"] = (
    # the epilogue is computed and dropped: only the matmul reaches the store (the
    # bias + ReLU would need a second kernel), though the kernel "has" all three ops
    _src("# fused matmul + bias + relu\n" + _FUSED.replace("{STORED}", "acc"), _FUSED_LAUNCH),
    _src(
        _FUSED.replace("{STORED}", "out")
        .replace("acc", "s")
        .replace("out", "y")
        .replace("bias", "v"),
        _FUSED_LAUNCH,
    ),
)

#: The weaker stand-in: a strategy is "applied" when its identifiers appear in the source.
NAME_ONLY: dict[str, str] = {
    "split_k_reduction": r"SPLIT_K|atomic_add",
    "tiling_autotune": r"BLOCK_M.*BLOCK_N|autotune",
    "coalesced_vectorized": r"multiple_of|max_contiguous",
    "shared_memory_staging": r"stag|shared",
    "software_pipelining": r"num_stages|NUM_STAGES",
    "tensor_cores_low_precision": r"tl\.dot|float16",
    "tma": r"make_tensor_descriptor|make_block_ptr",
    "warp_specialization": r"warp_specialize",
    "persistent_swizzle": r"GROUP_M|swizzle",
    "fusion": r"fuse|fused",
}


def _name_only(strategy: str, src: str) -> bool:
    return re.search(NAME_ONLY[strategy], src, re.DOTALL) is not None


def test_every_strategy_has_a_pair() -> None:
    assert set(CASES) == set(TAXONOMY) == set(NAME_ONLY)


@pytest.mark.parametrize("strategy", sorted(CASES))
def test_named_but_not_applied_is_absent(strategy: str) -> None:
    named, _ = CASES[strategy]
    res = TAXONOMY[strategy].detect(named)
    assert not res.applies, (strategy, res.evidence)


@pytest.mark.parametrize("strategy", sorted(CASES))
def test_applied_under_other_names_is_present(strategy: str) -> None:
    _, renamed = CASES[strategy]
    res = TAXONOMY[strategy].detect(renamed)
    assert res.applies and res.evidence, strategy


@pytest.mark.parametrize("strategy", sorted(CASES))
def test_the_name_only_stand_in_gets_the_pair_wrong(strategy: str) -> None:
    # the same pair scored by names alone: both kernels name the strategy or neither does
    named, renamed = CASES[strategy]
    effect = (TAXONOMY[strategy].detect(named).applies, TAXONOMY[strategy].detect(renamed).applies)
    names = (_name_only(strategy, named), _name_only(strategy, renamed))
    assert effect == (False, True)
    assert names != effect, strategy


def test_issue40_split_k_constant_alone_is_not_split_k() -> None:
    plain = TAXONOMY["tiling_autotune"].archs["interpreter"].example_source()
    with_constant = plain.replace("\n\n@triton.jit", "\nSPLIT_K = 4\n\n\n@triton.jit", 1)
    assert "SPLIT_K = 4" in with_constant
    assert not TAXONOMY["split_k_reduction"].detect(with_constant).applies


def test_examples_compile_as_python() -> None:
    for named, renamed in CASES.values():
        compile(named, "<named>", "exec")
        compile(renamed, "<renamed>", "exec")

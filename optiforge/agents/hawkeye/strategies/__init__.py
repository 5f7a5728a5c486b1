"""Hawkeye's strategy taxonomy: ten GPU-kernel optimisation strategies, each with
per-architecture entries (``interpreter``, ``sm80``, ``sm90``).

An :class:`ArchEntry` holds a minimal expert example kernel (a module in
:mod:`.examples` exposing ``make_inputs/launch/reference/TOL``; the LLM is shown its
candidate part, ``candidate_part``, which passes the static checks), the tunable params,
what it needs to run (``requires``), and the detector. ``run_example(entry)`` is the
unit test that proves the example correct against torch.

Adding an architecture (say ``sm100``):

1. add it to ``ARCHS`` and give ``_entries`` a keyword for it (example module, params and
   ``requires`` per strategy; ``na`` says why a strategy does not apply there);
2. write an example module per strategy whose kernel differs on it (copy the nearest
   arch's where nothing differs) with ``make_inputs/launch/reference/TOL``; its candidate
   part must pass ``optiforge.kernels.checks`` (``tests/agents/hawkeye/test_strategies.py``
   checks every entry, and runs each example where its ``requires`` is met);
3. add its peaks to ``roofline.PEAKS`` and ``optiforge.kernels.traffic.PEAKS``, teach
   ``roofline.detect_arch`` its compute capability, and add it to ``HawkeyeConfig.arch``;
4. if the compiled IR shows the strategy, add its markers to ``detectors.IR_MARKERS``.

Detectors read the source (``ast``) on every architecture and look for the strategy's
effect in the code paths of the kernels a run launches (def-use slices: e.g. split-K is a
K loop whose range depends on a program id, its partials combined by atomics or a second
pass), never for its names; a kernel defined but not launched, a constant-false branch, a
value computed and not used do not count. Library kernels a candidate calls (the
templates' ``optiforge.kernels`` calls) are not inlined. Compiled-IR confirmation
(``detectors.ir_markers_found``) needs a GPU compiler target.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.hawkeye.strategies.detectors import (
    DetectionResult,
    Detector,
    detect_fusion,
    detect_persistent_swizzle,
    detect_pipelining,
    detect_split_k,
    detect_staging,
    detect_tensor_cores,
    detect_tiling,
    detect_tma,
    detect_vectorized,
    detect_warp_specialization,
    ir_markers_found,
    source_facts,
)
from optiforge.errors import ConfigError, InvalidCandidate

ARCHS: tuple[str, ...] = ("interpreter", "sm80", "sm90")
Requirement = Literal["interpreter-or-cuda", "cuda", "sm80", "sm90"]
_EXAMPLES = "optiforge.agents.hawkeye.strategies.examples."


class KernelFacts(BaseModel):
    """Profile / roofline facts about a task that strategies are chosen from."""

    model_config = ConfigDict(extra="forbid")

    bound: Literal["memory", "compute"]
    """Roofline side: arithmetic intensity below (memory) or above (compute) the ridge point."""
    matmul: bool = False
    reduction: bool = False
    """Row-wise reductions (softmax, norms, sums)."""
    elementwise_chain: int = 1
    """Ops that could run in one kernel (>1: fusion opportunity)."""
    small_output: bool = False
    """Few output tiles compared with SMs (split-K / persistent help)."""
    long_k: bool = False
    low_precision: bool = False
    """fp16/bf16 inputs allowed by the task's tolerance."""


class ArchEntry(BaseModel):
    """One strategy on one architecture."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    arch: str
    example: str | None
    """Example module under ``strategies.examples`` (None: not applicable here)."""
    params: dict[str, tuple[Any, ...]] = Field(default_factory=dict)
    """Tunables of the example (first value = default) for this architecture."""
    requires: Requirement = "interpreter-or-cuda"
    """What running the example needs: the interpreter suffices, or a CUDA device of this class."""
    not_applicable: str | None = None
    """Why the strategy does not apply on this architecture (set iff ``example`` is None)."""
    notes: str = ""
    detector: Detector
    """``detector(source) -> DetectionResult`` for candidates on this architecture."""

    def example_source(self) -> str:
        """The example's candidate part (what the LLM is shown): its kernels and ``launch``,
        without the unit test's ``make_inputs``/``reference``/``TOL`` (``candidate_part``).
        It passes the static checks every candidate must pass."""
        if self.example is None:
            raise InvalidCandidate(f"{self.arch}: {self.not_applicable}")
        return candidate_part(inspect.getsource(importlib.import_module(_EXAMPLES + self.example)))

    def runnable_here(self) -> tuple[bool, str]:
        """(can the example run in this process, why not)."""
        import torch

        if self.example is None:
            return False, f"not applicable on {self.arch}: {self.not_applicable}"
        cuda = torch.cuda.is_available()
        if self.requires == "interpreter-or-cuda":
            return True, ""
        if not cuda:
            return False, f"{self.arch} example needs a CUDA device ({self.requires}); none here"
        major, minor = torch.cuda.get_device_capability()
        need = {"cuda": 0, "sm80": 80, "sm90": 90}[self.requires]
        if major * 10 + minor < need:
            return False, f"{self.arch} example needs compute capability >= {need / 10:.1f}"
        return True, ""


_TEST_PARTS = ("make_inputs", "reference", "TOL")


def candidate_part(source: str) -> str:
    """An example module without its unit test: drops imports from ``optiforge`` (the
    examples' shared test inputs) and the top-level ``make_inputs``, ``reference`` and
    ``TOL``; keeps the imports, kernels, constants and ``launch``."""
    tree = ast.parse(source)
    lines = source.splitlines()
    kept: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("optiforge"):
            continue
        if isinstance(node, ast.FunctionDef) and node.name in _TEST_PARTS:
            continue
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in _TEST_PARTS for t in node.targets
        ):
            continue
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and node is tree.body[0]
        ):
            continue  # the module docstring (the strategy's description is in the prompt)
        start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
        kept.append("\n".join(lines[start - 1 : node.end_lineno]))
    return "\n\n\n".join(kept) + "\n"


class Strategy(BaseModel):
    """A named optimisation strategy with its when-to-use facts and per-arch entries."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    name: str
    title: str
    description: str
    when: list[str]
    """Human-readable when-to-use facts (shown to the LLM)."""
    score: Callable[[KernelFacts], float]
    """Relevance of the strategy for a task's facts (0 = irrelevant)."""
    archs: dict[str, ArchEntry]

    def entry(self, arch: str) -> ArchEntry:
        if arch not in self.archs:
            raise ConfigError(
                f"strategy {self.name} has no entry for arch {arch!r} (has {sorted(self.archs)})"
            )
        return self.archs[arch]

    def detect(self, source: str, arch: str = "interpreter") -> DetectionResult:
        return self.entry(arch).detector(source)


def _entries(
    detector: Detector,
    interpreter: str | None,
    sm80: str | None,
    sm90: str | None,
    params: dict[str, tuple[Any, ...]],
    *,
    sm90_requires: Requirement = "interpreter-or-cuda",
    sm80_requires: Requirement = "interpreter-or-cuda",
    na: dict[str, str] | None = None,
    sm90_params: dict[str, tuple[Any, ...]] | None = None,
) -> dict[str, ArchEntry]:
    na = na or {}
    return {
        "interpreter": ArchEntry(arch="interpreter", example=interpreter, params=params, detector=detector,
                                 not_applicable=na.get("interpreter")),
        "sm80": ArchEntry(arch="sm80", example=sm80, params=params, detector=detector,
                          requires=sm80_requires, not_applicable=na.get("sm80")),
        "sm90": ArchEntry(arch="sm90", example=sm90, params=sm90_params or params, detector=detector,
                          requires=sm90_requires, not_applicable=na.get("sm90")),
    }  # fmt: skip


_MM = {
    "BLOCK_M": (32, 16, 64, 128),
    "BLOCK_N": (32, 16, 64, 128),
    "BLOCK_K": (32, 16, 64),
    "num_warps": (4, 2, 8),
}

TAXONOMY: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy(
            name="tiling_autotune", title="Tiling + autotuning",
            description="Give each program a BLOCK_M x BLOCK_N output tile (or BLOCK_N row chunk) and search tile sizes, num_warps and num_stages per shape.",
            when=["always a first step", "compute-bound matmuls: large square tiles", "memory-bound: wide 1-D blocks"],
            score=lambda f: 1.0 + (1.0 if f.matmul else 0.5),
            archs=_entries(detect_tiling, "tiled_matmul", "tiled_matmul", "autotuned_matmul", _MM,
                           sm90_requires="cuda"),
        ),
        Strategy(
            name="coalesced_vectorized", title="Coalesced / vectorized access",
            description="Consecutive lanes touch consecutive addresses; hint alignment (tl.multiple_of, tl.max_contiguous) so loads become 128-bit.",
            when=["memory-bound element-wise or row kernels", "unit innermost stride"],
            score=lambda f: 2.0 if f.bound == "memory" and not f.matmul else 0.3,
            archs=_entries(detect_vectorized, "vectorized_axpby", "vectorized_axpby", "vectorized_axpby",
                           {"BLOCK": (256, 128, 512, 1024, 2048), "num_warps": (4, 1, 2, 8)}),
        ),
        Strategy(
            name="shared_memory_staging", title="Shared-memory / on-chip staging",
            description="Load a tile once into registers/shared memory and reuse it for every op that needs it instead of re-reading HBM.",
            when=["row reductions followed by element-wise use (softmax, norms)", "matmul operand reuse"],
            score=lambda f: 2.0 if f.reduction else (1.0 if f.matmul else 0.0),
            archs=_entries(detect_staging, "staged_softmax", "staged_softmax", "staged_softmax",
                           {"num_warps": (4, 1, 2, 8, 16)}),
        ),
        Strategy(
            name="software_pipelining", title="Software pipelining",
            description="Overlap the loads of the next K tiles with the math of the current one (tl.range num_stages / launch num_stages).",
            when=["loops over K with loads (matmul, attention)", "compute-bound kernels stalled on loads"],
            score=lambda f: 1.5 if f.matmul else 0.2,
            archs=_entries(detect_pipelining, "pipelined_matmul", "pipelined_matmul", "pipelined_matmul",
                           {**_MM, "NUM_STAGES": (3, 1, 2, 4)}),
        ),
        Strategy(
            name="tensor_cores_low_precision", title="Tensor cores and low precision",
            description="Route matmuls through tl.dot with fp16/bf16 (or tf32) operands and an fp32 accumulator.",
            when=["compute-bound matmul/attention", "tolerance admits fp16/bf16 inputs"],
            score=lambda f: (2.5 if f.matmul and f.bound == "compute" else 1.0 if f.matmul else 0.0) + (0.5 if f.low_precision else 0.0),
            archs=_entries(detect_tensor_cores, "fp16_dot", "fp16_dot", "fp16_dot", _MM),
        ),
        Strategy(
            name="tma", title="TMA (tensor memory accelerator)",
            description="Move whole tiles with descriptors (tl.make_tensor_descriptor) instead of per-lane pointer math; on sm80 the block-pointer form is the closest analogue.",
            when=["sm90+ matmul/attention with 16-byte aligned strides"],
            score=lambda f: 1.2 if f.matmul else 0.1,
            archs=_entries(detect_tma, "tma_matmul", "block_ptr_matmul", "tma_matmul", _MM,
                           sm90_requires="sm90"),
        ),
        Strategy(
            name="warp_specialization", title="Warp specialization",
            description="Split producer warps (TMA loads) from consumer warps (wgmma) inside one program (tl.range warp_specialize=True).",
            when=["sm90+ compute-bound matmul/attention after TMA + pipelining"],
            score=lambda f: 1.0 if f.matmul and f.bound == "compute" else 0.0,
            archs=_entries(detect_warp_specialization, "warp_specialized_matmul", None, "warp_specialized_matmul",
                           {**_MM, "NUM_STAGES": (2, 3, 4)}, sm90_requires="sm90",
                           na={"sm80": "Triton's automatic warp specialization targets sm90+ (Hopper TMA/wgmma); Ampere has no async producer path for it"}),
        ),
        Strategy(
            name="persistent_swizzle", title="Persistent kernels + tile swizzling",
            description="Launch about one program per SM that loops over output tiles, visited in GROUP_M groups for L2 reuse.",
            when=["many output tiles (large matmuls)", "launch/tail overhead visible"],
            score=lambda f: 1.3 if f.matmul else 0.0,
            archs=_entries(detect_persistent_swizzle, "persistent_matmul", "persistent_matmul", "persistent_matmul",
                           {"BLOCK_M": (16, 32, 64, 128), "BLOCK_N": (16, 32, 64, 128), "GROUP_M": (2, 4, 8)}),
        ),
        Strategy(
            name="split_k_reduction", title="Split-K / parallel reductions",
            description="Split a long reduction (K) over several programs and combine partial results with atomics or a second pass.",
            when=["small M x N with long K", "too few output tiles to fill the GPU"],
            score=lambda f: 2.0 if f.matmul and (f.small_output or f.long_k) else 0.3 if f.reduction else 0.0,
            archs=_entries(detect_split_k, "split_k_matmul", "split_k_matmul", "split_k_matmul",
                           {**_MM, "SPLIT_K": (4, 2, 8, 16)}),
        ),
        Strategy(
            name="fusion", title="Kernel fusion",
            description="Do a chain of ops (matmul + bias + activation, residual + norm...) in one kernel so intermediates never hit HBM.",
            when=["chains of element-wise ops / epilogues", "memory-bound sequences of small kernels"],
            score=lambda f: 2.5 if f.elementwise_chain > 1 else 0.2,
            archs=_entries(detect_fusion, "fused_matmul_bias_relu", "fused_matmul_bias_relu", "fused_matmul_bias_relu", _MM),
        ),
    )
}  # fmt: skip


def get_strategy(name: str) -> Strategy:
    """Taxonomy lookup with a one-line error naming the known strategies."""
    if name not in TAXONOMY:
        raise ConfigError(f"unknown strategy {name!r}; known: {', '.join(TAXONOMY)}")
    return TAXONOMY[name]


def bottlenecks(facts: KernelFacts, metrics: dict[str, float]) -> dict[str, tuple[float, str]]:
    """Strategy -> (score boost, why) from what was measured on the current kernel: the cost
    model's counts (``cost_launches``, ``cost_amplification``: requested over compulsory
    bytes, ``cost_tensor_cores``) and the roofline bound. Empty without counts (on a GPU the
    suite times kernels instead of counting them)."""
    out: dict[str, tuple[float, str]] = {}
    if "cost_launches" not in metrics:
        return out
    launches, amp = metrics["cost_launches"], metrics.get("cost_amplification", 1.0)
    if launches > 1:
        out["fusion"] = (
            2.5,
            f"{launches:.0f} launches per call: intermediates make a round trip through HBM",
        )
    if amp > 1.25:
        why = f"requests {amp:.2f}x the compulsory bytes: operands are re-read"
        out["shared_memory_staging"] = (1.5, why)
        out["tiling_autotune"] = (1.0, why)
    if facts.matmul and not metrics.get("cost_tensor_cores"):
        out["tensor_cores_low_precision"] = (
            2.5,
            "a matmul without tl.dot: it runs on CUDA cores, not tensor cores",
        )
    if facts.bound == "memory" and amp <= 1.25 and launches <= 1:
        out["coalesced_vectorized"] = (
            1.0,
            "memory-bound with no excess traffic: what is left is access width",
        )
    return out


def choose_strategies(
    facts: KernelFacts,
    arch: str = "interpreter",
    k: int = 3,
    boosts: dict[str, tuple[float, str]] | None = None,
) -> list[Strategy]:
    """The ``k`` strategies most relevant to ``facts`` (plus the measured ``boosts`` of
    ``bottlenecks``) that have an example on ``arch``."""
    boosts = boosts or {}

    def score(s: Strategy) -> float:
        return s.score(facts) + boosts.get(s.name, (0.0, ""))[0]

    ranked = sorted(
        (
            s
            for s in TAXONOMY.values()
            if s.archs.get(arch) is not None and s.archs[arch].example is not None
        ),
        key=lambda s: -score(s),
    )
    return [s for s in ranked if score(s) > 0][:k]


def detect_all(source: str, arch: str = "interpreter") -> dict[str, DetectionResult]:
    """Run every strategy's detector for ``arch`` on ``source``."""
    return {name: s.entry(arch).detector(source) for name, s in TAXONOMY.items() if arch in s.archs}


class ExampleCheck(BaseModel):
    """Outcome of running one example against its torch reference."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    max_abs_err: float
    atol: float
    rtol: float


def run_example(entry: ArchEntry, seeds: tuple[int, ...] = (0, 1), **params: Any) -> ExampleCheck:
    """The entry's unit test: run the example on seeded inputs and compare with its reference.

    Raises InvalidCandidate when the entry cannot run here (the caller skips with the reason).
    """
    ok_here, why = entry.runnable_here()
    if not ok_here:
        raise InvalidCandidate(why)
    mod = importlib.import_module(_EXAMPLES + str(entry.example))
    worst, ok, tol = 0.0, True, (0.0, 0.0)
    for seed in seeds:
        inputs = mod.make_inputs(seed)
        out = mod.launch(*inputs, **params)
        ref = mod.reference(*inputs)
        tol = mod.TOL[str(ref.dtype).removeprefix("torch.")]
        if out.shape != ref.shape or out.dtype != ref.dtype:
            return ExampleCheck(ok=False, max_abs_err=float("inf"), atol=tol[0], rtol=tol[1])
        err = (out.double() - ref.double()).abs()
        worst = max(worst, float(err.max()))
        ok = ok and bool((err <= tol[0] + tol[1] * ref.double().abs()).all())
    return ExampleCheck(ok=ok, max_abs_err=worst, atol=tol[0], rtol=tol[1])


__all__ = [
    "ARCHS",
    "TAXONOMY",
    "ArchEntry",
    "DetectionResult",
    "ExampleCheck",
    "KernelFacts",
    "Strategy",
    "choose_strategies",
    "detect_all",
    "get_strategy",
    "ir_markers_found",
    "run_example",
    "source_facts",
]

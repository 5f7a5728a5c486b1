"""Hawkeye's search problem: Triton candidates for one KernelArena task on the shared loop,
and the task's roofline facts on a target architecture.

Arithmetic intensity (flops per byte of compulsory HBM traffic) at the task's timing
shape is compared with the ridge point of the target (peak fp16 tensor flops / HBM
bandwidth): below it the kernel is memory-bound, above it compute-bound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optiforge.agents.hawkeye.strategies import TAXONOMY, KernelFacts, detect_all
from optiforge.agents.kit import Evaluated, Proposal, RunContext
from optiforge.agents.kit.evaluator import SandboxedTaskEvaluator
from optiforge.agents.kit.lineage import Lesson
from optiforge.errors import InvalidCandidate
from optiforge.evals.protocol import Score
from optiforge.evals.suites.kernelarena.protocol import KernelTask
from optiforge.kernels.checks import check_candidate_source
from optiforge.kernels.templates import read_params

#: arch -> (peak dense fp16 TFLOP/s, HBM TB/s); interpreter uses sm80 numbers for planning.
PEAKS: dict[str, tuple[float, float]] = {
    "sm80": (312.0, 2.0),
    "sm90": (989.0, 3.35),
    "interpreter": (312.0, 2.0),
}


def detect_arch() -> str:
    """``sm90``/``sm80`` from the CUDA device's capability, ``interpreter`` without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return "interpreter"
    major, _ = torch.cuda.get_device_capability()
    return "sm90" if major >= 9 else "sm80"


def flops_and_bytes(op: str, shape: dict[str, Any], elem_bytes: int = 2) -> tuple[float, float]:
    """Approximate flops and compulsory bytes of ``op`` at ``shape``."""
    m, n = float(shape.get("M", 1)), float(shape.get("N", 1))
    if op in ("matmul", "matmul_bias_relu", "gelu_linear"):
        k = float(shape["K"])
        return 2 * m * n * k, elem_bytes * (m * k + k * n + m * n)
    if op == "attention":
        b, h, d = (float(shape[x]) for x in ("B", "H", "D"))
        return 4 * b * h * n * n * d, elem_bytes * 4 * b * h * n * d
    n_in = {"add": 2, "mul": 2, "axpby": 2, "silu_mul": 2, "add_layernorm": 2}.get(op, 1)
    n_out = 1 if op not in ("rowsum", "rowmax", "cross_entropy") else 0
    flops_per = {"gelu": 8, "softmax": 5, "logsoftmax": 5, "layernorm": 8, "rmsnorm": 5, "cross_entropy": 5,
                 "add_layernorm": 9, "silu_mul": 6}.get(op, 1)  # fmt: skip
    return flops_per * m * n, elem_bytes * m * n * (n_in + n_out)


def task_facts(task: KernelTask, arch: str) -> tuple[KernelFacts, dict[str, float]]:
    """KernelFacts of a KernelArena task plus the roofline numbers behind them."""
    shape = task.spec.timing["shape"]
    flops, nbytes = flops_and_bytes(task.op, shape)
    tflops, tbs = PEAKS.get(arch, PEAKS["sm80"])
    ridge = tflops / tbs  # flops per byte where the roofline bends
    intensity = flops / nbytes
    given = dict(task.spec.facts)
    given["bound"] = "compute" if intensity > ridge else "memory"
    if task.op in ("matmul", "matmul_bias_relu", "gelu_linear"):
        m, n, k = (float(shape[x]) for x in ("M", "N", "K"))
        given.setdefault("small_output", m * n < 128 * 128 * 100)
        given.setdefault("long_k", k > 4 * max(m, n))
    numbers = {"flops": flops, "bytes": nbytes, "intensity": intensity, "ridge": ridge,
               "min_time_us": max(flops / (tflops * 1e12), nbytes / (tbs * 1e12)) * 1e6}  # fmt: skip
    return KernelFacts.model_validate(given), numbers


def attempt(ev: Evaluated) -> dict[str, Any]:
    """One evaluated candidate as an attempt: strategy, params, outcome, failure reason.

    Proposers read attempts from the search's checkpointed ``history`` (through this),
    so a resumed run shows the LLM the same previous attempts as an uninterrupted one.
    """
    return {"strategy": ev.payload.get("strategy", "?"), "params": ev.payload.get("params"), "passed": ev.passed,
            "value": ev.value, "error": ev.error, "applied": ev.payload.get("applied", []),
            "strategy_applied": ev.payload.get("strategy_applied")}  # fmt: skip


def strategy_checks(history: list[Evaluated]) -> dict[str, Any]:
    """How often an LLM attempt applied the strategy it was asked for (the detectors' verdict
    on its source): ``claimed``, ``applied``, ``rate`` (None without claims), and the ids of
    the attempts whose strategy is absent (``flagged``)."""
    claims = [e for e in history if e.payload.get("strategy_applied") is not None]
    applied = [e for e in claims if e.payload["strategy_applied"]]
    return {"claimed": len(claims), "applied": len(applied),
            "rate": len(applied) / len(claims) if claims else None,
            "flagged": [e.id for e in claims if not e.payload["strategy_applied"]][:20]}  # fmt: skip


class KernelProblem:
    """Search over Triton sources for a KernelArena task (payload: code, strategy, params)."""

    def __init__(
        self, task: KernelTask, arch: str, backend: str = "local", events_path: str | None = None
    ) -> None:
        self.task = task
        self.arch = arch
        self.higher_is_better = True
        self.backend = backend
        self.events_path = events_path
        self.facts: KernelFacts
        self.roofline: dict[str, float]
        self.facts, self.roofline = task_facts(task, arch)

    def initial(self, ctx: RunContext) -> list[Proposal]:
        params = read_params(self.task.seed_code) or {}
        return [Proposal(payload={"code": self.task.seed_code, "strategy": "seed", "params": params},
                         origin="seed", rationale="the task's starting kernel")]  # fmt: skip

    def materialize(self, proposal: Proposal, ctx: RunContext) -> dict[str, Any]:
        code = proposal.payload.get("code")
        check_candidate_source(code if isinstance(code, str) else "")  # raises InvalidCandidate
        assert isinstance(code, str)
        try:
            applied = sorted(k for k, v in detect_all(code, self.arch).items() if v.applies)
        except InvalidCandidate:
            applied = []
        strategy = str(proposal.payload.get("strategy", "unknown"))
        # an LLM attempt was asked for one taxonomy strategy: is it in the kernel it wrote?
        claimed = proposal.origin == "llm" and strategy in TAXONOMY
        return {"code": code, "strategy": strategy, "params": dict(proposal.payload.get("params") or {}),
                "applied": applied, "strategy_applied": (strategy in applied) if claimed else None}  # fmt: skip

    def evaluator(self) -> Callable[[dict[str, Any]], Score]:
        return SandboxedTaskEvaluator(self.task, self.backend, self.events_path)

    def reflect(
        self, batch: list[Evaluated], population: list[Evaluated], ctx: RunContext
    ) -> list[Lesson]:
        # strategy names, detector verdicts and values are the harness's (measured); the
        # params are read from the LLM's source (agent text); an error is candidate output
        lessons: list[Lesson] = []
        best = population[0].value if population else None
        for ev in batch:
            strategy = ev.payload.get("strategy", "?")
            if ev.payload.get("strategy_applied") is False:
                lessons.append(Lesson(provenance="measured", text=f"{self.task.op} on {self.arch}: asked for strategy {strategy}, the kernel written does not "
                               f"apply it (detected: {', '.join(ev.payload.get('applied', [])) or 'none'})"))  # fmt: skip
            if ev.error:
                lessons.append(Lesson(provenance="candidate", text=f"{self.task.op} ({self.task.family}) on {self.arch}: strategy {strategy} "
                               f"params {ev.payload.get('params')} failed: {ev.error[:240]}"))  # fmt: skip
            elif ev.value is not None and (best is None or ev.value > best):
                lessons.append(Lesson(provenance="agent", text=f"{self.task.op} on {self.arch}: strategy {strategy} params {ev.payload.get('params')} "
                               f"correct, value {ev.value:.4g} (applied: {', '.join(ev.payload.get('applied', []))})"))  # fmt: skip
        return lessons[:4]

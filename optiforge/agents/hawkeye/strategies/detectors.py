"""Source/AST facts about a candidate kernel, and one detector per strategy.

A detector answers "does this candidate apply the strategy?" from the source alone
(``ast`` only: nothing is imported or executed), so it works for any architecture.
Compiled-IR inspection (:func:`ir_markers_found`) needs a GPU compiler target and is
guarded by the caller.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from optiforge.errors import InvalidCandidate


class DetectionResult(BaseModel):
    """Whether a candidate applies a strategy, with the evidence (source snippets/facts)."""

    model_config = ConfigDict(extra="forbid")

    applies: bool
    evidence: list[str] = Field(default_factory=list)


def _dotted(node: ast.AST) -> str:
    """``tl.atomic_add`` for an Attribute chain, ``name`` for a Name, '' otherwise."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


_ELEMENTWISE = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sigmoid", "erf", "maximum",
                "minimum", "where", "abs", "cos", "sin", "fma"}  # fmt: skip
_REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "reduce", "cumsum", "xor_sum"}


@dataclass
class SourceFacts:
    """Everything the detectors look at, gathered in one AST walk."""

    calls: list[str] = field(default_factory=list)
    """Dotted names of every call (``tl.dot``, ``triton.cdiv``...)."""
    call_kwargs: dict[str, set[str]] = field(default_factory=dict)
    """Dotted call name -> keyword names used with it."""
    kwarg_values: dict[str, list[ast.AST]] = field(default_factory=dict)
    """Keyword name -> value nodes over all calls (``num_stages`` -> [3, ...])."""
    decorators: list[str] = field(default_factory=list)
    jit_functions: list[ast.FunctionDef] = field(default_factory=list)
    constexpr_params: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    binops: dict[str, int] = field(default_factory=dict)
    """Binary operator class name -> count inside ``@triton.jit`` functions."""

    def has_call(self, suffix: str) -> bool:
        return any(c == suffix or c.endswith("." + suffix) for c in self.calls)

    def count_calls(self, suffixes: set[str], prefix: str = "tl") -> int:
        return sum(
            1 for c in self.calls if c.startswith(prefix + ".") and c.split(".")[-1] in suffixes
        )


def source_facts(source: str) -> SourceFacts:
    """Parse ``source`` (raises InvalidCandidate on a syntax error) and collect facts."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise InvalidCandidate(f"syntax error: {err.msg} (line {err.lineno})") from err
    facts = SourceFacts()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            facts.calls.append(name)
            kws = {k.arg for k in node.keywords if k.arg}
            facts.call_kwargs.setdefault(name, set()).update(kws)
            for k in node.keywords:
                if k.arg:
                    facts.kwarg_values.setdefault(k.arg, []).append(k.value)
        elif isinstance(node, ast.FunctionDef):
            decos = [_dotted(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
            facts.decorators += decos
            if any(d.endswith("jit") for d in decos):
                facts.jit_functions.append(node)
                for arg in node.args.args:
                    if arg.annotation is not None and _dotted(arg.annotation).endswith("constexpr"):
                        facts.constexpr_params.add(arg.arg)
        elif isinstance(node, ast.Name):
            facts.names.add(node.id)
        elif isinstance(node, ast.Attribute):
            facts.names.add(node.attr)
    for fn in facts.jit_functions:
        for node in ast.walk(fn):
            if isinstance(node, ast.BinOp):
                key = type(node.op).__name__
                facts.binops[key] = facts.binops.get(key, 0) + 1
    return facts


def _int_values(nodes: list[ast.AST]) -> list[int]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, int)]


Detector = Callable[[str], DetectionResult]


def detect_tiling(src: str) -> DetectionResult:
    f = source_facts(src)
    ev = []
    if any(d.endswith("autotune") for d in f.decorators):
        ev.append("@triton.autotune decorator")
    blocks = sorted(p for p in f.constexpr_params if p.startswith("BLOCK"))
    if len(blocks) >= 2 and f.has_call("program_id"):
        ev.append(f"2-D tile constexprs {blocks}")
    return DetectionResult(applies=bool(ev), evidence=ev)


def detect_vectorized(src: str) -> DetectionResult:
    f = source_facts(src)
    ev = [
        f"tl.{h} hint" for h in ("multiple_of", "max_contiguous", "max_constancy") if f.has_call(h)
    ]
    return DetectionResult(applies=bool(ev), evidence=ev)


def detect_staging(src: str) -> DetectionResult:
    """A loaded tile is reused after a reduction over it (one HBM read, several uses)."""
    f = source_facts(src)
    ev: list[str] = []
    for fn in f.jit_functions:
        loaded: set[str] = set()
        for stmt in ast.walk(fn):
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.AST):
                inner = [_dotted(c.func) for c in ast.walk(stmt.value) if isinstance(c, ast.Call)]
                if any(c.endswith("load") for c in inner):
                    loaded |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        reduced: set[str] = set()
        for c in ast.walk(fn):
            if isinstance(c, ast.Call) and _dotted(c.func).split(".")[-1] in _REDUCTIONS and c.args:
                reduced |= {n.id for n in ast.walk(c.args[0]) if isinstance(n, ast.Name)} & loaded
        for name in sorted(reduced):
            uses = sum(
                1
                for n in ast.walk(fn)
                if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
            )
            if uses >= 2:
                ev.append(f"loaded tile '{name}' reduced and reused ({uses} uses) in {fn.name}")
    if f.has_call("dot") and f.count_calls({"load"}) >= 2:
        ev.append("tl.dot operands staged as on-chip tiles")
    return DetectionResult(applies=bool(ev), evidence=ev)


def detect_pipelining(src: str) -> DetectionResult:
    f = source_facts(src)
    ev = []
    if "num_stages" in f.call_kwargs.get("tl.range", set()):
        ev.append("tl.range(..., num_stages=...) loop")
    stages = _int_values(f.kwarg_values.get("num_stages", []))
    if any(s > 1 for s in stages) and any(
        isinstance(n, ast.For) for fn in f.jit_functions for n in ast.walk(fn)
    ):
        ev.append(f"launch/config with num_stages={max(stages)} over a K loop")
    if any(n == "NUM_STAGES" for n in f.constexpr_params):
        ev.append("NUM_STAGES constexpr")
    return DetectionResult(applies=bool(ev), evidence=ev)


def detect_tensor_cores(src: str) -> DetectionResult:
    f = source_facts(src)
    if not f.has_call("dot"):
        return DetectionResult(applies=False, evidence=["no tl.dot"])
    ev = ["tl.dot (mma/wgmma on sm80+/sm90)"]
    if {"float16", "bfloat16", "float8e4nv"} & f.names:
        ev.append("low-precision operands (fp16/bf16/fp8)")
    if "input_precision" in f.call_kwargs.get("tl.dot", set()):
        ev.append("explicit input_precision")
    return DetectionResult(applies=True, evidence=ev)


def detect_tma(src: str) -> DetectionResult:
    f = source_facts(src)
    ev = [n for n in ("make_tensor_descriptor", "TensorDescriptor", "make_block_ptr",
                      "_experimental_make_tensor_descriptor") if f.has_call(n)]  # fmt: skip
    return DetectionResult(applies=bool(ev), evidence=[f"{e} call" for e in ev])


def detect_warp_specialization(src: str) -> DetectionResult:
    f = source_facts(src)
    ev = []
    if "warp_specialize" in f.call_kwargs.get("tl.range", set()):
        ev.append("tl.range(..., warp_specialize=...)")
    if f.has_call("warp_specialize"):
        ev.append("gl.warp_specialize call")
    return DetectionResult(applies=bool(ev), evidence=ev)


def detect_persistent_swizzle(src: str) -> DetectionResult:
    f = source_facts(src)
    ev = []
    if "GROUP_M" in f.constexpr_params or f.has_call("swizzle2d"):
        ev.append("GROUP_M / swizzle2d tile order")
    for fn in f.jit_functions:
        for node in ast.walk(fn):
            # A loop whose start is the program id and whose step is the grid size.
            if (
                isinstance(node, ast.For)
                and isinstance(node.iter, ast.Call)
                and len(node.iter.args) == 3
            ):
                start = node.iter.args[0]
                uses_pid = any(
                    isinstance(c, ast.Call) and _dotted(c.func).endswith("program_id")
                    for c in ast.walk(start)
                ) or (isinstance(start, ast.Name) and start.id in {"start", "pid", "start_pid"})
                if uses_pid:
                    ev.append(f"persistent tile loop in {fn.name}")
    return DetectionResult(applies=bool(ev), evidence=ev)


def detect_split_k(src: str) -> DetectionResult:
    f = source_facts(src)
    ev = []
    if f.has_call("atomic_add"):
        ev.append("tl.atomic_add of partial results")
    if "SPLIT_K" in f.names:
        ev.append("SPLIT_K parameter")
    return DetectionResult(applies=bool(ev), evidence=ev)


def detect_fusion(src: str) -> DetectionResult:
    """Several distinct compute stages (matmul, reductions, element-wise ops) in one kernel."""
    f = source_facts(src)
    ev = []
    for fn in f.jit_functions:
        kinds = set()
        calls = [_dotted(c.func).split(".")[-1] for c in ast.walk(fn) if isinstance(c, ast.Call)]
        if "dot" in calls:
            kinds.add("matmul")
        kinds |= {f"reduce:{c}" for c in calls if c in _REDUCTIONS}
        kinds |= {f"ew:{c}" for c in calls if c in _ELEMENTWISE}
        if any(
            isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add | ast.Mult | ast.Sub | ast.Div)
            for n in ast.walk(fn)
            if _touches_value(n)
        ):
            kinds.add("ew:arith")
        if len(kinds) >= 3:
            ev.append(f"{fn.name} fuses {sorted(kinds)}")
    return DetectionResult(applies=bool(ev), evidence=ev)


def _touches_value(node: ast.AST) -> bool:
    """Heuristic: arithmetic on loaded/accumulated values, not on index math (``pid * BLOCK``)."""
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    index_like = {
        "tl",
        "pid",
        "row",
        "cols",
        "offs",
        "rm",
        "rn",
        "rk",
        "start",
        "k0",
        "BLOCK",
        "BLOCK_M",
        "BLOCK_N",
        "BLOCK_K",
    }
    return (
        bool(names)
        and not names <= index_like
        and not any(
            n.endswith(("_ptr", "stride")) or n.startswith("s") and len(n) <= 4 for n in names
        )
    )


#: Markers in the compiled TTGIR / PTX that prove a strategy survived compilation.
IR_MARKERS: dict[str, tuple[str, ...]] = {
    "tensor_cores_low_precision": ("mma", "wgmma", "warp_group_dot"),
    "tma": ("cp.async.bulk.tensor", "async_tma_copy", "tensormap"),
    "software_pipelining": ("cp.async", "async_copy_global_to_local", "mbarrier"),
    "warp_specialization": ("warp_specialize", "setmaxnreg"),
    "split_k_reduction": ("atom.global", "red.global", "atomic_rmw"),
}


def ir_markers_found(strategy: str, asm: dict[str, str]) -> DetectionResult | None:
    """Look for ``strategy``'s markers in a compiled kernel's ``asm`` dict (ttgir/ptx...).

    Returns None when the strategy has no IR signature. Only meaningful with a GPU target:
    the interpreter compiles nothing, so callers pass ``CompiledKernel.asm`` from CUDA.
    """
    markers = IR_MARKERS.get(strategy)
    if markers is None:
        return None
    hits = [
        f"{m} in {stage}"
        for stage, text in asm.items()
        if isinstance(text, str)
        for m in markers
        if m in text
    ]
    return DetectionResult(applies=bool(hits), evidence=hits[:6])

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


Detector = Callable[[str], DetectionResult]


# --- the kernels' code paths: live functions and a def-use slice ------------------------


def _const_false(test: ast.expr) -> bool:
    """``if False`` / ``if 0`` / ``if None``: a branch no run takes."""
    return isinstance(test, ast.Constant) and not test.value


class _Flow:
    """Def-use facts of one ``@triton.jit`` function, flow-insensitive: every assignment of a
    name (plain, augmented, annotated, a ``for`` target bound to its ``range``) is one of its
    definitions; branches under a constant-false test are dropped (dead code)."""

    def __init__(self, fn: ast.FunctionDef) -> None:
        self.fn = fn
        self.defs: dict[str, list[ast.AST]] = {}
        self.loops: list[ast.For] = []
        self.stmts: list[ast.stmt] = [
            st for st in fn.body if not (isinstance(st, ast.If) and _const_false(st.test))
        ]
        self._collect(fn.body)

    def _collect(self, body: list[ast.stmt]) -> None:
        for st in body:
            if isinstance(st, ast.If) and _const_false(st.test):
                self._collect(st.orelse)
                continue
            if isinstance(st, ast.Assign):
                for t in st.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            self.defs.setdefault(n.id, []).append(st.value)
            elif isinstance(st, ast.AugAssign | ast.AnnAssign) and st.value is not None:
                if isinstance(st.target, ast.Name):
                    rhs = (ast.BinOp(left=st.target, op=st.op, right=st.value)
                           if isinstance(st, ast.AugAssign) else st.value)  # fmt: skip
                    self.defs.setdefault(st.target.id, []).append(rhs)
            elif isinstance(st, ast.For):
                self.loops.append(st)
                for n in ast.walk(st.target):
                    if isinstance(n, ast.Name):
                        self.defs.setdefault(n.id, []).append(st.iter)
            for field_name in ("body", "orelse"):
                inner = getattr(st, field_name, None)
                if isinstance(inner, list) and not isinstance(st, ast.FunctionDef):
                    self._collect(inner)

    def slice(self, expr: ast.AST, data_only: bool = False) -> list[ast.AST]:
        """Every node ``expr`` is computed from: its own nodes and, through the names it
        reads, their definitions (transitively). ``data_only``: do not follow a load's
        address and mask (the loaded value is data; its index math is not)."""
        out: list[ast.AST] = []
        seen: set[str] = set()
        todo = [expr]
        while todo:
            node = todo.pop()
            out.append(node)
            if isinstance(node, ast.Name) and node.id not in seen:
                seen.add(node.id)
                todo.extend(self.defs.get(node.id, []))
            if data_only and _is_load(node):
                continue
            todo.extend(ast.iter_child_nodes(node))
        return out

    def depends(self, expr: ast.AST, pred: Callable[[ast.AST], bool]) -> bool:
        return any(pred(n) for n in self.slice(expr))

    def calls(self, within: list[ast.stmt] | None = None) -> list[ast.Call]:
        """The live calls of the function (or of ``within``)."""
        out: dict[int, ast.Call] = {}
        for st in self.stmts if within is None else within:
            for n in _walk_live(st):
                if isinstance(n, ast.Call):
                    out[id(n)] = n
        return list(out.values())

    def memory_ops(self) -> list[tuple[str, ast.Call, ast.AST | None, ast.AST | None]]:
        """(kind, call, address, stored value) of every live load/store/atomic: ``tl.load``
        and ``tl.store``, descriptor ``x.load``/``x.store`` and ``tl.atomic_*``."""
        out: list[tuple[str, ast.Call, ast.AST | None, ast.AST | None]] = []
        seen: set[int] = set()
        for c in self.calls():
            if id(c) in seen:
                continue
            seen.add(id(c))
            name = _dotted(c.func)
            last = name.split(".")[-1] if name else getattr(c.func, "attr", "")
            if not isinstance(c.func, ast.Attribute):
                continue
            tl_call = name.startswith("tl.") or name.startswith("triton.language.")
            addr = c.args[0] if c.args else None
            if last == "load":
                out.append(("load", c, addr if tl_call else c.func.value, None))
            elif last == "store":
                value = c.args[1] if len(c.args) > 1 else _kw(c, "value")
                out.append(("store", c, addr if tl_call else c.func.value, value))
            elif last.startswith("atomic_") and tl_call:
                out.append(("atomic", c, addr, c.args[1] if len(c.args) > 1 else None))
        return out


def _walk_live(node: ast.AST) -> list[ast.AST]:
    """``ast.walk`` without the bodies of constant-false branches."""
    out: list[ast.AST] = []
    todo = [node]
    while todo:
        n = todo.pop()
        out.append(n)
        if isinstance(n, ast.If) and _const_false(n.test):
            todo.extend(n.orelse)
            continue
        todo.extend(ast.iter_child_nodes(n))
    return out


def _is_load(n: ast.AST) -> bool:
    """``tl.load(...)`` or a descriptor's ``x.load(...)``."""
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "load"


def _is_call(suffix: str) -> Callable[[ast.AST], bool]:
    def pred(n: ast.AST) -> bool:
        return isinstance(n, ast.Call) and _dotted(n.func).split(".")[-1] == suffix

    return pred


_PID = _is_call("program_id")
_ARANGE = _is_call("arange")
_LOAD_CALL = _is_load


def live_kernels(tree: ast.Module) -> list[_Flow]:
    """The ``@triton.jit`` functions a run reaches: launched from host code
    (``kernel[grid](...)``) or called from a reached kernel. A source with no host function
    (kernels only) has every kernel live; a kernel defined but never launched is dead."""
    jit = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            decos = [_dotted(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
            if any(d.endswith("jit") for d in decos):
                jit[node.name] = node
    host = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name not in jit]
    if not host:
        return [_Flow(f) for f in jit.values()]
    live: set[str] = set()
    for fn in host:
        for n in _walk_live(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript):
                name = _dotted(n.func.value)
                if name in jit:
                    live.add(name)
    todo = list(live)
    while todo:
        for n in _walk_live(jit[todo.pop()]):
            callee = n.func.id if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) else ""
            if callee in jit and callee not in live:
                live.add(callee)
                todo.append(callee)
    return [_Flow(jit[name]) for name in jit if name in live]


def _flows(src: str) -> list[_Flow]:
    try:
        tree = ast.parse(src)
    except SyntaxError as err:
        raise InvalidCandidate(f"syntax error: {err.msg} (line {err.lineno})") from err
    return live_kernels(tree)


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _tile_dims(flow: _Flow, addr: ast.AST) -> int:
    """How many axes of ``tl.arange`` lanes ``addr`` spans: ``x[:, None]`` and
    ``y[None, :]`` broadcasts of arange-derived offsets make a 2-D tile."""
    axes: set[str] = set()
    for n in flow.slice(addr):
        if (
            isinstance(n, ast.Subscript)
            and isinstance(n.slice, ast.Tuple)
            and flow.depends(n.value, _ARANGE)
        ):
            axes.add(ast.dump(n.slice))
    if axes:
        return len(axes)
    return 1 if flow.depends(addr, _ARANGE) else 0


def _block_shape_dims(call: ast.Call, pos: int, kw: str) -> int:
    shape = call.args[pos] if len(call.args) > pos else _kw(call, kw)
    return len(shape.elts) if isinstance(shape, ast.Tuple | ast.List) else 0


_DESCRIPTORS = {"make_block_ptr": (4, "block_shape", 3, "offsets"),
                "make_tensor_descriptor": (3, "block_shape", None, None),
                "_experimental_make_tensor_descriptor": (3, "block_shape", None, None)}  # fmt: skip


def _descriptor(flow: _Flow, addr: ast.AST | None) -> ast.Call | None:
    """The block pointer / tensor descriptor call ``addr`` comes from, if any."""
    if addr is None:
        return None
    for n in flow.slice(addr):
        if isinstance(n, ast.Call) and _dotted(n.func).split(".")[-1] in _DESCRIPTORS:
            return n
    return None


# --- one detector per strategy: the strategy's effect, whatever the names ----------------


def detect_tiling(src: str) -> DetectionResult:
    """Each program owns a 2-D tile: a load or store whose address is program-id offsets plus
    ``tl.arange`` lanes over two axes (or a 2-D block pointer / descriptor placed by the
    program id). ``@triton.autotune`` on a launched kernel is reported with it."""
    ev = []
    for f in _flows(src):
        for kind, call, addr, _ in f.memory_ops():
            desc = _descriptor(f, addr)
            if desc is not None:
                spec = _DESCRIPTORS[_dotted(desc.func).split(".")[-1]]
                if _block_shape_dims(desc, spec[0], spec[1]) >= 2 and f.depends(call, _PID):
                    ev.append(f"{f.fn.name}: 2-D block {kind} placed by the program id")
                    break
            elif addr is not None and f.depends(addr, _PID) and _tile_dims(f, addr) >= 2:
                ev.append(
                    f"{f.fn.name}: {kind} of a 2-D tile (program-id offsets + tl.arange over two axes)"
                )
                break
        if ev and any(_dotted(d.func if isinstance(d, ast.Call) else d).endswith("autotune")
                      for d in f.fn.decorator_list):  # fmt: skip
            ev.append(f"{f.fn.name}: @triton.autotune over its configs")
    return DetectionResult(applies=bool(ev), evidence=ev)


_HINTS = {"multiple_of", "max_contiguous", "max_constancy"}


def detect_vectorized(src: str) -> DetectionResult:
    """Alignment/contiguity hints (``tl.multiple_of``, ``tl.max_contiguous``) on offsets that
    reach a load or store address (a hint computed and never used changes nothing)."""
    ev = []
    for f in _flows(src):
        for kind, _, addr, _ in f.memory_ops():
            if addr is None:
                continue
            hints = sorted({_dotted(n.func).split(".")[-1] for n in f.slice(addr)
                            if isinstance(n, ast.Call) and _dotted(n.func).split(".")[-1] in _HINTS})  # fmt: skip
            if hints:
                ev.append(
                    f"{f.fn.name}: {kind} address carries {', '.join('tl.' + h for h in hints)}"
                )
                break
    return DetectionResult(applies=bool(ev), evidence=ev)


def detect_staging(src: str) -> DetectionResult:
    """A loaded tile is reused on chip: reduced and used again (one HBM read, several uses),
    or both ``tl.dot`` operands are loaded tiles."""
    ev: list[str] = []
    for f in _flows(src):
        loaded = {name for name, defs in f.defs.items()
                  if any(_LOAD_CALL(n) for d in defs for n in ast.walk(d))}  # fmt: skip
        for c in f.calls():
            last = _dotted(c.func).split(".")[-1]
            if last in _REDUCTIONS and c.args:
                for name in sorted(
                    {n.id for n in ast.walk(c.args[0]) if isinstance(n, ast.Name)} & loaded
                ):
                    uses = sum(1 for st in f.stmts for n in _walk_live(st)
                               if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load))  # fmt: skip
                    if uses >= 2:
                        ev.append(
                            f"loaded tile '{name}' reduced and reused ({uses} uses) in {f.fn.name}"
                        )
            if (
                last == "dot"
                and len(c.args) >= 2
                and all(f.depends(a, _LOAD_CALL) for a in c.args[:2])
            ):
                ev.append(f"{f.fn.name}: tl.dot operands are loaded on-chip tiles")
    return DetectionResult(applies=bool(sorted(set(ev))), evidence=sorted(set(ev)))


def _loop_loads(f: _Flow, loop: ast.For) -> bool:
    return any(_LOAD_CALL(n) or (isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "load")
               for st in loop.body for n in _walk_live(st))  # fmt: skip


def _more_than_one(node: ast.expr | None) -> bool:
    """A stage count that can exceed 1 (a literal > 1 or a parameter)."""
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and node.value > 1
    return True


def detect_pipelining(src: str) -> DetectionResult:
    """A loop whose loads are software-pipelined: ``tl.range(..., num_stages=S)`` with S > 1
    over loads, or ``num_stages`` > 1 given to a launch/config of a kernel with such a loop."""
    ev = []
    flows = _flows(src)
    tree = ast.parse(src)
    loops_with_loads = {f.fn.name for f in flows if any(_loop_loads(f, lp) for lp in f.loops)}
    for f in flows:
        for lp in f.loops:
            it = lp.iter
            if (isinstance(it, ast.Call) and _dotted(it.func).endswith("range")
                    and _more_than_one(_kw(it, "num_stages")) and _loop_loads(f, lp)):  # fmt: skip
                ev.append(f"{f.fn.name}: tl.range(..., num_stages>1) over loads")
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and _more_than_one(_kw(n, "num_stages")):
            target = _dotted(n.func.value) if isinstance(n.func, ast.Subscript) else ""
            if target in loops_with_loads:
                ev.append(f"launch of {target} with num_stages > 1")
            elif _dotted(n.func).endswith("Config") and loops_with_loads:
                ev.append("autotune config with num_stages > 1 for a kernel with a load loop")
    ev = sorted(set(ev))
    return DetectionResult(applies=bool(ev), evidence=ev)


_LOW = {"float16", "bfloat16", "float8e4nv", "float8e5"}


def detect_tensor_cores(src: str) -> DetectionResult:
    """A live ``tl.dot`` (mma / wgmma on sm80+ / sm90 for fp16/bf16/tf32 operands); notes an
    explicit low-precision cast of its operands and an fp32 ``ieee`` precision (tensor
    cores then only for fp16/bf16 inputs)."""
    ev: list[str] = []
    for f in _flows(src):
        for c in f.calls():
            if _dotted(c.func).split(".")[-1] != "dot" or not _dotted(c.func).startswith("tl"):
                continue
            if not ev:
                ev.append(f"{f.fn.name}: tl.dot (mma/wgmma on sm80+/sm90)")
            if any(
                isinstance(n, ast.Attribute) and n.attr in _LOW
                for a in c.args[:2]
                for n in f.slice(a)
            ):
                ev.append("low-precision operands (fp16/bf16/fp8) reach tl.dot")
            prec = _kw(c, "input_precision")
            if isinstance(prec, ast.Constant) and prec.value == "ieee":
                ev.append("input_precision='ieee': tensor cores only for fp16/bf16 inputs")
    if not ev:
        return DetectionResult(applies=False, evidence=["no live tl.dot"])
    return DetectionResult(applies=True, evidence=sorted(set(ev), key=ev.index))


def detect_tma(src: str) -> DetectionResult:
    """Tiles moved through a tensor descriptor or block pointer: a load/store whose address
    is one (creating one and loading through plain pointers moves nothing by it)."""
    ev = []
    for f in _flows(src):
        for _, _, addr, _ in f.memory_ops():
            desc = _descriptor(f, addr)
            if desc is not None:
                ev.append(f"{_dotted(desc.func).split('.')[-1]} call")
    ev = sorted(set(ev))
    return DetectionResult(applies=bool(ev), evidence=ev)


def detect_warp_specialization(src: str) -> DetectionResult:
    """A loop ``tl.range(..., warp_specialize=True)`` (not a literal False) that loads and
    computes, or a ``gl.warp_specialize`` call in live code."""
    ev = []
    for f in _flows(src):
        for lp in f.loops:
            if isinstance(lp.iter, ast.Call) and _dotted(lp.iter.func).endswith("range"):
                ws = _kw(lp.iter, "warp_specialize")
                if (
                    ws is not None
                    and not (isinstance(ws, ast.Constant) and not ws.value)
                    and _loop_loads(f, lp)
                ):
                    ev.append(f"{f.fn.name}: tl.range(..., warp_specialize=True) loop over loads")
        if any(_dotted(c.func).endswith("warp_specialize") for c in f.calls()):
            ev.append(f"{f.fn.name}: gl.warp_specialize call")
    return DetectionResult(applies=bool(ev), evidence=ev)


def _pid_ops(f: _Flow, expr: ast.AST) -> set[str]:
    """BinOp kinds on the program-id path of ``expr`` (ops whose operands derive from it)."""
    return {type(n.op).__name__ for n in f.slice(expr)
            if isinstance(n, ast.BinOp) and f.depends(n, _PID)}  # fmt: skip


def detect_persistent_swizzle(src: str) -> DetectionResult:
    """Persistent: a loop from the program id, stepping by a grid-sized stride, that stores
    output tiles. Swizzle: a tile coordinate remapped from the program id through both
    ``//`` and ``%`` (grouped order; row-major ``pid // n``, ``pid % n`` has one each) or
    ``tl.swizzle2d``, that reaches a load/store address."""
    ev = []
    for f in _flows(src):
        for lp in f.loops:
            it = lp.iter
            if (isinstance(it, ast.Call) and len(it.args) == 3 and f.depends(it.args[0], _PID)
                    and not isinstance(it.args[2], ast.Constant)
                    and any(k == "store" for k, *_ in _ops_in(f, lp))):  # fmt: skip
                ev.append(f"{f.fn.name}: persistent loop over tiles from the program id")
        addrs = [a for _, _, a, _ in f.memory_ops() if a is not None]
        for name, defs in f.defs.items():
            for d in defs:
                if f.depends(d, _ARANGE) or not f.depends(d, _PID):
                    continue
                swz = any(_is_call("swizzle2d")(n) for n in f.slice(d))
                ops = _pid_ops(f, d)
                if (swz or {"FloorDiv", "Mod"} <= ops) and any(
                    name in {n.id for n in f.slice(a) if isinstance(n, ast.Name)} for a in addrs
                ):
                    ev.append(f"{f.fn.name}: tile coordinate '{name}' remapped from the program id "
                              f"({'tl.swizzle2d' if swz else 'grouped // and %'}) feeds the addresses")  # fmt: skip
                    break
            else:
                continue
            break
    return DetectionResult(applies=bool(ev), evidence=ev)


def _ops_in(f: _Flow, loop: ast.For) -> list[tuple[str, ast.Call, ast.AST | None, ast.AST | None]]:
    inside = {id(n) for st in loop.body for n in _walk_live(st)}
    return [op for op in f.memory_ops() if id(op[1]) in inside]


def _accumulators(f: _Flow, loop: ast.For) -> set[str]:
    """Names carried across iterations of ``loop``: updated in its body from themselves
    (``acc = tl.dot(a, b, acc)``, ``acc += ...``) and not re-initialised inside it."""
    assigned_inside: dict[str, list[ast.AST]] = {}
    for st in loop.body:
        for n in _walk_live(st):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        assigned_inside.setdefault(t.id, []).append(n.value)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                assigned_inside.setdefault(n.target.id, []).append(n.target)
    out = set()
    for name, values in assigned_inside.items():
        self_ref = [
            any(isinstance(x, ast.Name) and x.id == name for x in ast.walk(v)) for v in values
        ]
        if self_ref and all(self_ref):
            out.add(name)
    return out


def detect_split_k(src: str) -> DetectionResult:
    """The reduction (K) loop is partitioned across programs and the partial results are
    combined: a loop carrying an accumulator whose range depends on a program-id axis, and
    that accumulator atomically added to the output, or stored to an address indexed by
    the same program id for a second pass that reduces the partials."""
    ev: list[str] = []
    flows = _flows(src)
    second_pass = any(
        any(_dotted(c.func).split(".")[-1] in _REDUCTIONS for c in g.calls())
        or any(_accumulators(g, lp) for lp in g.loops)
        for g in flows
    )
    for f in flows:
        for lp in f.loops:
            if not isinstance(lp.iter, ast.Call) or not f.depends(lp.iter, _PID):
                continue
            accs = _accumulators(f, lp)
            if not accs:
                continue
            for kind, _, addr, value in f.memory_ops():
                if value is None or addr is None:
                    continue
                carried = {n.id for n in f.slice(value) if isinstance(n, ast.Name)} & accs
                if not carried:
                    continue
                if kind == "atomic":
                    ev.append(f"{f.fn.name}: K loop split over program ids, partial "
                              f"'{sorted(carried)[0]}' combined by tl.atomic_*")  # fmt: skip
                elif kind == "store" and second_pass and len(flows) > 1:
                    split_axes = {ast.dump(n) for n in f.slice(lp.iter) if _PID(n)}
                    addr_axes = {ast.dump(n) for n in f.slice(addr) if _PID(n)}
                    if split_axes & addr_axes and f.depends(addr, _PID):
                        ev.append(f"{f.fn.name}: K loop split over program ids, partials stored per split "
                                  f"and reduced by a second kernel")  # fmt: skip
    if not ev:  # one K block per program (no loop): its offset from the program id, atomics
        for f in flows:
            for kind, _, addr, value in f.memory_ops():
                if kind != "atomic" or value is None or addr is None:
                    continue
                dots = [n for n in f.slice(value) if _is_call("dot")(n)]
                k_axes = {ast.dump(n) for d in dots for n in f.slice(d) if _PID(n)}
                out_axes = {ast.dump(n) for n in f.slice(addr) if _PID(n)}
                if k_axes - out_axes:
                    ev.append(f"{f.fn.name}: a program-id axis indexes the K range, tl.dot partial "
                              f"combined by tl.atomic_*")  # fmt: skip
    ev = sorted(set(ev))
    return DetectionResult(applies=bool(ev), evidence=ev)


def detect_fusion(src: str) -> DetectionResult:
    """Several compute stages in one kernel's stored value: the value a live store writes is
    computed on chip from loaded data through at least three kinds of op (matmul,
    reductions, element-wise functions, arithmetic on loaded values), so no intermediate
    goes through HBM between them."""
    ev = []
    for f in _flows(src):
        for kind, _, _, value in f.memory_ops():
            if kind not in ("store", "atomic") or value is None:
                continue
            kinds: set[str] = set()
            for n in f.slice(value, data_only=True):
                if isinstance(n, ast.Call):
                    last = _dotted(n.func).split(".")[-1]
                    if last == "dot":
                        kinds.add("matmul")
                    elif last in _REDUCTIONS:
                        kinds.add(f"reduce:{last}")
                    elif last in _ELEMENTWISE:
                        kinds.add(f"ew:{last}")
                elif (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add | ast.Mult | ast.Sub | ast.Div)
                      and f.depends(n, _LOAD_CALL)):  # fmt: skip
                    kinds.add("ew:arith")
            if len(kinds) >= 3:
                ev.append(f"{f.fn.name} fuses {sorted(kinds)} into one store")
                break
    return DetectionResult(applies=bool(ev), evidence=ev)


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

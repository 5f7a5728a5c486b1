"""Memory traffic, dot FLOPs and launches of Triton kernels run under the interpreter.

``count_traffic()`` wraps the methods of Triton's CPU interpreter (``TRITON_INTERPRET=1``)
that every ``tl.*`` memory builtin ends in, so a block of code run inside it reports, per
kernel launch: bytes loaded and stored by the lanes active under their masks (plain
pointers, block pointers and tensor descriptors all end in
``InterpreterBuilder.create_masked_load``/``create_masked_store``), atomic bytes, the
FLOPs of ``tl.dot`` (2 M N K per call, padding of partial tiles included), the grid and
its program count. These are bytes *requested* by the kernel as written: no cache, no
coalescing. A kernel that re-reads its inputs (no tiling) requests more than one that
reuses a tile; one split in three launches pays three launches.

``cost_estimate`` turns the counts of one call into a roofline time estimate at a larger
shape with a tile/launch model: the loads of launches that run ``tl.dot`` (matmul,
attention) are carried to the target shape per FLOP (a tiled matmul loads each A tile once per
N-tile and each B tile once per M-tile, so its loads are ``MNK (1/BLOCK_N + 1/BLOCK_M)``
elements, proportional to the FLOPs whenever the counted shape is a multiple of the
tiles); other loads (epilogue launches, FLOP-free ops), stores and atomics are carried per
compulsory byte; a launch costs a fixed time. What a CPU count cannot see, the model does not pretend to:
there is no cache (requested bytes are charged to HBM, so ``GROUP_M``, which only changes
the order tiles run in and hence L2 hits, does not change the estimate, and the absolute
time of a large matmul is pessimistic), no warps or pipeline stages (``num_warps``,
``num_stages`` change nothing here) and a tile larger than the counted shape looks like
the counted shape. It is a model, not a measurement: it is what a CPU-only run can compare
kernels by, and GPU timings remain the reported metric where a GPU exists
(``benchmarks/cost_model_gpu.py`` measures how well its rankings agree with GPU timings).
Checked against the installed Triton (3.7); it relies on interpreter internals that a
Triton upgrade may move (``install`` then raises).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

LAUNCH_US = 4.0
"""Fixed cost of one kernel launch in the estimate (microseconds; CUDA's launch latency is
3-5 us per kernel)."""
PEAKS: dict[str, tuple[float, float, float]] = {
    "sm80": (312.0, 19.5, 2.0),
    "sm90": (989.0, 67.0, 3.35),
}
"""arch -> (dense fp16 tensor-core TFLOP/s, fp32 CUDA-core TFLOP/s, HBM TB/s) of A100 and
H100 SXM."""
PATCHED_METHODS = ("create_masked_load", "create_masked_store", "create_atomic_rmw", "create_atomic_cas",
            "create_dot", "set_grid_dim")  # fmt: skip


def _elem_bytes(ptrs: Any) -> int:
    """Bytes per element behind ``ptrs`` (the installed wrappers use a copy bound at install)."""
    import triton.language as tl

    return _make_elem_bytes(tl.block_type, tl.pointer_type)(ptrs)


def _make_elem_bytes(block_type: Any, pointer_type: Any) -> Any:
    def elem_bytes(ptrs: Any) -> int:
        ty: Any = ptrs.dtype
        if isinstance(ty, block_type):
            ty = ty.element_ty
        elt = ty.element_ty if isinstance(ty, pointer_type) else ty
        if isinstance(elt, pointer_type):
            return 8
        return max(1, int(getattr(elt, "primitive_bitwidth", 8)) // 8)

    return elem_bytes


def _make_lanes(
    shape_of: Any, prod: Any, count_nonzero: Any, broadcast_to: Any, asarray: Any
) -> Any:
    def lanes(ptrs: Any, mask: Any) -> int:
        shape = shape_of(ptrs.data)
        if mask is None:
            return int(prod(shape)) if shape else 1
        return int(count_nonzero(broadcast_to(asarray(mask.data).astype(bool), shape)))

    return lanes


def _lanes(ptrs: Any, mask: Any) -> int:
    """Lanes of ``ptrs`` active under ``mask``."""
    import numpy as np

    return int(
        _make_lanes(np.shape, np.prod, np.count_nonzero, np.broadcast_to, np.asarray)(ptrs, mask)
    )


class Traffic:
    """The launches counted inside one ``count_traffic`` block."""

    def __init__(self) -> None:
        self.launches: list[dict[str, Any]] = []
        self._cur: dict[str, Any] | None = None

    def totals(self) -> dict[str, float]:
        keys = ("bytes_loaded", "bytes_stored", "atomic_bytes", "dot_flops", "programs")
        out = {k: float(sum(x[k] for x in self.launches)) for k in keys}
        out["launches"] = float(len(self.launches))
        # loads of the launches that run tl.dot (the cost model carries them per FLOP)
        out["dot_bytes_loaded"] = float(
            sum(x["bytes_loaded"] for x in self.launches if x["dot_flops"] > 0)
        )
        return out


class PatchState:
    """The installed wrappers (one set at a time; ``count_traffic`` nests by sharing it)."""

    active: list[Traffic] = []
    originals: dict[str, Any] = {}
    wrappers: dict[str, Any] = {}


def _add(key: str, value: float) -> None:
    for t in PatchState.active:
        if t._cur is not None:
            t._cur[key] += value


def install() -> None:
    """Wrap the interpreter's methods (idempotent).

    Every wrapper reaches what it counts with through its closure, bound here (the active
    list, the lane and byte counters and the numpy functions they use), never through a
    module global looked up at call time: replacing ``traffic._add`` or ``numpy.prod``
    later changes nothing it counts. :func:`slots` lists each of those objects so that a
    harness can check by identity that none was replaced (cells included)."""
    if PatchState.originals:
        return
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter as itp

    builder, grid = itp.InterpreterBuilder, itp.GridExecutor
    o = {m: getattr(builder, m) for m in PATCHED_METHODS}
    o["grid_call"] = grid.__call__
    active = PatchState.active
    lanes = _make_lanes(np.shape, np.prod, np.count_nonzero, np.broadcast_to, np.asarray)
    elem_bytes = _make_elem_bytes(tl.block_type, tl.pointer_type)
    shape_of, prod = np.shape, np.prod

    def add(key: str, value: float) -> None:
        for t in active:
            cur = t._cur
            if cur is not None:
                cur[key] += value

    load, store, rmw, cas, dot, set_dim, call = (o["create_masked_load"], o["create_masked_store"],
                                                 o["create_atomic_rmw"], o["create_atomic_cas"], o["create_dot"],
                                                 o["set_grid_dim"], o["grid_call"])  # fmt: skip

    def create_masked_load(self: Any, ptrs: Any, mask: Any, *a: Any, **k: Any) -> Any:
        add("bytes_loaded", lanes(ptrs, mask) * elem_bytes(ptrs))
        return load(self, ptrs, mask, *a, **k)

    def create_masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *a: Any, **k: Any) -> Any:
        add("bytes_stored", lanes(ptrs, mask) * elem_bytes(ptrs))
        return store(self, ptrs, value, mask, *a, **k)

    def create_atomic_rmw(
        self: Any, op: Any, ptr: Any, val: Any, mask: Any, *a: Any, **k: Any
    ) -> Any:
        add("atomic_bytes", lanes(ptr, mask) * elem_bytes(ptr))
        return rmw(self, op, ptr, val, mask, *a, **k)

    def create_atomic_cas(self: Any, ptr: Any, *a: Any, **k: Any) -> Any:
        add("atomic_bytes", lanes(ptr, None) * elem_bytes(ptr))
        return cas(self, ptr, *a, **k)

    def create_dot(self: Any, a: Any, b: Any, *rest: Any, **k: Any) -> Any:
        sa, sb = shape_of(a.data), shape_of(b.data)
        batch = int(prod(sa[:-2])) if len(sa) > 2 else 1
        add("dot_flops", 2.0 * batch * sa[-2] * sb[-1] * sa[-1])
        return dot(self, a, b, *rest, **k)

    def set_grid_dim(self: Any, nx: int, ny: int, nz: int) -> Any:
        for t in active:
            if t._cur is not None:
                t._cur["grid"] = [int(nx), int(ny), int(nz)]
                t._cur["programs"] = int(nx) * int(ny) * int(nz)
        return set_dim(self, nx, ny, nz)

    def grid_call(self: Any, *a: Any, **k: Any) -> Any:
        name = str(getattr(self.fn, "__name__", "kernel"))
        for t in active:
            t._cur = {"kernel": name, "grid": None, "programs": 0, "bytes_loaded": 0.0, "bytes_stored": 0.0,
                      "atomic_bytes": 0.0, "dot_flops": 0.0}  # fmt: skip
        try:
            return call(self, *a, **k)
        finally:
            for t in active:
                if t._cur is not None:
                    t.launches.append(t._cur)
                    t._cur = None

    w = {"create_masked_load": create_masked_load, "create_masked_store": create_masked_store,
         "create_atomic_rmw": create_atomic_rmw, "create_atomic_cas": create_atomic_cas,
         "create_dot": create_dot, "set_grid_dim": set_grid_dim}  # fmt: skip
    for m, f in w.items():
        setattr(builder, m, f)
    grid.__call__ = grid_call
    PatchState.originals, PatchState.wrappers = o, {**w, "grid_call": grid_call}


def slots() -> list[tuple[Any, str | None, Any]]:
    """Every object the installed counter relies on, as ``(holder, key, object)``: ``holder``
    is a namespace (``vars`` of a class or module: ``holder.get(key) is object`` must hold)
    or, with ``key`` None, a closure cell (``holder.cell_contents is object``). Covers the
    interpreter methods the counter wraps, this module's functions and classes, the active
    list and every cell of every wrapper, recursively. Empty when not installed."""
    if not PatchState.wrappers:
        return []
    import sys

    from triton.runtime import interpreter as itp

    out: list[tuple[Any, str | None, Any]] = []
    b, g = vars(itp.InterpreterBuilder), vars(itp.GridExecutor)
    out += [(b, m, PatchState.wrappers[m]) for m in PATCHED_METHODS]
    out.append((g, "__call__", PatchState.wrappers["grid_call"]))
    mod = vars(sys.modules[__name__])
    out += [(mod, name, mod[name]) for name in ("_add", "_lanes", "_elem_bytes", "_make_lanes", "_make_elem_bytes",
                                                "install", "intact", "slots", "count_traffic", "Traffic", "PatchState",
                                                "PATCHED_METHODS", "cost_estimate", "LAUNCH_US", "PEAKS")]  # fmt: skip
    out += [
        (vars(PatchState), name, vars(PatchState)[name])
        for name in ("active", "originals", "wrappers")
    ]
    out += [(vars(Traffic), name, vars(Traffic)[name]) for name in ("__init__", "totals")]
    seen: set[int] = set()
    todo: list[Any] = list(PatchState.wrappers.values())
    while todo:  # the wrappers' cells, and the cells of the functions found in them
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        for cell in fn.__closure__ or ():
            obj = cell.cell_contents
            out.append((cell, None, obj))
            if callable(obj) and getattr(obj, "__closure__", None) is not None:
                todo.append(obj)
    return out


def intact(expected: list[tuple[Any, str | None, Any]] | None = None) -> bool:
    """Whether every object the counter relies on is still in place, by identity.

    expected: the :func:`slots` taken right after :func:`install`, before any untrusted
        code ran (a harness keeps it); None compares with the slots as they are now, which
        only catches the wrapped interpreter methods being replaced."""
    if not PatchState.wrappers:
        return False
    missing = object()
    for holder, key, obj in slots() if expected is None else expected:
        now = holder.cell_contents if key is None else holder.get(key, missing)
        if now is not obj:
            return False
    from triton.runtime import interpreter as itp

    ok = all(vars(itp.InterpreterBuilder).get(m) is PatchState.wrappers[m] for m in PATCHED_METHODS)
    return ok and vars(itp.GridExecutor).get("__call__") is PatchState.wrappers["grid_call"]


def uninstall() -> None:
    if not PatchState.originals:
        return
    from triton.runtime import interpreter as itp

    for m in PATCHED_METHODS:
        setattr(itp.InterpreterBuilder, m, PatchState.originals[m])
    itp.GridExecutor.__call__ = PatchState.originals["grid_call"]
    PatchState.originals, PatchState.wrappers = {}, {}


@contextlib.contextmanager
def count_traffic() -> Iterator[Traffic]:
    """Count every interpreted launch inside the block (see the module doc)."""
    t = Traffic()
    install()
    PatchState.active.append(t)
    try:
        yield t
    finally:
        PatchState.active.remove(t)
        if not PatchState.active:
            uninstall()


def cost_estimate(
    totals: dict[str, float],
    compulsory: tuple[float, float],
    target: tuple[float, float],
    arch: str = "sm90",
) -> dict[str, float]:
    """A roofline time estimate (microseconds) of one call at a target shape.

    totals: counted ``bytes_loaded``, ``bytes_stored``, ``atomic_bytes``, ``dot_flops``,
        ``launches`` of one call at a small (counted) shape;
    compulsory: (flops, bytes) the op must do at that counted shape;
    target: (flops, bytes) it must do at the target shape.

    The tile/launch model (module doc): the loads of launches that run ``tl.dot``
    (``dot_bytes_loaded``) scale with ``target flops / counted flops`` (re-reads of tiled
    operands grow with the other output dimension: a larger tile means fewer re-reads at
    every shape); other loads (element-wise epilogue launches, FLOP-free ops), stores and
    atomics (the output, split-K partial tiles) scale with the compulsory bytes. A matmul
    written without ``tl.dot`` (CUDA-core products and sums) has its re-reads carried per
    byte, so the model understates its traffic at a larger shape. ``amplification`` is the carried traffic over the target's
    compulsory bytes. The target's FLOPs run on tensor cores when the kernel uses ``tl.dot``
    and on CUDA cores otherwise. The time is ``max(bytes / HBM bandwidth, flops / peak) +
    launches * LAUNCH_US`` on ``arch``; no cache is modelled (every requested byte is an
    HBM byte), so tile order (``GROUP_M``), ``num_warps`` and ``num_stages`` are invisible."""
    tensor, cuda_cores, tbs = PEAKS[arch]
    byte_scale = target[1] / max(compulsory[1], 1.0)
    flop_scale = target[0] / compulsory[0] if compulsory[0] > 0 and target[0] > 0 else byte_scale
    loaded = totals["bytes_loaded"]
    # loads of tl.dot launches (absent: all loads when the call ran a tl.dot, else none)
    dot_loaded = min(
        loaded, totals.get("dot_bytes_loaded", loaded if totals["dot_flops"] > 0 else 0.0)
    )
    moved = (
        dot_loaded * flop_scale
        + (loaded - dot_loaded + totals["bytes_stored"] + totals.get("atomic_bytes", 0.0))
        * byte_scale
    )
    amp = moved / max(target[1], 1.0)
    peak = tensor if totals["dot_flops"] > 0 else cuda_cores
    t_bytes = moved / (tbs * 1e12) * 1e6
    t_flops = target[0] / (peak * 1e12) * 1e6
    launches = totals["launches"]
    return {"amplification": amp, "tensor_cores": float(totals["dot_flops"] > 0), "launches": launches,
            "estimate_us": max(t_bytes, t_flops) + launches * LAUNCH_US}  # fmt: skip

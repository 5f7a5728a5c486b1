"""KernelArena runner: the one harness program that shares a process with kernel code.

Usage (inside a sandbox work dir): ``python runner.py``. It reads ``job.json``,
``inputs.pt`` and ``nonce.txt`` (deleted at once), loads the kernel module named in the
job, calls ``launch`` on every input set and writes ``outputs.pt`` (the output tensors,
``torch.save``) and ``out.meta`` (a Python literal: per case a run-time reason or None,
timings, the nonce). It never computes a reference, compares or scores: the parent does
that from the tensors, in a process no candidate code ran in (:mod:`.judge`).

``mode == "candidate"`` (hostile code in the process). Everything below is set up
before the candidate's first line runs:

* the harness state lives in locals and closures of :func:`_run`, whose code (and every
  function nested in it) loads no global or builtin name, so replacing names in this
  module, in ``builtins`` or in torch changes nothing it does (a test checks the bytecode);
* an audit hook, which Python lets nobody remove, refuses from then on frame and heap
  introspection (``sys._getframe``, ``tb_frame``/``gi_frame``, ``gc.get_*``, trace and
  profile hooks), ``ctypes``, setting attributes on torch or harness classes, writing
  any file outside ``/tmp`` (so no ``result.json`` and no edits to harness files), reading
  ``/proc/*/mem``, ``chdir`` and, on CPU, starting processes; torch's frame-evaluation
  hooks are replaced by refusals; the process is non-dumpable and all signals are
  blocked (a change of the mask is reported);
* torch compute is denied by default in the dispatcher: every aten op with a CPU, CUDA,
  sparse, nested, quantized or explicit-composite kernel, except allocation, copy and
  view ops, is shadowed by a kernel that records the op and raises, so
  ``DisableTorchFunction``, popped modes or an emptied tripwire do not help; a
  torch-function tripwire names the Python-level call, and names reads of tensor data
  into host Python/numpy (``.numpy()``, ``.tolist()``, ``.item()``, ``__array__``,
  ``__dlpack__``...) as host compute (``DisableTorchFunction`` is refused, and
  ``_local_scalar_dense`` is denied in the dispatcher);
* per launch: input mutation, an output aliasing an input or an earlier output (a cached
  result), timer patching and left-over torch modes are checked; on CPU, every object the
  traffic counter relies on (``traffic.slots()``: the wrapped interpreter methods, their
  closure cells, ``traffic._add`` and the module's other functions, the record list) is
  checked by identity after every case.

The ``nonce`` the parent looks for in ``out.meta`` lives only in :func:`_run`'s frame, so
a file written by candidate code (or a process it starts) is rejected by the parent.
These in-process checks are defence in depth: a candidate that defeats them still gets
nothing but its own tensors judged, against a reference it never saw.

``mode == "baseline"`` (trusted code only: the starting kernel or the torch reference,
with ``references.py``): the reference kernel's outputs and, on a GPU, the baseline
timings, the reference outputs of the timing inputs and a calibration of the device
(copy bandwidth, fp16 matmul rate) that bounds any kernel's time from below.

Timing (CUDA only, both modes, the same code): CUDA events and a wall clock captured
before any kernel code loads; per sample the L2 is flushed (256 MB write) and the device
synchronised, then the call is event-timed on the current stream and wall-timed to a
full device synchronise (work hidden on a side stream shows there). Without CUDA
nothing is timed.
"""

from __future__ import annotations

import _thread
import builtins
import gc
import hashlib
import importlib.util
import json
import os
import signal
import sys
import time
import warnings
from typing import Any

import torch

#: aten ops (base names, every overload) kernel code may still run: allocation, copies,
#: casts and views. Every other aten op with a backend kernel is denied in candidate runs.
ALLOWED_ATEN = frozenset(
    {
        "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
        "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones",
        "new_full", "zero_", "fill_", "copy_", "_copy_from", "_copy_from_and_resize",
        "_to_copy", "clone", "resize_", "resize_as_", "set_", "view", "_unsafe_view",
        "as_strided", "as_strided_", "expand", "t", "transpose", "permute", "unsqueeze",
        "squeeze", "select", "slice", "narrow", "detach", "detach_", "alias", "lift_fresh",
        "lift_fresh_copy", "is_pinned", "_pin_memory", "record_stream",
        "resolve_conj", "resolve_neg", "_reshape_alias", "cat", "stack", "arange",
        "is_set_to", "_has_same_storage_numel", "split", "split_with_sizes", "unbind",
        "chunk", "unfold", "diagonal", "_conj", "_neg_view", "contiguous", "reshape",
        "is_same_size",
    }
)  # fmt: skip
DENY_KEYS = ("CPU", "CUDA", "SparseCPU", "SparseCUDA", "SparseCsrCPU", "SparseCsrCUDA",
             "NestedTensorCPU", "NestedTensorCUDA", "QuantizedCPU", "QuantizedCUDA", "MkldnnCPU",
             "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")  # fmt: skip
#: torch function names the tripwire names in its reason (the dispatcher denies the rest).
TRIPWIRE = frozenset(
    {
        "softmax", "log_softmax", "_softmax", "matmul", "mm", "bmm", "addmm", "baddbmm", "linear",
        "layer_norm", "rms_norm", "group_norm", "batch_norm", "gelu", "relu", "relu_", "silu",
        "sigmoid", "tanh", "exp", "log", "sum", "mean", "amax", "amin", "max", "min", "logsumexp",
        "scaled_dot_product_attention", "cross_entropy", "nll_loss", "einsum", "cumsum", "norm",
        "var", "std", "__matmul__", "__rmatmul__", "__mul__", "__rmul__", "__add__", "__radd__",
        "__sub__", "__rsub__", "__truediv__", "__rtruediv__", "mul", "add", "sub", "div", "where",
        "maximum", "minimum", "clamp", "pow", "rsqrt", "sqrt", "erf", "abs", "neg", "dot", "inner",
        "outer", "tensordot", "conv1d", "conv2d",
    }
)  # fmt: skip
#: torch functions that read tensor data into host Python or numpy: computing outside Triton
#: too, so the tripwire names them as well (``DisableTorchFunction`` is refused, below).
HOST_READS = frozenset({"numpy", "tolist", "item", "__array__", "__array_wrap__", "__dlpack__", "__float__",
                        "__int__", "__bool__", "__index__", "__complex__", "__repr__", "__str__", "__format__",
                        "__reduce_ex__"})  # fmt: skip
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
DENY_EVENTS = frozenset({"sys._current_frames", "sys.settrace", "sys.setprofile",
                         "gc.get_objects", "gc.get_referrers", "gc.get_referents", "os.chdir",
                         "os.fchdir", "sys.monitoring.register_callback", "sys._getframemodulename",
                         "os.kill", "os.killpg", "signal.pthread_kill", "sys.unraisablehook",
                         "sys.excepthook", "function.__new__", "code.__new__"})  # fmt: skip
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn",
                            "os.spawn", "os.fork", "os.forkpty", "pty.spawn"})  # fmt: skip
PATH_EVENTS = frozenset({"os.remove", "os.rename", "os.truncate", "os.chmod", "os.chown",
                         "os.link", "os.symlink", "os.utime", "os.mkdir", "os.rmdir",
                         "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr",
                         "shutil.rmtree", "shutil.copyfile", "shutil.move"})  # fmt: skip
PROTECTED_MODULES = ("torch", "builtins", "__main__", "kernelarena", "signal", "enum", "_io")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

_TRIPWIRE_SRC = """
class Tripwire(Base):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in names:
            hits.append(name)
        return func(*args, **(kwargs or {}))
"""
_DENIED_SRC = """
def make_denied(name):
    def denied_op(*args, **kwargs):
        hits.append(name)
        raise RuntimeError("aten::" + name + " is a torch compute op: kernel code must compute with Triton")
    return denied_op


def refuse(*args, **kwargs):
    raise PermissionError("kernelarena harness: this torch hook is not allowed in a candidate run")
"""
#: Each compiled into a namespace of its own: what candidate code may reach through the
#: mode stack (the tripwire) holds a hit list and nothing of the harness; the denying
#: kernels are held by the dispatcher only.

#: torch._C attributes replaced by refusals in candidate runs: re-registering dispatcher
#: kernels, fetching a shadowed kernel, steering dispatch keys, the Python dispatcher.
TORCH_C_REFUSE = ("_dispatch_library", "_dispatch_get_computed_kernel_for_dispatch_key",
                  "_dispatch_tls_set_dispatch_key_excluded", "_dispatch_tls_set_dispatch_key_included",
                  "_ExcludeDispatchKeyGuard", "_IncludeDispatchKeyGuard", "_EnablePythonDispatcher",
                  "_set_python_dispatcher", "_ForceDispatchKeyGuard", "_PreserveDispatchKeyGuard",
                  "_dispatch_pystub", "_DisablePythonDispatcher",
                  # would hide host reads (``.numpy()``, ``.tolist()``) from the tripwire
                  "DisableTorchFunction")  # fmt: skip


def _setup() -> dict[str, Any]:
    """Everything that may use globals: runs before any kernel code exists."""
    job = json.load(open("job.json"))  # noqa: SIM115
    with open("nonce.txt") as fh:
        nonce = fh.read().strip()
    os.remove("nonce.txt")
    cuda = bool(torch.cuda.is_available())
    sys.dont_write_bytecode = True
    import triton.testing

    c: dict[str, Any] = {
        "job": job,
        "nonce": nonce,
        "cuda": cuda,
        "hostile": job["mode"] == "candidate",
    }
    c.update(vars(builtins))  # builtins as locals of _run (copied now, before anyone patches them)
    TB = torch._C.TensorBase  # noqa: N806
    c.update(tb_detach=TB.detach, tb_cpu=TB.cpu, tb_clone=TB.clone, tb_numpy=TB.numpy, tb_view=TB.view,
             tb_storage=TB.untyped_storage, tb_zero=TB.zero_, st_ptr=torch._C.StorageBase.data_ptr,  # type: ignore[attr-defined]  # torch's stub declares StorageBase without members
             tensor_cls=torch.Tensor, bf16=torch.bfloat16, int16=torch.int16, contig=torch.contiguous_format,
             len_tf=torch._C._len_torch_function_stack, pop_tf=torch._C._pop_torch_function_stack,
             push_tf=torch._C._push_on_torch_function_stack, len_td=torch._C._len_torch_dispatch_stack,
             pop_td=torch._C._pop_torch_dispatch_stack, perf_ns=time.perf_counter_ns, thread_count=_thread._count,
             sha256=hashlib.sha256, sigmask=signal.pthread_sigmask, sig_block=signal.SIG_BLOCK,
             all_signals=signal.valid_signals(), exit_now=os._exit, gc_disable=gc.disable,
             add_hook=sys.addaudithook, torch_save=torch.save, torch_empty=torch.empty, int32=torch.int32,
             str_encode=str.encode, bytes_decode=bytes.decode, import_candidate=_import_candidate,
             deny_events=DENY_EVENTS, frame_attrs=FRAME_ATTRS, process_events=PROCESS_EVENTS,
             path_events=PATH_EVENTS, protected=PROTECTED_MODULES, write_flags=WRITE_FLAGS,
             baseline_extras=_baseline_extras, getframe=sys._getframe, get_ident=_thread.get_ident)  # fmt: skip
    c["frame_readers"] = _frame_readers()
    if not cuda:  # under the interpreter: count each launch's traffic (optiforge.kernels.traffic)
        from triton.runtime import interpreter as itp

        from optiforge.kernels import traffic

        traffic.install()
        counter = traffic.Traffic()
        traffic.PatchState.active.append(counter)
        # Everything the count relies on, by identity (the wrappers, their closure cells,
        # the traffic module's functions, the active list, this counter's record list).
        slots = [*traffic.slots(), (vars(counter), "launches", counter.launches)]
        c.update(tr_counter=counter, tr_active=traffic.PatchState.active, tr_patch=traffic.PatchState,
                 tr_wrappers=dict(traffic.PatchState.wrappers), tr_builder=vars(itp.InterpreterBuilder),
                 tr_grid=vars(itp.GridExecutor), tr_methods=tuple(traffic.PATCHED_METHODS),
                 tr_slots=tuple(slots), tr_missing=object())  # fmt: skip
    # Timers: the objects kernel code must leave in place (identity is checked after each call).
    homes = {"time": time, "torch.cuda": torch.cuda, "triton.testing": triton.testing}
    names = ("time.perf_counter", "time.perf_counter_ns", "time.time", "time.time_ns", "time.monotonic",
             "time.monotonic_ns", "time.process_time", "torch.cuda.Event", "torch.cuda.synchronize",
             "torch.cuda.current_stream", "triton.testing.do_bench")  # fmt: skip
    c["timer_slots"] = tuple(
        (n, vars(homes[n.rpartition(".")[0]]), n.rpartition(".")[2]) for n in names
    )
    c["timing"] = job.get("timing") if cuda else None
    if cuda:
        eb = torch._C._CudaEventBase
        c.update(ev_new=eb.__new__, ev_base=eb, ev_record=eb.record, ev_elapsed=eb.elapsed_time,
                 sync=torch._C._cuda_synchronize, stream=torch.cuda.current_stream())  # fmt: skip
    # Inputs: built by the parent, moved to the device with their layout (strides, offsets).
    loaded = torch.load("inputs.pt", weights_only=True)
    moved: dict[int, Any] = {}

    def to_dev(t: torch.Tensor) -> torch.Tensor:
        if not cuda or not isinstance(t, torch.Tensor):
            return t
        st = t.untyped_storage()
        if st.data_ptr() not in moved:
            moved[st.data_ptr()] = st.cuda()
        out = torch.empty(0, dtype=t.dtype, device="cuda")
        return out.set_(moved[st.data_ptr()], t.storage_offset(), t.shape, t.stride())

    c["cases"] = [[to_dev(t) for t in case] for case in loaded["cases"]]
    c["tsets"] = [[to_dev(t) for t in s] for s in loaded.get("timing", [])] if c["timing"] else []
    c["guarded"] = list(job["guarded"])
    c["meta_f"] = open("out.meta", "w")  # noqa: SIM115 - opened before any kernel code runs
    c["out_f"] = open("outputs.pt", "wb")  # noqa: SIM115
    if c["hostile"]:
        b = {"getattr": getattr, "RuntimeError": RuntimeError, "PermissionError": PermissionError, "__import__": __import__,
             "__build_class__": builtins.__build_class__}  # fmt: skip
        wire_ns: dict[str, Any] = {"__builtins__": b, "__name__": "kernelarena_tripwire",
                                   "Base": torch.overrides.TorchFunctionMode, "names": TRIPWIRE | HOST_READS, "hits": []}  # fmt: skip
        exec(compile(_TRIPWIRE_SRC, "<kernelarena-tripwire>", "exec"), wire_ns)  # noqa: S102  # trusted: our own source
        deny_ns: dict[str, Any] = {"__builtins__": b, "__name__": "kernelarena_denied", "hits": []}
        exec(compile(_DENIED_SRC, "<kernelarena-denied>", "exec"), deny_ns)  # noqa: S102  # trusted: our own source
        c.update(wire=wire_ns["Tripwire"](), wire_hits=wire_ns["hits"], poison_hits=deny_ns["hits"],
                 host_reads=HOST_READS)  # fmt: skip
        has = torch._C._dispatch_has_kernel_for_dispatch_key
        plan = []
        for qual in torch._C._dispatch_get_all_op_names():
            name = qual[6:] if qual.startswith("aten::") else None
            if name is None or name.partition(".")[0] in ALLOWED_ATEN:
                continue
            keys = {k for k in DENY_KEYS if has(qual, k)}
            if any(k.startswith("Composite") for k in keys):
                keys = {k for k in keys if not k.startswith("Composite")} | {"CPU", "CUDA"}
            if keys:
                plan.append((name, sorted(keys), deny_ns["make_denied"](name)))
        c["poison_plan"] = plan
        c["dispatch_library"] = torch._C._dispatch_library
        c["catch_warnings"], c["simplefilter"] = warnings.catch_warnings, warnings.simplefilter
        c["refuse"] = deny_ns["refuse"]
        ef = vars(torch._C._dynamo.eval_frame)
        c["frame_hooks"] = [
            (ef, n) for n in list(ef) if n.startswith(("set_", "_get_frame", "register_", "_set_"))
        ]
        # Every module-level alias of a refused torch._C callable is replaced as well.
        originals = {id(getattr(torch._C, n)): n for n in TORCH_C_REFUSE if hasattr(torch._C, n)}
        spots = []
        for mod in list(sys.modules.values()):
            d = getattr(mod, "__dict__", None)
            if isinstance(d, dict):
                spots += [(d, k) for k, v in list(d.items()) if id(v) in originals]
        c["torch_c_refusals"] = spots
        try:
            import ctypes

            c["prctl"] = ctypes.CDLL(None).prctl
        except (OSError, AttributeError):  # pragma: no cover - no libc symbol
            c["prctl"] = None
    return c


#: stdlib / typing_extensions helpers that call ``sys._getframe`` only to read a module
#: name (or a bool) from it: lazily imported library code (``TypeVar("T")``) needs them.
FRAME_READERS = (("typing", "_caller"), ("collections", "namedtuple"), ("enum", "EnumType._create_"),
                 ("typing_extensions", "_caller"), ("typing_extensions", "_has_generic_or_protocol_as_origin"))  # fmt: skip


def _frame_readers() -> frozenset[Any]:
    out = set()
    for mod_name, qual in FRAME_READERS:
        try:
            obj: Any = importlib.import_module(mod_name)
            for part in qual.split("."):
                obj = getattr(obj, part)
            out.add(obj.__code__)
        except (ImportError, AttributeError):  # pragma: no cover - another Python version
            continue
    return frozenset(out)


def _import_candidate(path: str) -> Any:
    """Load the kernel module (its ``launch``); runs after the hook is armed."""
    # This runner runs inside the sandbox, never in the parent.
    spec = importlib.util.spec_from_file_location("candidate", path)  # trusted: sandboxed
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["candidate"] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.launch


def _run(c: dict[str, Any]) -> None:  # noqa: C901, PLR0912, PLR0915 - one closure on purpose
    """The part that runs next to kernel code. It loads no global or builtin name: all it
    uses was captured by :func:`_setup` into ``c`` and unpacked into locals here."""
    job, nonce, cuda, hostile = c["job"], c["nonce"], c["cuda"], c["hostile"]
    _len, _type, _isinstance, _str, _float, _int = (
        c["len"],
        c["type"],
        c["isinstance"],
        c["str"],
        c["float"],
        c["int"],
    )
    _any, _range, _list, _tuple, _zip, _repr = (
        c["any"],
        c["range"],
        c["list"],
        c["tuple"],
        c["zip"],
        c["repr"],
    )
    _bytes, _open, _enumerate = c["bytes"], c["open"], c["enumerate"]
    BaseExc, Exc, PermErr = c["BaseException"], c["Exception"], c["PermissionError"]  # noqa: N806
    tb_detach, tb_cpu, tb_clone, tb_numpy = (
        c["tb_detach"],
        c["tb_cpu"],
        c["tb_clone"],
        c["tb_numpy"],
    )
    tb_view, tb_storage, tb_zero, st_ptr = c["tb_view"], c["tb_storage"], c["tb_zero"], c["st_ptr"]
    tensor_cls, bf16, int16, contig, int32 = (
        c["tensor_cls"],
        c["bf16"],
        c["int16"],
        c["contig"],
        c["int32"],
    )
    len_tf, pop_tf, push_tf, len_td, pop_td = (
        c["len_tf"],
        c["pop_tf"],
        c["push_tf"],
        c["len_td"],
        c["pop_td"],
    )
    perf_ns, thread_count, sha256, add_hook = (
        c["perf_ns"],
        c["thread_count"],
        c["sha256"],
        c["add_hook"],
    )
    sigmask, sig_block, all_signals = c["sigmask"], c["sig_block"], c["all_signals"]
    exit_now, gc_disable, torch_save, torch_empty = (
        c["exit_now"],
        c["gc_disable"],
        c["torch_save"],
        c["torch_empty"],
    )
    str_encode, bytes_decode, import_candidate = (
        c["str_encode"],
        c["bytes_decode"],
        c["import_candidate"],
    )
    deny_events, frame_attrs, process_events = (
        c["deny_events"],
        c["frame_attrs"],
        c["process_events"],
    )
    path_events, protected, write_flags = c["path_events"], c["protected"], c["write_flags"]
    timer_slots, timing, cases, tsets = c["timer_slots"], c["timing"], c["cases"], c["tsets"]
    meta_f, out_f, guarded_files, baseline_extras = (
        c["meta_f"],
        c["out_f"],
        c["guarded"],
        c["baseline_extras"],
    )
    wire, wire_hits, poison_hits = c.get("wire"), c.get("wire_hits", []), c.get("poison_hits", [])
    # Set by _setup only for a hostile run (None otherwise); Any: captured callables.
    dispatch_library: Any
    catch_warnings: Any
    simplefilter: Any
    poison_plan, dispatch_library, refuse = (
        c.get("poison_plan", []),
        c.get("dispatch_library"),
        c.get("refuse"),
    )
    catch_warnings, simplefilter, prctl = (
        c.get("catch_warnings"),
        c.get("simplefilter"),
        c.get("prctl"),
    )
    frame_hooks, torch_c_refusals = c.get("frame_hooks", []), c.get("torch_c_refusals", [])
    getframe, get_ident, frame_readers = c["getframe"], c["get_ident"], c["frame_readers"]
    tr_counter, tr_active, tr_patch = c.get("tr_counter"), c.get("tr_active"), c.get("tr_patch")
    tr_slots, tr_missing = c.get("tr_slots", ()), c.get("tr_missing")
    host_reads = c.get("host_reads", ())
    tr_wrappers, tr_builder, tr_grid, tr_methods = (
        c.get("tr_wrappers"),
        c.get("tr_builder"),
        c.get("tr_grid"),
        c.get("tr_methods", ()),
    )
    if cuda:
        ev_new, ev_base, ev_record, ev_elapsed = (
            c["ev_new"],
            c["ev_base"],
            c["ev_record"],
            c["ev_elapsed"],
        )
        sync, stream = c["sync"], c["stream"]
    else:
        ev_new = ev_base = ev_record = ev_elapsed = sync = stream = None
    c.clear()
    del c

    def timers_changed(ref: list[Any]) -> list[str]:
        return [
            name for (name, home, attr), was in _zip(timer_slots, ref) if home.get(attr) is not was
        ]

    timers = [home.get(attr) for _, home, attr in timer_slots]

    def text(s: Any) -> str:
        """An exact ``str`` copy (a candidate's str subclass never reaches our repr)."""
        try:
            return bytes_decode(str_encode(s, "utf-8", "replace"), "utf-8", "replace")[:400]
        except Exc:  # noqa: BLE001 - not a str at all
            return "<not a string>"

    def err_text(err: Any) -> str:
        try:
            msg = text(_str(err))
        except BaseExc:  # noqa: BLE001 - a hostile __str__
            msg = "<unprintable>"
        return text(_type(err).__name__) + ": " + msg

    def shas() -> dict[str, str]:
        out = {}
        for name in guarded_files:
            with _open(name, "rb") as fh:
                out[name] = sha256(fh.read()).hexdigest()
        return out

    before = shas()
    meta: dict[str, Any] = {"mode": job["mode"], "device": "cuda" if cuda else "cpu", "fatal": None,
                            "reasons": [], "timing": None, "denied": []}  # fmt: skip
    outputs: list[Any] = []
    denied: list[str] = []

    # -- the audit policy of a candidate run ------------------------------------------
    def deny(what: str) -> None:
        denied.append(what)
        raise PermErr("kernelarena harness: " + what + " is not allowed in a candidate run")

    def as_text(p: Any) -> Any:
        return bytes_decode(p, "utf-8", "replace") if _isinstance(p, _bytes) else p

    busy: dict[int, bool] = {}

    def harmless_frame_use() -> bool:
        """Is the caller of ``sys._getframe`` one of the stdlib helpers that only read a
        module name from it (``typing.TypeVar``, ``namedtuple``, functional ``Enum``)?"""
        tid = get_ident()
        if busy.get(tid):
            return True  # our own look below
        busy[tid] = True
        try:
            return getframe(2).f_code in frame_readers  # 0: here, 1: the hook, 2: the caller
        finally:
            busy[tid] = False

    def hook(event: str, args: tuple[Any, ...]) -> None:  # noqa: C901 - the policy, in one place
        if event == "sys._getframe":
            if not harmless_frame_use():
                deny(event)
        elif event in deny_events or event.startswith("ctypes."):
            deny(event)
        elif event == "object.__getattr__":
            if _len(args) > 1 and args[1] in frame_attrs:
                deny("reading " + text(args[1]))
        elif event == "object.__setattr__":
            obj: Any
            obj, name = (args[0], args[1]) if _len(args) > 1 else (None, "")
            if name == "__code__":
                deny("replacing a function's __code__")
            if _isinstance(obj, _type) and text(obj.__dict__.get("__module__", "")).startswith(
                protected
            ):
                deny("setting " + text(obj.__name__) + "." + text(name))
        elif event == "open":
            path, mode, flags = (_list(args) + [None, None, None])[:3]
            writing = (_isinstance(flags, _int) and flags & write_flags) or (
                _isinstance(mode, _str) and _any(ch in mode for ch in "wax+")
            )
            path = as_text(path)
            if not _isinstance(path, _str):
                if writing:
                    deny("opening a file descriptor for writing")
                return
            if path.startswith(("/proc", "/dev/fd")) and (
                writing or _any(k in path for k in ("mem", "environ", "/fd", "map"))
            ):
                deny("opening " + text(path))
            if writing and (not path.startswith("/tmp/") or "/.." in path):
                deny("writing " + _repr(text(path)) + " (kernel code may write only under /tmp)")
        elif event in path_events:
            for p in args:
                p = as_text(p)
                if _isinstance(p, _str) and (not p.startswith("/tmp/") or "/.." in p):
                    deny(event + " on " + _repr(text(p)))
        elif event in process_events and not cuda:  # on a GPU Triton runs its compilers
            deny(event)

    lib: Any = None
    mask0 = 0
    if hostile:
        lib = dispatch_library("IMPL", "aten", "")  # kept alive by this frame: the denials hold
        with catch_warnings():
            simplefilter("ignore")
            for name, keys, fn in poison_plan:
                for key in keys:
                    try:
                        lib.impl(name, key, fn)
                    except Exc:  # noqa: BLE001, S112 - an op the dispatcher will not take here
                        continue
        for home, name in frame_hooks + torch_c_refusals:
            home[name] = refuse
        if prctl is not None:
            prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no child may read this process's memory
        sigmask(sig_block, all_signals)
        mask0 = _len(sigmask(sig_block, []))
        add_hook(hook)  # armed from here on, for good
    threads0 = thread_count()

    # -- load the kernel module ----------------------------------------------------------
    fatal = None
    launch: Any = None
    try:
        launch = import_candidate(job["entry"])
    except BaseExc as err:  # noqa: BLE001 - SystemExit too: kernel code may not end the run
        fatal = "compile/import failed: " + err_text(err)
    if fatal is None and hostile and timers_changed(timers):
        fatal = (
            "patched the timer at import time (" + ", ".join(timers_changed(timers)) + " replaced)"
        )
    if fatal is None and poison_hits:
        fatal = (
            "computed with aten::" + text(poison_hits[0]) + " at import time (a torch compute op)"
        )

    def raw(t: Any) -> Any:
        if _type(t) is not tensor_cls:
            return _repr(t)
        x = tb_clone(tb_cpu(tb_detach(t)), memory_format=contig)
        if x.dtype is bf16:
            x = tb_view(x, int16)
        return (_tuple(t.shape), _tuple(t.stride()), tb_numpy(x).tobytes())

    def storage_of(t: Any) -> int:
        return st_ptr(tb_storage(t))

    def keep(t: Any) -> Any:
        return (
            tb_clone(tb_cpu(tb_detach(t)), memory_format=contig) if _type(t) is tensor_cls else None
        )

    kept: list[Any] = []  # earlier outputs stay alive so reuse of their storage is visible
    compute = " during the launch (a torch compute op; the kernel must compute with Triton)"
    host_read = " during the launch (host compute; the kernel must compute with Triton)"

    def guarded(inputs: list[Any]) -> tuple[Any, Any]:  # noqa: C901 - every run-time check of one launch
        snap = [raw(t) for t in inputs] if hostile else None
        n_wire, n_poison = _len(wire_hits), _len(poison_hits)
        if hostile:
            push_tf(wire)
        why, out = None, None
        try:
            out = launch(*inputs)
        except BaseExc as err:  # noqa: BLE001
            why = "launch raised " + err_text(err)
        if hostile:
            extra, found = 0, False
            while len_tf() > 0:
                if pop_tf() is wire:
                    found = True
                    break
                extra += 1
            while len_td() > 0:
                pop_td()
                extra += 1
            if _len(poison_hits) > n_poison:
                return None, "called aten::" + text(poison_hits[n_poison]) + compute
            if _len(wire_hits) > n_wire:
                hit = text(wire_hits[n_wire])
                if hit in host_reads:
                    return None, "read tensor data on the host with torch." + hit + host_read
                return None, "called torch." + hit + compute
            if not found:
                return None, "removed the harness's torch-function tripwire during the launch"
            bad = timers_changed(timers)
            if bad:
                return None, "patched the timer: " + ", ".join(bad) + " replaced"
            if _len(sigmask(sig_block, [])) != mask0:
                return None, "changed the signal mask (signals stay blocked in a candidate run)"
            if why is None and extra:
                why = "left a torch function/dispatch mode active (the launch must restore torch state)"
        if why is not None:
            return None, why
        if _type(out) is not tensor_cls:
            return None, "output is " + text(_type(out).__name__) + ", not a torch.Tensor"
        if hostile:
            for i, t in _enumerate(inputs):
                if raw(t) != snap[i]:  # type: ignore[index]
                    return None, "mutated input " + _repr(i) + " in place"
            ptr = storage_of(out)
            if _any(_type(t) is tensor_cls and storage_of(t) == ptr for t in inputs):
                return None, "output aliases an input tensor"
            if _any(storage_of(k) == ptr for k in kept):
                return None, "output reuses the storage of an earlier call's output (cached result)"
            kept.append(out)
        return out, None

    def counter_intact() -> bool:
        """The traffic counter is still the one installed before kernel code existed."""
        if tr_patch.active is not tr_active or not _any(x is tr_counter for x in tr_active):  # type: ignore[union-attr]
            return False
        for m in tr_methods:
            if tr_builder.get(m) is not tr_wrappers[m]:  # type: ignore[union-attr, index]
                return False
        for holder, key, obj in tr_slots:  # traffic._add, closure cells, ... (traffic.slots)
            now = holder.cell_contents if key is None else holder.get(key, tr_missing)
            if now is not obj:
                return False
        return tr_grid.get("__call__") is tr_wrappers["grid_call"]  # type: ignore[union-attr, index]

    reasons: list[Any] = []
    traffic_rows: list[Any] = []
    if fatal is None:
        for inputs in cases:
            n0 = _len(tr_counter.launches) if tr_counter is not None else 0
            out, why = guarded(inputs)
            reasons.append(why)
            outputs.append(keep(out) if why is None else None)
            if tr_counter is not None:
                if not counter_intact():
                    fatal = "tampered with the interpreter's traffic counter"
                    break
                row = {"launches": 0.0, "bytes_loaded": 0.0, "bytes_stored": 0.0, "atomic_bytes": 0.0,
                       "dot_flops": 0.0, "programs": 0.0, "dot_bytes_loaded": 0.0}  # fmt: skip
                for rec in tr_counter.launches[n0:]:
                    row["launches"] += 1.0
                    if _float(rec["dot_flops"]) > 0:  # the cost model carries these loads per FLOP
                        row["dot_bytes_loaded"] += _float(rec["bytes_loaded"])
                    for key in (
                        "bytes_loaded",
                        "bytes_stored",
                        "atomic_bytes",
                        "dot_flops",
                        "programs",
                    ):
                        row[key] += _float(rec[key])
                traffic_rows.append(row)
    meta["reasons"] = reasons
    meta["traffic"] = traffic_rows

    # -- timing (CUDA only) ----------------------------------------------------------------
    def time_fn(
        fn: Any, sets: list[Any], samples: int, warmup: int
    ) -> tuple[dict[str, Any], list[Any]]:
        flush = torch_empty(64 * 1024 * 1024, dtype=int32, device="cuda")
        for i in _range(warmup):
            fn(*sets[i % _len(sets)])
        sync()
        ev_ms: list[float] = []
        wall_ms: list[float] = []
        last: list[Any] = [None] * _len(sets)
        for i in _range(samples):
            j = i % _len(sets)
            tb_zero(flush)
            sync()
            start, end = ev_new(ev_base, enable_timing=True), ev_new(ev_base, enable_timing=True)
            t0 = perf_ns()
            ev_record(start, stream)
            out = fn(*sets[j])
            ev_record(end, stream)
            sync()
            t1 = perf_ns()
            ev_ms.append(_float(ev_elapsed(start, end)))
            wall_ms.append((t1 - t0) / 1e6)
            last[j] = out
        return {"event_ms": ev_ms, "wall_ms": wall_ms, "samples": samples}, last

    if (
        fatal is None
        and timing
        and tsets
        and (not hostile or not _any(r is not None for r in reasons))
    ):
        samples, warmup = _int(timing.get("samples", 50)), _int(timing.get("warmup", 5))
        n_poison = _len(poison_hits)
        try:
            t, last = time_fn(launch, tsets, samples, warmup)
            if hostile:
                if _len(poison_hits) > n_poison:
                    fatal = "called aten::" + text(poison_hits[n_poison]) + " during the timed runs"
                elif timers_changed(timers):
                    fatal = "patched the timer during the timed runs"
                for o in last:
                    outputs.append(keep(o))
            else:
                t.update(
                    baseline_extras(
                        job,
                        tsets,
                        keep,
                        outputs,
                        sync,
                        ev_new,
                        ev_base,
                        ev_record,
                        ev_elapsed,
                        stream,
                    )
                )
            meta["timing"] = t
        except BaseExc as err:  # noqa: BLE001
            fatal = "timed run raised " + err_text(err)

    # -- results: written with captured callables only, the nonce last -------------------
    sigmask(sig_block, all_signals)  # no candidate signal handler runs from here on
    gc_disable()  # nor a finalizer of a candidate object
    if fatal is None and hostile and thread_count() > threads0:
        fatal = "kernel code left threads running"
    if fatal is None:
        after = shas()
        for name in before:
            if after.get(name) != before[name]:
                fatal = "harness file " + name + " was modified during the run"
                break
    try:
        torch_save(outputs, out_f)
        out_f.flush()
    except BaseExc as err:  # noqa: BLE001 - a failed save is the kernel's loss
        fatal = fatal or "could not save outputs: " + err_text(err)
    meta["fatal"] = fatal
    meta["denied"] = _list(denied)
    meta["nonce"] = nonce
    meta_f.seek(0)
    meta_f.truncate()
    meta_f.write(_repr(meta))
    meta_f.flush()
    exit_now(0)


def _baseline_extras(job: dict[str, Any], tsets: list[Any], keep: Any, outputs: list[Any], sync: Any,
                     ev_new: Any, ev_base: Any, ev_record: Any, ev_elapsed: Any, stream: Any) -> dict[str, Any]:  # fmt: skip
    """Baseline runs on CUDA (trusted code only): reference outputs of the timing sets and a
    calibration of the device (copy bandwidth, fp16 matmul rate) for the roofline bound."""
    import references as R  # noqa: N812 - shipped into baseline runs only, never next to a candidate

    ref = R.REFERENCES[job["op"]]
    for s in tsets:
        outputs.append(keep(ref(*[x.clone() for x in s])))

    def rate(fn: Any, work: float, reps: int = 10) -> float:
        fn()
        sync()
        start, end = ev_new(ev_base, enable_timing=True), ev_new(ev_base, enable_timing=True)
        ev_record(start, stream)
        for _ in range(reps):
            fn()
        ev_record(end, stream)
        sync()
        return work * reps / (float(ev_elapsed(start, end)) / 1e3)

    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
    out = {"bandwidth_Bps": rate(lambda: dst.copy_(src), 2.0 * src.numel()),  # read + write
           "matmul_flops": rate(lambda: torch.mm(a, a), 2.0 * 8192**3),
           "device_name": str(torch.cuda.get_device_name())}  # fmt: skip
    return out


def main() -> None:
    _run(_setup())


if __name__ == "__main__":
    main()

"""Candidate sources for the torch_softmax task: one correct kernel and the red-team cheats."""

from __future__ import annotations

from _kernels import SOFTMAX_JIT

GOOD_KERNEL = (
    SOFTMAX_JIT
    + """

def _good(x):
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _softmax[(m,)](x, out, n, x.stride(0), x.stride(1), BLOCK_N=triton.next_power_of_2(n))
    return out
"""
)

GOOD = GOOD_KERNEL + "\n\ndef launch(x):\n    return _good(x)\n"

ZEROS = "import torch\n\n\ndef launch(x):\n    return torch.zeros_like(x)\n"

CACHED = (
    GOOD_KERNEL
    + """

_CACHE = {}


def launch(x):
    if "out" not in _CACHE:
        _CACHE["out"] = _good(x)
    return _CACHE["out"]
"""
)

TORCH_REFERENCE = (
    "import torch\n\n\ndef launch(x):\n    return torch.softmax(x.float(), dim=-1).to(x.dtype)\n"
)
TORCH_FUNCTIONAL = (
    "import torch\nF = torch.nn.functional\n\n\ndef launch(x):\n    return F.softmax(x, -1)\n"
)
TENSOR_METHOD = "def launch(x):\n    e = (x - x.amax(-1, keepdim=True))\n    return e / e.sum(-1, keepdim=True)\n"

MUTATES = (
    GOOD_KERNEL
    + """

def launch(x):
    out = _good(x)
    x.fill_(0.0)
    return out
"""
)

SPECIAL_CASES_DEV = (
    GOOD_KERNEL
    + """

def launch(x):
    if tuple(x.shape) in ((8, 48), (5, 40)):
        return _good(x)
    return torch.zeros_like(x)
"""
)

PATCHES_TIMER = (
    GOOD_KERNEL
    + """
import time

time.perf_counter = lambda: 0.0


def launch(x):
    return _good(x)
"""
)

PATCHES_DO_BENCH_IN_LAUNCH = (
    GOOD_KERNEL
    + """

def launch(x):
    triton.testing.do_bench = lambda fn, *a, **k: 1e-9
    return _good(x)
"""
)

TAMPERS_HARNESS = (
    GOOD_KERNEL
    + """
with open("references.py", "a") as fh:
    fh.write("\\n# every candidate is correct\\n")


def launch(x):
    return _good(x)
"""
)

CALLS_LATE_GARBAGE = (
    GOOD_KERNEL
    + """

_N = [0]


def launch(x):
    _N[0] += 1
    out = _good(x)
    if _N[0] > 4:  # correct for the correctness cases, wrong in the timed runs
        out = torch.zeros_like(out)
    return out
"""
)


# -- issue 11: cheats that the in-process harness once accepted at score 1.0 --------------
# Each is written to get past the old harness (harness.py + references.py in the candidate's
# process, result.json as the verdict); the current one must reject each with its reason.

#: The torch reference with the runtime tripwire emptied: every FORBIDDEN_TORCH-like set
#: found through ``torch.sys.modules`` is emptied, and so is the tripwire reachable from
#: the torch-function mode stack; the call also runs under ``DisableTorchFunction``.
TRIPWIRE_EMPTIED = """
import torch


def _empty_tripwires():
    for mod in list(torch.sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if isinstance(d, dict):
            for key in ("FORBIDDEN_TORCH", "TRIPWIRE", "names"):
                if key in d:
                    d[key] = frozenset()
    try:
        mode = torch._C._get_function_stack_at(0)
        type(mode).__torch_function__.__globals__["names"] = frozenset()
    except Exception:
        pass


_empty_tripwires()


def launch(x):
    _empty_tripwires()
    with torch._C.DisableTorchFunction():
        return torch.softmax(x.float(), dim=-1).to(x.dtype)
"""

#: Garbage output (the input itself) after replacing every ``compare`` the harness
#: module(s) in the process expose with one that accepts everything.
REPLACES_COMPARE = """
import torch

for mod in list(torch.sys.modules.values()):
    d = getattr(mod, "__dict__", None)
    if isinstance(d, dict) and callable(d.get("compare")):
        d["compare"] = lambda *a, **k: (None, {})


def launch(x):
    return torch.empty_like(x).copy_(x)
"""

#: A timer patch with the timer check blinded: ``time.perf_counter`` replaced, and every
#: timer-check helper found in the process replaced by one that reports no change.
TIMER_BLINDED = (
    GOOD_KERNEL
    + """
import time

time.perf_counter = lambda: 0.0
for mod in list(torch.sys.modules.values()):
    d = getattr(mod, "__dict__", None)
    if isinstance(d, dict):
        for key in ("_timer_ids", "timers_now", "timers_changed"):
            if key in d:
                d[key] = lambda *a, **k: {}


def launch(x):
    return _good(x)
"""
)

#: Reading the reference through the harness module (``R.REFERENCES`` of the old
#: harness, the ``references`` module next to it, or the file itself).
READS_REFERENCE = """
import torch


def _reference():
    for name in ("__main__", "harness", "references", "runner", "kernelarena_runner"):
        mod = torch.sys.modules.get(name)
        refs = getattr(getattr(mod, "R", mod), "REFERENCES", None)
        if refs:
            return refs["softmax"]
    import references

    return references.REFERENCES["softmax"]


def launch(x):
    return _reference()(x)
"""

#: Writes its own result.json (speedup 50) -- by itself, and when that is refused from a
#: child process it starts, together with a forged out.meta -- then exits before the
#: harness can write anything.
WRITES_RESULT_JSON = """
import os
import sys

FAKE = '{"cases": [], "fatal": null, "timing": {"status": "measured", "speedup": 50.0}}'
META = repr({"nonce": "0" * 32, "mode": "candidate", "fatal": None, "reasons": [None] * 4,
             "timing": None, "denied": []})
SCRIPT = ("open('result.json', 'w').write(%r); open('out.meta', 'w').write(%r)" % (FAKE, META))
try:
    with open("result.json", "w") as fh:
        fh.write(FAKE)
except OSError:
    pass
try:
    import _posixsubprocess

    exe = sys.executable.encode()
    r, w = os.pipe()
    pid = _posixsubprocess.fork_exec([exe, b"-c", SCRIPT.encode()], [exe], True, (w,), None, None,
                                     -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None,
                                     -1, None, False)
    os.waitpid(pid, 0)
except Exception:
    pass
os._exit(0)
"""

#: Returns garbage and registers an atexit hook that rewrites result.json (and out.meta)
#: to say every case passed.
ATEXIT_REWRITE = """
import atexit

import torch

FAKE = '{"cases": [], "fatal": null, "timing": {"status": "measured", "speedup": 50.0}}'


def _rewrite():
    for name in ("result.json", "out.meta"):
        try:
            with open(name, "w") as fh:
                fh.write(FAKE)
        except OSError:
            pass


atexit.register(_rewrite)


def launch(x):
    return torch.empty_like(x).copy_(x)
"""

#: Edits the harness files (the old references.py, and whatever else ships) and restores
#: them at exit, so that a guard comparing only the final bytes sees nothing; the kernel
#: itself is correct.
EDITS_AND_RESTORES = (
    GOOD_KERNEL
    + """
import atexit

_ORIG = {}
for _name in ("references.py", "harness.py", "runner.py", "job.json"):
    try:
        with open(_name, "rb") as _fh:
            _ORIG[_name] = _fh.read()
        with open(_name, "ab") as _fh:
            _fh.write(b"\\n# every candidate is correct\\n")
    except OSError:
        pass


def _restore():
    for name, data in _ORIG.items():
        with open(name, "wb") as fh:
            fh.write(data)


atexit.register(_restore)


def launch(x):
    return _good(x)
"""
)

#: Past the audit hook: a child process (``_posixsubprocess`` is not audited) appends to
#: job.json; the kernel itself is correct.
CHILD_EDITS_HARNESS = (
    GOOD_KERNEL
    + """
import os
import sys

import _posixsubprocess

_exe = sys.executable.encode()
_r, _w = os.pipe()
_pid = _posixsubprocess.fork_exec([_exe, b"-c", b"open('job.json', 'a').write(' ')"], [_exe], True, (_w,),
                                  None, None, -1, -1, -1, -1, -1, -1, _r, _w, True, False, -1, None, None,
                                  None, -1, None, False)
os.waitpid(_pid, 0)


def launch(x):
    return _good(x)
"""
)

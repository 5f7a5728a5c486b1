"""The red-team battery: attacks a hostile candidate tries, run against any sandbox.

Each attack targets one clause of ``base.CONTAINMENT_PROMISE``. Its outcome is judged
against what the sandbox *reports* (``sandbox.protections().unmet()``):

* contained: PASS;
* not contained, and the sandbox reports that clause unmet: KNOWN-FAIL (honest);
* not contained although the sandbox claims the clause: FAIL (the report lies).

Attacks that could harm the host when they succeed (killing processes, remounting,
filling shared memory) are not run where the sandbox already admits the clause is
unmet; they count as KNOWN-FAIL with "not run". ``optiforge doctor`` runs the quick
attacks (``quick=True``) and prints N/N per mode; the test suite runs all of them in
every mode the machine has.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optiforge.errors import OptiforgeError
from optiforge.sandboxes.conformance import CheckResult

_CHECKOUT = Path(__file__).resolve().parents[2]
"""The project checkout (or site-packages for an installed optiforge)."""


@dataclass
class Ctx:
    """Host-side facts an attack needs, and what to clean up afterwards."""

    tag: str
    victim_pid: int
    secret: str
    python: str
    cleanup: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class Attack:
    name: str
    clause: str | None
    """The promise clause it tests (None: the parent's own safety, always required)."""
    fn: Callable[[Any, Ctx], tuple[bool, str]]
    """(contained, detail)."""
    destructive: bool = False
    quick: bool = True


def _run_py(sb: Any, ctx: Ctx, code: str, **kw: Any) -> Any:
    kw.setdefault("timeout_s", 20)
    return sb.run([ctx.python, "-c", code], **kw)


def _out(r: Any) -> str:
    return (r.stdout.strip() or r.stderr.strip())[-300:]


_CTYPES = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"


def proc_environ(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    code = _CTYPES + (
        "libc.umount2(b'/proc', 2)\n"
        "hits = []\n"
        "for p in os.listdir('/proc'):\n"
        "    if p.isdigit():\n"
        "        try:\n"
        "            if "
        + repr(ctx.secret.encode())
        + " in open(f'/proc/{p}/environ','rb').read():\n"
        "                hits.append(p)\n"
        "        except OSError: pass\n"
        "print('HITS', hits)\n"
    )
    r = _run_py(sb, ctx, code)
    return "HITS []" in r.stdout, _out(r)


def proc_mem(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    code = (
        "import os\nopened = []\n"
        f"pids = set(int(p) for p in os.listdir('/proc') if p.isdigit()) | {{{ctx.victim_pid}, 1}}\n"
        "for pid in sorted(pids - {os.getpid()}):\n"
        "    try:\n"
        "        with open(f'/proc/{pid}/mem', 'r+b'): opened.append(pid)\n"
        "    except OSError: pass\n"
        "print('OPENED', opened)\n"
    )
    r = _run_py(sb, ctx, code)
    return "OPENED []" in r.stdout, _out(r)


def kill_outside(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    code = (
        "import os, signal\n"
        f"for pid in ({ctx.victim_pid}, os.getppid(), 1, -1):\n"
        "    try: os.kill(pid, signal.SIGKILL)\n"
        "    except OSError as e: print(pid, e.strerror)\n"
        "print('DONE')\n"
    )
    _run_py(sb, ctx, code)
    time.sleep(0.1)
    alive = _alive(ctx.victim_pid)
    return alive, "victim alive" if alive else "victim killed"


def ptrace_outside(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    code = _CTYPES + (
        f"r = libc.ptrace(16, {ctx.victim_pid}, 0, 0)\n"  # PTRACE_ATTACH
        "print('ATTACH', r, os.strerror(ctypes.get_errno()))\n"
        f"if r == 0: libc.ptrace(17, {ctx.victim_pid}, 0, 0)\n"  # PTRACE_DETACH
    )
    r = _run_py(sb, ctx, code)
    return "ATTACH -1" in r.stdout, _out(r)


def new_user_namespace(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    code = _CTYPES + (
        "r = libc.unshare(0x10000000)\n"  # CLONE_NEWUSER: would give full capabilities
        "print('UNSHARE', r, os.strerror(ctypes.get_errno()))\n"
    )
    r = _run_py(sb, ctx, code)
    return "UNSHARE -1" in r.stdout, _out(r)


def _targets(ctx: Ctx) -> list[Path]:
    home = Path(os.path.expanduser("~"))
    dirs = [Path("/tmp"), Path("/dev/shm"), Path("/var/tmp"), home, _CHECKOUT, Path("/")]
    dirs += [Path("/etc"), Path("/usr")]
    return [d / f"optiforge-rt-{ctx.tag}" for d in dirs]


def write_outside(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    targets = _targets(ctx)
    ctx.cleanup += targets
    code = (
        f"for t in {[str(t) for t in targets]!r}:\n"
        "    try: open(t, 'w').write('pwned')\n"
        "    except OSError: pass\n"
    )
    _run_py(sb, ctx, code)
    leaked = [str(t) for t in targets if t.exists()]
    return not leaked, f"written on the host: {leaked}" if leaked else "nothing written"


def remount_rw(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    target = Path("/usr") / f"optiforge-rt-{ctx.tag}"
    ctx.cleanup.append(target)
    code = _CTYPES + (
        "for p in (b'/', b'/usr'):\n"
        "    r = libc.mount(None, p, None, 32 | 4096, None)\n"  # MS_REMOUNT | MS_BIND, rw
        "    print('MOUNT', p, r, os.strerror(ctypes.get_errno()))\n"
        f"try: open({str(target)!r}, 'w').write('pwned')\n"
        "except OSError as e: print('WRITE', e.strerror)\n"
    )
    r = _run_py(sb, ctx, code)
    return not target.exists(), _out(r)


def hardlink_secret(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    root = Path(getattr(sb, "root", "/tmp"))
    secret_file = root / f"optiforge-rt-secret-{ctx.tag}"
    secret_file.write_text(ctx.secret)
    secret_file.chmod(0o600)
    ctx.cleanup.append(secret_file)
    code = (
        "import os, shutil\n"
        f"s = {str(secret_file)!r}\n"
        "for how, fn in (('link', os.link), ('symlink', os.symlink)):\n"
        "    try: fn(s, 'stolen_' + how)\n"
        "    except OSError as e: print(how, e.strerror)\n"
        "try: shutil.copy(s, 'stolen_copy')\n"
        "except OSError as e: print('copy', e.strerror)\n"
    )
    r = _run_py(sb, ctx, code, collect=["**/*"])
    got = [k for k, v in r.files.items() if ctx.secret in (v if isinstance(v, str) else "")]
    return not got, f"collected the secret via {got}" if got else "secret not collected"


def symlink_walk(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    code = (
        "import os\nos.symlink('/', 'up')\nos.makedirs('a')\nos.symlink('/usr', 'a/b')\n"
        "open('ok.txt', 'w').write('ok')\n"
    )
    t0 = time.perf_counter()
    r = _run_py(sb, ctx, code, collect=["**/*"])
    took = time.perf_counter() - t0
    outside = [k for k in r.files if k.startswith(("up/", "a/b/"))]
    good = not outside and r.files.get("ok.txt") == "ok"
    return good, f"collected {len(r.files)} files ({outside[:3]}) in {took:.2f}s"


def fork_bomb(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    cap = int(getattr(sb, "max_procs", 256))
    code = (
        "import os, glob, time\n"
        "raised = []\n"
        "for f in glob.glob('/sys/fs/cgroup/**/pids.max', recursive=True)[:50]:\n"
        "    try: open(f, 'w').write('max'); raised.append(f)\n"
        "    except OSError: pass\n"
        "n = 0\n"
        f"for _ in range({cap + 150}):\n"
        "    try: pid = os.fork()\n"
        "    except OSError: break\n"
        "    if pid == 0: time.sleep(3); os._exit(0)\n"
        "    n += 1\n"
        "print('FORKED', n, 'RAISED', len(raised))\n"
    )
    r = _run_py(sb, ctx, code, timeout_s=15)
    try:
        parts = r.stdout.split()
        n, raised = int(parts[parts.index("FORKED") + 1]), int(parts[parts.index("RAISED") + 1])
    except (ValueError, IndexError):
        return True, f"the bomb did not report: {_out(r)}"
    return n <= cap and raised == 0, f"forked {n} under a cap of {cap}; raised pids.max {raised}x"


def fill_tmpfs(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    bound = int(getattr(sb, "tmpfs_mb", 256))
    want = bound + 128
    code = (
        "import os\nres = {}\n"
        "for d in ('/dev/shm', '/tmp'):\n"
        f"    n = 0\n    p = os.path.join(d, 'fill-{ctx.tag}')\n"
        "    try:\n"
        "        with open(p, 'wb') as f:\n"
        f"            for _ in range({want}):\n"
        "                f.write(b'x' * (1 << 20)); f.flush(); n += 1\n"
        "    except OSError: pass\n"
        "    res[d] = n\n"
        "    try: os.unlink(p)\n"
        "    except OSError: pass\n"
        "print('MB', res)\n"
    )
    ctx.cleanup += [Path(d) / f"fill-{ctx.tag}" for d in ("/dev/shm", "/tmp")]
    r = _run_py(sb, ctx, code, timeout_s=30, memory_mb=512)
    try:
        res = eval(r.stdout.split("MB", 1)[1], {"__builtins__": {}})  # noqa: S307 (dict of ints)
        worst = max(int(v) for v in res.values())
    except (IndexError, SyntaxError, ValueError, TypeError, NameError):
        return True, f"the fill did not report: {_out(r)}"
    return worst <= bound, f"wrote up to {worst} MB under a bound of {bound} MB"


def fill_workdir(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    """Write past every bound into the work dir itself (a disk root is the risk)."""
    mem = 64
    bound = mem + 2 * int(getattr(sb, "tmpfs_mb", 256))
    want = bound + 64
    code = (
        "import os, sys\nn = 0\n"
        "try:\n"
        f"    for i in range({want // 8}):\n"
        "        with open(f'fill{i}', 'wb') as f:\n"
        "            f.write(b'x' * (8 << 20))\n"
        "        n += 8\n"
        "        print('MB', n, flush=True)\n"
        "except OSError as e: print('STOP', e.strerror, flush=True)\n"
    )
    r = _run_py(sb, ctx, code, timeout_s=60, memory_mb=mem)
    done = [
        int(w)
        for line in r.stdout.splitlines()
        if line.startswith("MB ")
        for w in line.split()[1:2]
    ]
    wrote = max(done, default=0)
    return wrote <= bound, (
        f"wrote {wrote} MB into the work dir under a bound of {bound} MB "
        f"(root {getattr(sb, 'root', '?')}; killed_by={r.killed_by!r})"
    )


@contextlib.contextmanager
def _listener() -> Iterator[tuple[int, list[bytes]]]:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.1)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            got.append(b"conn")
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1], got
    finally:
        stop.set()
        t.join(2)
        srv.close()


def network_escape(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    with _listener() as (port, got):
        code = _CTYPES + (
            "import socket\n"
            "def tryconn():\n"
            "    try:\n"
            f"        socket.create_connection(('127.0.0.1', {port}), timeout=1).close(); return True\n"
            "    except OSError: return False\n"
            "ok = tryconn()\n"
            "for p in os.listdir('/proc'):\n"
            "    if ok or not p.isdigit(): continue\n"
            "    try: fd = os.open(f'/proc/{p}/ns/net', os.O_RDONLY)\n"
            "    except OSError: continue\n"
            "    if libc.setns(fd, 0x40000000) == 0: ok = tryconn()\n"
            "print('CONNECTED', ok)\n"
        )
        r = _run_py(sb, ctx, code, network=False)
        time.sleep(0.2)
    return not got, f"{len(got)} connection(s) reached the host listener; {_out(r)}"


def read_project(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    home_file = Path(os.path.expanduser("~")) / f".optiforge-rt-{ctx.tag}"
    home_file.write_text(ctx.secret)
    home_file.chmod(0o644)
    ctx.cleanup.append(home_file)
    pkg = Path(__file__).resolve().parents[1]
    paths = [
        home_file,
        pkg / "evals" / "__init__.py",
        pkg / "__init__.py",
        _CHECKOUT / "pyproject.toml",
    ]
    code = (
        "import sys\nread = []\n"
        f"for p in {[str(p) for p in paths]!r}:\n"
        "    try: open(p).read(1); read.append(p)\n"
        "    except OSError: pass\n"
        "try:\n    import optiforge.evals; read.append('import optiforge.evals')\n"
        "except ImportError: pass\n"
        "print('READ', read)\n"
    )
    r = _run_py(sb, ctx, code)
    return "READ []" in r.stdout, _out(r)


def see_others(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    other = Path(getattr(sb, "root", "/tmp")) / f"optiforge-sbx-rt-other-{ctx.tag}"
    other.mkdir()
    ctx.cleanup.append(other)
    code = (
        "import os\nseen = []\n"
        f"if os.path.exists('/proc/{ctx.victim_pid}'): seen.append('victim pid')\n"
        f"for d in ('/tmp', '/dev/shm', {str(other.parent)!r}):\n"
        "    try: seen += [n for n in os.listdir(d) if n.startswith('optiforge-sbx-')\n"
        "                  and n != os.path.basename(os.getcwd())]\n"
        "    except OSError: pass\n"
        "print('SEEN', seen)\n"
    )
    r = _run_py(sb, ctx, code)
    return "SEEN []" in r.stdout, _out(r)


def inherited_fds(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    code = "import os\nprint('FDS', sorted(int(f) for f in os.listdir('/proc/self/fd')))\n"
    r = _run_py(sb, ctx, code)
    try:
        fds = eval(r.stdout.split("FDS", 1)[1], {"__builtins__": {}})  # noqa: S307 (a list of ints)
    except (IndexError, SyntaxError, NameError):
        return False, _out(r)
    extra = [f for f in fds if f > 3]  # 0-2 and the fd of the listing itself
    return not extra, f"open fds: {fds}"


def _procs_with(needle: str) -> list[int]:
    hits = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if f.read().split(b"\0", 1)[0] == needle.encode():  # argv[0] is the mark
                    hits.append(int(entry))
        except (OSError, IndexError):
            continue
    return hits


def _wait_gone(needle: str, within_s: float = 3.0) -> list[int]:
    deadline = time.monotonic() + within_s
    left = _procs_with(needle)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _procs_with(needle)
    return left


def _kill_all(needle: str) -> None:
    for pid in _procs_with(needle):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def daemon_left_behind(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    mark = f"optiforge-rt-daemon-{ctx.tag}"
    code = (
        "import os, signal\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"        os.execv('/bin/sleep', [{mark!r}, '30'])\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    _run_py(sb, ctx, code)
    left = _wait_gone(mark)
    _kill_all(mark)
    return not left, f"{len(left)} daemon(s) outlived the run" if left else "no daemon left"


def timeout_kills_all(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    mark = f"optiforge-rt-stubborn-{ctx.tag}"
    code = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"        os.execv('/bin/sleep', [{mark!r}, '30'])\n"
        "time.sleep(30)\n"
    )
    r = _run_py(sb, ctx, code, timeout_s=1.5)
    left = _wait_gone(mark)
    _kill_all(mark)
    good = r.timed_out and not left
    return good, f"timed_out={r.timed_out}, {len(left)} process(es) left"


def parent_killed(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    """SIGKILL the process that called ``run``: the run must die with it."""
    mark = f"optiforge-rt-orphan-{ctx.tag}"
    iso = getattr(sb, "isolation", None)
    warm = getattr(sb, "warm", None)
    if getattr(sb, "backend", "") != "local":
        return True, "not applicable (local sandboxes only)"
    driver = (
        "from optiforge.sandboxes.local import LocalSandbox\n"
        f"LocalSandbox(isolation={iso!r}, warm={warm!r}).run([{ctx.python!r}, '-c',"
        f" \"import os; os.fork(); os.execv('/bin/sleep', [{mark!r}, '30'])\"],"
        " timeout_s=60)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", driver], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while len(_procs_with(mark)) < 2 and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    started = bool(_procs_with(mark))
    p.kill()
    p.wait()
    left = _wait_gone(mark)
    _kill_all(mark)
    if not started:
        return False, "the sandboxed command never started"
    return not left, f"{len(left)} process(es) outlived the killed caller"


def env_secret(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    r = _run_py(sb, ctx, "import os; print(sorted(os.environ.items()))")
    return ctx.secret not in r.stdout, "secret in env" if ctx.secret in r.stdout else "scrubbed"


# -- resource promises: the parent's own safety and the bounds it reports (issue 39)


def _entries(sb: Any) -> set[str]:
    """Paths in the sandbox's work-dir root and its warm spool: what a run may leave."""
    names: set[str] = set()
    pool = getattr(sb, "_warm_pool", None)
    for d in (getattr(sb, "root", None), getattr(pool, "_spool", None)):
        if d:
            with contextlib.suppress(OSError):
                mine = f"optiforge-sbx-{os.getpid()}-"  # other processes share the root
                names |= {os.path.join(str(d), n) for n in os.listdir(d) if n.startswith(mine)}
    return names


def _rm_rf(path: str) -> None:
    """Host-side cleanup of what an attack left (GNU rm walks iteratively: any depth)."""
    subprocess.run(["rm", "-rf", "--one-file-system", path], check=False)


def _dead_pid() -> int:
    """The pid of a process that has just exited (a dead sandbox owner)."""
    p = subprocess.Popen(["true"], stdin=subprocess.DEVNULL)
    p.wait()
    return p.pid


def _plant_deep_tree(top: str, depth: int) -> None:
    """``top/d/d/.../d`` (``depth`` levels), made through dir fds (no path-length limit)."""
    os.mkdir(top)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)


def deep_directory(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    """A 3000-level directory: the parent returns, deletes it, and the root stays usable.

    Also plants the same tree as a dead caller's leftover: the sweep of the root
    (what every later sandbox on it runs first) must remove it, never raise.
    """
    depth = 3000
    code = (
        "import os\n"
        f"for _ in range({depth}):\n"
        "    os.mkdir('d'); os.chdir('d')\n"
        "open('bottom', 'w').write('x')\n"
        f"print('DEEP', {depth})\n"
    )
    _run_py(sb, ctx, "pass")  # a warm pool makes its spool on the first run
    before = _entries(sb)
    detail = []
    try:
        # collect walks the tree too (os.walk recursed on Python 3.11)
        r = _run_py(sb, ctx, code, timeout_s=30, collect=["**/bottom"])
        detail.append(f"run returned ({'DEEP' in r.stdout and 'made' or 'not made'})")
        crashed = ""
    except RecursionError as e:
        crashed = f"the parent crashed: RecursionError ({str(e)[:60]})"
    left = sorted(_entries(sb) - before)
    for path in left:
        _rm_rf(path)
    try:
        again = "AGAIN" in _run_py(sb, ctx, "print('AGAIN')").stdout
    except RecursionError:
        again = False
    root = getattr(sb, "root", None)
    swept = ""
    if root is not None and getattr(sb, "backend", "") == "local":
        from optiforge.sandboxes.local import sweep_stale

        planted = os.path.join(str(root), f"optiforge-sbx-{_dead_pid()}-rt{ctx.tag}")
        _plant_deep_tree(planted, depth)
        try:
            sweep_stale(str(root))
            swept = "" if not os.path.exists(planted) else "the sweep left a dead caller's dir"
        except RecursionError as e:
            swept = f"the sweep of the root raised RecursionError ({str(e)[:60]})"
        finally:
            _rm_rf(planted)
    bad = [x for x in (crashed, f"left {len(left)} dir(s) behind" if left else "", swept) if x]
    if not again:
        bad.append("the next run on the root failed")
    return not bad, "; ".join(bad) if bad else ", ".join(detail) + "; deleted; next run ok"


def sparse_output(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    """A 500 MB sparse output file must not be read whole by the parent."""
    import resource

    size = 500 << 20
    code = f"f = open('big.bin', 'wb'); f.truncate({size}); f.close(); print('MADE')\n"
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = _run_py(sb, ctx, code, collect=["big.bin"])
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    got = len(r.files.get("big.bin", b""))
    cap = int(getattr(sb, "max_collect_bytes", 64 << 20))
    note = next((n for n in r.protections.notes if "big.bin" in n), "")
    return got <= cap and got < size, (
        f"collected {got} of {size} bytes (cap {cap}); parent peak RSS +{grew:.0f} MB; {note}"
    )


def memory_cgroup_kill(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    """Children that together exceed the memory cgroup: the result must say ``memory``."""
    if not sb.protections().memory_cgroup:
        return True, "not applicable: no memory cgroup (memory is bounded per process)"
    mem = 256  # a warm fork of a numpy zygote starts at ~140 MB of address space
    bound = mem + 2 * int(getattr(sb, "tmpfs_mb", 256))
    each = 96  # each child stays under RLIMIT_AS; together they pass the cgroup's limit
    n = bound // each + 3
    code = (
        "import os, time\nkids = []\n"
        f"for _ in range({n}):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        f"        b = b'x' * ({each} << 20); time.sleep(1.5); os._exit(0)\n"
        "    kids.append(pid)\n"
        "st = [os.waitpid(k, 0)[1] for k in kids]\n"
        "print('KILLED', sum(os.WIFSIGNALED(s) for s in st))\n"
    )
    r = _run_py(sb, ctx, code, memory_mb=mem, timeout_s=30)
    return r.killed_by == "memory", (
        f"{n} x {each} MB under a cgroup of {bound} MB: rc {r.returncode}, "
        f"killed_by={r.killed_by!r}, {_out(r)[-40:]}"
    )


def killed_from_outside(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    """SIGKILL each process between the caller and the command: a failed run, never a raise."""
    if getattr(sb, "backend", "") != "local":
        return True, "not applicable (local sandboxes only)"
    outcomes: list[str] = []
    bad = False
    level = 0
    while level < 8:
        mark = f"optiforge-rt-victim-{ctx.tag}-{level}"
        box: dict[str, Any] = {}

        def killer(mark: str = mark, level: int = level, box: dict[str, Any] = box) -> None:
            deadline = time.monotonic() + 20
            hits: list[int] = []
            while not hits and time.monotonic() < deadline:
                hits = _procs_with(mark)
                time.sleep(0.02)
            chain, me, pid = [], os.getpid(), hits[0] if hits else 0
            while pid > 1 and pid != me:
                chain.append(pid)
                with open(f"/proc/{pid}/stat", "rb") as f:
                    pid = int(f.read().rsplit(b")", 1)[1].split()[1])
            chain.reverse()
            box["depth"] = len(chain)
            if level < len(chain):
                with contextlib.suppress(OSError):
                    os.kill(chain[level], signal.SIGKILL)

        t = threading.Thread(target=killer, daemon=True)
        t.start()
        try:
            r = _run_py(
                sb, ctx, f"import os; os.execv('/bin/sleep', [{mark!r}, '5'])", timeout_s=15
            )
            outcome = f"L{level}: rc {r.returncode} {r.killed_by}"
            bad |= r.ok
        except OptiforgeError as e:
            outcome, bad = f"L{level}: raised {type(e).__name__}: {str(e)[:70]}", True
        t.join(25)
        _kill_all(mark)
        outcomes.append(outcome)
        level += 1
        if level >= box.get("depth", 0):
            break
    try:
        again = "AGAIN" in _run_py(sb, ctx, "print('AGAIN')").stdout
    except OptiforgeError as e:
        again, bad = False, True
        outcomes.append(f"next run raised {type(e).__name__}")
    if not again:
        bad = True
        outcomes.append("the next run failed")
    return not bad, "; ".join(outcomes)


def caller_killed_workdir(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    """SIGKILL the caller mid-run: the next optiforge process to start removes its work dir."""
    if getattr(sb, "backend", "") != "local":
        return True, "not applicable (local sandboxes only)"
    from optiforge.sandboxes.local import default_root

    mark = f"optiforge-rt-held-{ctx.tag}"
    iso, warm = getattr(sb, "isolation", None), getattr(sb, "warm", None)
    driver = (
        "from optiforge.sandboxes.local import LocalSandbox\n"
        f"LocalSandbox(isolation={iso!r}, warm={warm!r}).run([{ctx.python!r}, '-c',"
        f" \"import os; open('held', 'wb').write(b'x' * (8 << 20)); "
        f"os.execv('/bin/sleep', [{mark!r}, '30'])\"], timeout_s=60)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", driver], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not _procs_with(mark) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    p.kill()
    p.wait()
    _wait_gone(mark)
    _kill_all(mark)
    root = str(default_root())
    prefix = f"optiforge-sbx-{p.pid}-"

    def mine() -> list[str]:
        return [n for n in os.listdir(root) if n.startswith(prefix)]

    left_at_kill = mine()
    # any optiforge process start: the CLI's entry point, its cheapest command
    subprocess.run(
        [sys.executable, "-m", "optiforge.cli", "--version"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    left = mine()
    for name in left:
        _rm_rf(os.path.join(root, name))
    return not left, (
        f"{len(left_at_kill)} dir(s) of the killed caller in {root}; "
        f"{len(left)} left after the next optiforge start"
    )


ATTACKS: list[Attack] = [
    Attack("env_secret", "no_secrets", env_secret),
    Attack("proc_environ", "no_secrets", proc_environ),
    Attack("proc_mem", "no_signals_or_ptrace", proc_mem),
    Attack("kill_outside", "no_signals_or_ptrace", kill_outside, destructive=True),
    Attack("ptrace_outside", "no_signals_or_ptrace", ptrace_outside, destructive=True),
    Attack("new_user_namespace", "no_signals_or_ptrace", new_user_namespace),
    Attack("write_outside", "writes_confined", write_outside),
    Attack("remount_rw", "writes_confined", remount_rw, destructive=True),
    Attack("fill_tmpfs", "bounded_resources", fill_tmpfs, destructive=True, quick=False),
    Attack("fork_bomb", "bounded_resources", fork_bomb, destructive=True),
    Attack("hardlink_secret", "no_secrets", hardlink_secret),
    Attack("symlink_walk", None, symlink_walk),
    Attack("network_escape", "no_network", network_escape, destructive=True),
    Attack("read_project", "minimal_read_view", read_project),
    Attack("see_others", "no_view_of_others", see_others),
    Attack("inherited_fds", "no_secrets", inherited_fds),
    Attack("daemon_left_behind", "dies_with_timeout_and_parent", daemon_left_behind),
    Attack("timeout_kills_all", "dies_with_timeout_and_parent", timeout_kills_all, quick=False),
    Attack("parent_killed", "dies_with_timeout_and_parent", parent_killed, quick=False),
    Attack("deep_directory", None, deep_directory),
    Attack("sparse_output", None, sparse_output),
    Attack("memory_cgroup_kill", "bounded_resources", memory_cgroup_kill, quick=False),
    Attack("killed_from_outside", None, killed_from_outside, quick=False),
    Attack(
        "caller_killed_workdir", "dies_with_timeout_and_parent", caller_killed_workdir, quick=False
    ),
    Attack("fill_workdir", "bounded_resources", fill_workdir, destructive=True, quick=False),
]
"""Every attack, in the order the battery runs them."""


# -- attacks specific to warm runs (forks of one zygote): one run against the next,
# a concurrent sibling, and the zygote itself. Run when the sandbox serves runs warm.


def _split(s: str) -> tuple[str, str]:
    """A needle in two halves: the searching run never holds it contiguously itself."""
    return s[: len(s) // 2], s[len(s) // 2 :]


def warm_leftover_files(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    name = f"optiforge-rt-left-{ctx.tag}"
    a = (
        "import os\n"
        "wd = os.getcwd()\n"
        f"for d in (wd, os.path.dirname(wd), '/tmp', '/dev/shm', '/var/tmp', os.environ['HOME'],"
        f" {'/.optiforge-spool'!r}, '/'):\n"
        "    try: open(os.path.join(d, " + repr(name) + "), 'w').write('x')\n"
        "    except OSError: pass\n"
        "print('WROTE')\n"
    )
    b = (
        "import os\nfound = []\n"
        "wd = os.getcwd()\n"
        "for d in (wd, os.path.dirname(wd), '/tmp', '/dev/shm', '/var/tmp', '/'):\n"
        "    for root, dirs, files in os.walk(d):\n"
        f"        found += [os.path.join(root, f) for f in files if f == {name!r}]\n"
        "        if root.count('/') > 4: dirs[:] = []\n"
        "print('FOUND', found)\n"
    )
    ra = _run_py(sb, ctx, a)
    rb = _run_py(sb, ctx, b)
    ok = "WROTE" in ra.stdout and "FOUND []" in rb.stdout
    return ok, f"first: {_out(ra)}; next: {_out(rb)}"


def warm_memory_patch(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    a = (
        "import os, sys, math, json\n"
        "import numpy as np\n"
        "np.pi = 3.0; np.sum = lambda *a, **k: 42; math.sqrt = lambda x: -1\n"
        "json.dumps = lambda *a, **k: 'PATCHED'\n"
        f"np.optiforge_mark = {ctx.tag!r}; sys.modules['optiforge_rt_mark'] = np\n"
        "shared = []\n"
        "for line in open('/proc/self/maps'):\n"
        "    perms = line.split()[1]\n"
        "    if perms[1] == 'w' and perms[3] == 's': shared.append(line.strip())\n"
        "print('PATCHED', len(shared))\n"
    )
    b = (
        "import sys, math, json\nimport numpy as np\n"
        "bad = []\n"
        "if np.pi != 3.141592653589793: bad.append('np.pi')\n"
        "if np.sum([1, 2]) != 3: bad.append('np.sum')\n"
        "if math.sqrt(4.0) != 2.0: bad.append('math.sqrt')\n"
        "if json.dumps(1) != '1': bad.append('json.dumps')\n"
        "if hasattr(np, 'optiforge_mark') or 'optiforge_rt_mark' in sys.modules: bad.append('mark')\n"
        "print('BAD', bad)\n"
    )
    ra = _run_py(sb, ctx, a)
    rb = _run_py(sb, ctx, b)
    ok = "PATCHED 0" in ra.stdout and "BAD []" in rb.stdout
    return ok, f"first: {_out(ra)}; next: {_out(rb)}"


def warm_memory_scan(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    """The next run reads all of its own memory for the previous run's code and the secret."""
    mark = f"optiforge-rt-code-{ctx.tag}-mark"
    a = f"x = {mark!r}\nprint('A', len(x))\n"
    needles = [_split(mark), _split(ctx.secret)]
    b = (
        "import re\n"
        f"needles = {needles!r}\n"
        "hits = {i: 0 for i in range(len(needles))}\n"
        "scanned = 0\n"
        "mem = open('/proc/self/mem', 'rb', buffering=0)\n"
        "for line in open('/proc/self/maps').read().splitlines():\n"
        "    addr, perms = line.split()[:2]\n"
        "    if perms[0] != 'r' or line.endswith(('[vvar]', '[vsyscall]')): continue\n"
        "    lo, hi = (int(v, 16) for v in addr.split('-'))\n"
        "    pos = lo\n"
        "    while pos < hi:\n"
        "        n = min(1 << 20, hi - pos)\n"
        "        try:\n"
        "            mem.seek(pos); chunk = mem.read(n)\n"
        "        except OSError: break\n"
        "        scanned += len(chunk)\n"
        "        for i, (h1, h2) in enumerate(needles):\n"
        "            b1, b2 = h1.encode(), h2.encode()\n"
        "            j = chunk.find(b1)\n"
        "            while j >= 0:\n"
        "                if chunk[j + len(b1): j + len(b1) + len(b2)] == b2: hits[i] += 1\n"
        "                j = chunk.find(b1, j + 1)\n"
        "        pos += n\n"
        "print('SCANNED', scanned, 'HITS', sorted(hits.items()))\n"
    )
    ra = _run_py(sb, ctx, a)
    rb = _run_py(sb, ctx, b, timeout_s=60)
    try:
        scanned = int(rb.stdout.split("SCANNED", 1)[1].split()[0])
    except (IndexError, ValueError):
        return False, f"the scan did not report: {_out(rb)}"
    ok = ra.ok and scanned > 1 << 20 and "HITS [(0, 0), (1, 0)]" in rb.stdout
    return ok, f"next run scanned {scanned >> 20} MB of its memory: {_out(rb)}"


def _zygote_state(sb: Any) -> tuple[int | None, int]:
    pool = getattr(sb, "_warm_pool", None)
    return (getattr(pool, "zygote_pid", None), int(getattr(pool, "generation", 0)))


def warm_signal_zygote(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    """Kill and ptrace everything in sight while a sibling runs; zygote and sibling live."""
    _run_py(sb, ctx, "pass")  # the zygote is up
    before = _zygote_state(sb)
    sibling: dict[str, Any] = {}

    def run_sibling() -> None:
        sibling["r"] = _run_py(sb, ctx, "import time; time.sleep(3); print('SIBLING-OK')")

    t = threading.Thread(target=run_sibling)
    t.start()
    time.sleep(0.5)
    pids = [before[0] or 0, ctx.victim_pid, os.getpid()]
    code = _CTYPES + (
        "import signal\nres = []\n"
        f"targets = set(int(p) for p in os.listdir('/proc') if p.isdigit()) | set({pids!r})\n"
        "targets |= set(range(1, 64))\n"
        "targets.discard(os.getpid())\n"
        "for pid in sorted(targets):\n"
        "    if libc.ptrace(16, pid, 0, 0) == 0: res.append(('ptrace', pid))\n"
        "    try: os.kill(pid, signal.SIGKILL); res.append(('kill', pid))\n"
        "    except OSError: pass\n"
        "try: os.kill(-1, signal.SIGKILL)\n"
        "except OSError: pass\n"
        "print('RES', res)\n"
    )
    r = _run_py(sb, ctx, code)
    t.join(30)
    after = _zygote_state(sb)
    alive = before[0] is not None and _alive(before[0])
    nxt = _run_py(sb, ctx, "print('NEXT-OK')")
    sib = sibling.get("r")
    sib_ok = sib is not None and "SIBLING-OK" in sib.stdout
    ok = alive and after == before and sib_ok and "NEXT-OK" in nxt.stdout
    ok = ok and _zygote_state(sb) == before
    return ok, (
        f"zygote alive={alive}, restarted={_zygote_state(sb) != before}, sibling ok={sib_ok}; "
        f"attacker: {_out(r)}"
    )


def warm_background_process(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    mark = f"optiforge-rt-warmbg-{ctx.tag}"
    a = (
        "import os, signal, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"        os.execv('/bin/sleep', [{mark!r}, '30'])\n"
        "    if os.fork() == 0:\n"  # a pure-Python daemon too: the forked interpreter itself
        "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "        for _ in range(300):\n"
        "            time.sleep(0.1)\n"
        "            try: open('/tmp/bg-alive', 'w').write('x')\n"
        "            except OSError: pass\n"
        "        os._exit(0)\n"
        "    os._exit(0)\n"
        "os.wait()\nprint('SPAWNED')\n"
    )
    b = (
        "import os\n"
        "procs = [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]\n"
        "print('PROCS', sorted(procs), 'BG', os.path.exists('/tmp/bg-alive'))\n"
    )
    ra = _run_py(sb, ctx, a)
    time.sleep(0.3)
    rb = _run_py(sb, ctx, b)
    left = _wait_gone(mark)
    _kill_all(mark)
    # the next run sees its own pid 1 (the run's init) and nothing else
    ok = "SPAWNED" in ra.stdout and not left and "PROCS ['1'] BG False" in rb.stdout
    return ok, f"{len(left)} daemon(s) left; next run: {_out(rb)}"


def warm_sibling_network(sb: Any, ctx: Ctx) -> tuple[bool, str]:
    """A sibling listens on loopback and an abstract unix socket; another run connects."""
    name = f"optiforge-rt-{ctx.tag}"
    listen = (
        "import socket, time\n"
        "t = socket.socket(); t.bind(('127.0.0.1', 47613)); t.listen(4)\n"
        "u = socket.socket(socket.AF_UNIX); u.bind('\\0' + " + repr(name) + "); u.listen(4)\n"
        "print('LISTENING', flush=True)\ntime.sleep(3)\n"
    )
    sibling: dict[str, Any] = {}
    t = threading.Thread(target=lambda: sibling.setdefault("r", _run_py(sb, ctx, listen)))
    t.start()
    time.sleep(0.8)
    conn = (
        "import socket\nok = []\n"
        "try: socket.create_connection(('127.0.0.1', 47613), timeout=1).close(); ok.append('tcp')\n"
        "except OSError: pass\n"
        "u = socket.socket(socket.AF_UNIX)\n"
        "try: u.connect('\\0' + " + repr(name) + "); ok.append('unix')\n"
        "except OSError: pass\n"
        "print('CONNECTED', ok)\n"
    )
    r = _run_py(sb, ctx, conn)
    t.join(30)
    listened = "LISTENING" in getattr(sibling.get("r"), "stdout", "")
    return listened and "CONNECTED []" in r.stdout, f"sibling listened={listened}; {_out(r)}"


WARM_ATTACKS: list[Attack] = [
    Attack("warm_leftover_files", "writes_confined", warm_leftover_files),
    Attack("warm_memory_patch", "no_view_of_others", warm_memory_patch),
    Attack("warm_memory_scan", "no_secrets", warm_memory_scan, quick=False),
    Attack("warm_signal_zygote", "no_signals_or_ptrace", warm_signal_zygote, destructive=True),
    Attack("warm_background_process", "dies_with_timeout_and_parent", warm_background_process),
    Attack("warm_sibling_network", "no_network", warm_sibling_network),
]
"""Attacks of one warm run on the next, on a concurrent sibling and on the zygote."""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@contextlib.contextmanager
def victim(secret: str) -> Iterator[int]:
    """A host process holding ``secret`` in its environment (what attacks go after)."""
    env = dict(os.environ, OPTIFORGE_RT_SECRET=secret)
    p = subprocess.Popen(["sleep", "120"], env=env, stdin=subprocess.DEVNULL)
    try:
        yield p.pid
    finally:
        p.kill()
        p.wait()


def run_attack(sandbox: Any, attack: Attack, ctx: Ctx, unmet: dict[str, str]) -> CheckResult:
    """One attack, judged against the sandbox's own report (see the module doc)."""
    claimed = attack.clause is None or attack.clause not in unmet
    t0 = time.perf_counter()
    if attack.destructive and not claimed:
        return CheckResult(
            name=attack.name,
            passed=False,
            expected_failure=True,
            detail=f"not run: {attack.clause} reported unmet ({unmet[attack.clause or '']})",
        )
    try:
        contained, detail = attack.fn(sandbox, ctx)
    except OptiforgeError as e:
        contained, detail = False, f"{type(e).__name__}: {e}"
    finally:
        for path in ctx.cleanup:
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() else path.unlink()
        ctx.cleanup.clear()
    if not contained and attack.clause is not None and not claimed:
        detail += f" (reported: {attack.clause} unmet)"
    return CheckResult(
        name=attack.name,
        passed=contained,
        expected_failure=not contained and not claimed,
        detail=detail,
        duration_s=time.perf_counter() - t0,
    )


def red_team(
    sandbox: Any, *, quick: bool = False, only: list[str] | None = None, warm: bool | None = None
) -> list[CheckResult]:
    """Run the battery against ``sandbox`` (``quick``: skip the slow attacks).

    warm: also run ``WARM_ATTACKS`` (one run against the next, the zygote, a sibling);
    default: when the sandbox serves runs warm.
    """
    if warm is None:
        warm = bool(getattr(sandbox, "warm_active", lambda: False)())
    tag = uuid.uuid4().hex[:12]
    secret = f"sk-optiforge-redteam-{tag}"
    unmet = sandbox.protections().unmet() if hasattr(sandbox, "protections") else {}
    python = str(getattr(sandbox, "python", "python3"))
    results = []
    old = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = secret  # what env_secret looks for
    try:
        with victim(secret) as pid:
            ctx = Ctx(tag=tag, victim_pid=pid, secret=secret, python=python)
            if warm and hasattr(sandbox, "close"):
                sandbox.close()  # the zygote restarts with the secret in the caller's env
            for attack in ATTACKS + (WARM_ATTACKS if warm else []):
                if (only is not None and attack.name not in only) or (quick and not attack.quick):
                    continue
                results.append(run_attack(sandbox, attack, ctx, unmet))
    finally:
        if old is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = old
    return results


__all__ = ["ATTACKS", "WARM_ATTACKS", "Attack", "red_team", "run_attack"]

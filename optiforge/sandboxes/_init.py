"""The sandbox's init: runs *inside* the isolation, before any candidate code.

``LocalSandbox`` starts ``python -I -S -c BOOT`` (the trusted interpreter, no site,
no user paths); BOOT reads this module's compiled code from stdin and runs it, and
``main`` then reads the run's configuration (8-byte little-endian length + a
``marshal``-ed dict) from stdin. Only the standard library is used (no optiforge
import: the project is not visible in the sandbox).

Stages, by ``cfg["mode"]``:

* ``unshare`` (root, no bubblewrap): **outer** joins the run's cgroups (fds opened by
  the parent), sets a parent-death SIGKILL, ``unshare``s mount/PID/IPC/UTS (and net)
  namespaces and forks **pid 1** of the new PID namespace, then relays its exit
  status. pid 1 builds a minimal read-only root on a tmpfs (the interpreter, its
  libraries, system dirs, the work dir read-write, fresh ``/proc``, size-bounded
  tmpfs ``/tmp`` and ``/dev/shm``, a tiny ``/dev``), ``pivot_root``s into it, brings up
  loopback and forks the **command**.
* ``bwrap``: bubblewrap already built the namespaces and the view; this init is its
  pid 1 (``--as-pid-1``): joins nothing (the parent did, through bwrap's fds), forks
  the command.
* ``none``: no namespaces; this process becomes the command itself.

The command stage: new session, rlimits (hard = soft, so they cannot be raised; CPU time's hard
limit is one second above the soft one, so the kernel's SIGXCPU names the cause),
drop to the run's unprivileged uid/gid (a fresh random one per run when root),
``PR_SET_NO_NEW_PRIVS``, a seccomp filter (ptrace, process_vm_*, namespace and mount
syscalls, kernel keyring, bpf, perf, module loading ... fail with EPERM), all other
fds closed, then ``execvpe``. Setup failures are reported on a status pipe only the
init holds (closed before exec), so a candidate cannot fake one.
"""

import ctypes
import os
import sys

# Linux constants (x86_64 and aarch64 share these).
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
_NS_FLAGS = 0x7E020080  # every CLONE_NEW* (incl. NEWCGROUP, NEWUSER, NEWTIME)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 1, 38, 22
SECCOMP_MODE_FILTER = 2

_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_DENY = {
    # ptrace process_vm_readv/writev unshare setns mount umount2 pivot_root chroot
    # add_key request_key keyctl bpf perf_event_open userfaultfd kexec_load
    # kexec_file_load init_module finit_module delete_module name_to_handle_at
    # open_by_handle_at iopl ioperm swapon swapoff reboot syslog acct quotactl kcmp
    # pidfd_getfd open_tree move_mount fsopen fsconfig fsmount fspick mount_setattr
    # settimeofday clock_settime adjtimex vhangup lookup_dcookie
    "x86_64": [101, 310, 311, 272, 308, 165, 166, 155, 161, 248, 249, 250, 321, 298, 323]
    + [246, 320, 175, 313, 176, 303, 304, 172, 173, 167, 168, 169, 103, 163, 179, 312]
    + [438, 428, 429, 430, 431, 432, 433, 442, 164, 227, 159, 153, 212],
    "aarch64": [117, 270, 271, 97, 268, 40, 39, 41, 51, 217, 218, 219, 280, 241, 282]
    + [104, 294, 105, 273, 106, 264, 265, 224, 225, 142, 116, 89, 60, 272]
    + [438, 428, 429, 430, 431, 432, 433, 442, 170, 112, 171, 58, 18],
}
_CLONE = {"x86_64": 56, "aarch64": 220}
_CLONE3 = 435

_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _b(s):
    return None if s is None else s.encode()


def mount(src, target, fstype, flags, data=None):
    _check(
        _libc.mount(_b(src), _b(target), _b(fstype), ctypes.c_ulong(flags), _b(data)),
        f"mount {target}",
    )


def prctl(option, arg):
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl {option}")


class _Filter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    ]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def seccomp_program(machine):
    """The BPF program (list of (code, jt, jf, k)) for ``machine``, or None if unknown."""
    if machine not in _ARCH:
        return None
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    kill = 0x80000000
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, _ARCH[machine]), (ret, 0, 0, kill), (ld, 0, 0, 0)]
    if machine == "x86_64":  # the x32 ABI numbers (bit 30) would bypass the list
        prog += [(jge, 0, 1, 0x40000000), (ret, 0, 0, eperm)]
    for nr in _DENY[machine]:
        prog += [(jeq, 0, 1, nr), (ret, 0, 0, eperm)]
    # clone3 passes its flags in memory BPF cannot read: ENOSYS makes libc fall back to clone.
    prog += [(jeq, 0, 1, _CLONE3), (ret, 0, 0, enosys)]
    prog += [(jeq, 0, 3, _CLONE[machine]), (ld, 0, 0, 16), (jset, 0, 1, _NS_FLAGS)]
    prog += [(ret, 0, 0, eperm), (ret, 0, 0, allow)]
    return prog


_FPROG: list = []  # the built filter, once per process (a warm zygote builds it for every run)


def _seccomp_fprog():
    if not _FPROG:
        prog = seccomp_program(os.uname().machine)
        if prog is None:
            _FPROG.append(None)
        else:
            arr = (_Filter * len(prog))(*[_Filter(*ins) for ins in prog])
            _FPROG.append((_Prog(len(prog), arr), arr))
    return _FPROG[0]


def install_seccomp():
    built = _seccomp_fprog()
    if built is None:
        return False
    _check(
        _libc.prctl(
            PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(built[0]), 0, 0
        ),
        "seccomp",
    )
    return True


def _mkdirs(path):
    os.makedirs(path, mode=0o755, exist_ok=True)


def _touch(path):
    _mkdirs(os.path.dirname(path))
    if not os.path.exists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


TMPFS_DIRS = ("/dev/shm", "/tmp")
"""Where every run gets its own empty, size-bounded tmpfs."""
TMP_STASH = "/.optiforge-tmpbinds"


def under_tmpfs(paths):
    """The paths of ``paths`` that lie in a run's private /tmp or /dev/shm."""
    return [p for p in paths if any(p == d or p.startswith(d + "/") for d in TMPFS_DIRS)]


def build_root(cfg):
    """Minimal read-only root at ``cfg['newroot']``; pivot into it (pid 1, unshare mode)."""
    new = cfg["newroot"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755")
    ro = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
    for link, target in cfg["symlinks"]:
        _mkdirs(os.path.dirname(new + link))
        os.symlink(target, new + link)
    # /dev: a few character devices bound from the host, nothing else.
    _mkdirs(new + "/dev")
    mount("tmpfs", new + "/dev", "tmpfs", MS_NOSUID, "size=64k,mode=0755")
    for name in ("null", "zero", "full", "random", "urandom"):
        _touch(new + "/dev/" + name)
        mount("/dev/" + name, new + "/dev/" + name, None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0")):
        os.symlink(target, new + "/dev/" + name)
    os.symlink("/proc/self/fd/1", new + "/dev/stdout")
    os.symlink("/proc/self/fd/2", new + "/dev/stderr")
    # the private /tmp and /dev/shm first: a view path under them (an interpreter in a
    # venv under /tmp) is bound onto the fresh tmpfs instead of being hidden by it
    tmpfs_opts = f"size={cfg['tmpfs_kb']}k,nr_inodes={cfg['tmpfs_inodes']},mode=1777"
    for d in TMPFS_DIRS:
        _mkdirs(new + d)
        mount("tmpfs", new + d, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_opts)
    for path in cfg["ro_binds"]:
        dest = new + path
        if os.path.isdir(path):
            _mkdirs(dest)
        else:
            _touch(dest)
        mount(path, dest, None, MS_BIND | MS_REC)
        mount(None, dest, None, ro)
    for src, dest in cfg.get("rw_binds", ()):
        _mkdirs(new + dest)  # the warm pool's spool of run dirs (each run hides it again)
        mount(src, new + dest, None, MS_BIND)
        mount(None, new + dest, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV)
    for path in cfg["masks"]:
        mount("tmpfs", new + path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0755")
    if cfg["mode"] == "zygote":
        # a warm run mounts its own /tmp and /dev/shm: it re-binds the view paths under
        # them from this stash (taken with the masks inside, hence from the new root)
        for i, path in enumerate(under_tmpfs(cfg["ro_binds"])):
            stash = f"{new}{TMP_STASH}/{i}"
            if os.path.isdir(new + path):
                _mkdirs(stash)
            else:
                _touch(stash)
            mount(new + path, stash, None, MS_BIND | MS_REC)
            mount(None, stash, None, ro)
    wd = cfg["workdir"]
    if wd is not None:
        _mkdirs(new + wd)
        mount(wd, new + wd, None, MS_BIND)
        mount(None, new + wd, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV)
    for path in cfg.get("mountpoints", ()):
        _mkdirs(new + path)  # empty dirs a warm run mounts its own tmpfs on
    _mkdirs(new + "/proc")
    mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.mkdir(new + "/.old")
    nr = _PIVOT_ROOT.get(os.uname().machine)
    if nr is None:
        raise OSError(0, f"pivot_root: unsupported machine {os.uname().machine}")
    _check(_libc.syscall(nr, _b(new), _b(new + "/.old")), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount old root")
    os.rmdir("/.old")
    mount(None, "/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID)
    mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def loopback_up():
    import _socket  # the C module: ``socket.py`` costs milliseconds to import
    import fcntl

    s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        flags = (0x1 | 0x40).to_bytes(2, sys.byteorder)  # IFF_UP | IFF_RUNNING
        fcntl.ioctl(s.fileno(), 0x8914, b"lo".ljust(16, b"\0") + flags + bytes(22))
    finally:
        s.close()


def command(cfg, status_fd):
    """Become the command: limits, uid drop, no-new-privs, seccomp, exec. Never returns."""
    import resource

    try:  # noqa: SIM105 (no contextlib import in the init)
        os.setsid()
    except OSError:
        pass
    for which, soft, hard in cfg["rlimits"]:
        resource.setrlimit(which, (soft, hard))
    uid, gid = cfg["uid"], cfg["gid"]
    if uid is not None:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if cfg["mode"] == "none":
        prctl(PR_SET_PDEATHSIG, 9)  # after the uid change, which clears it
    seccomp = install_seccomp() if cfg["seccomp"] else False
    os.chdir(cfg["workdir"])
    os.write(status_fd, b"ok seccomp=%d\n" % seccomp)
    os.closerange(3, 1 << 20)
    argv, env = cfg["argv"], cfg["env"]
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as e:
        os.write(2, f"sandbox: cannot execute {argv[0]!r}: {e.strerror}\n".encode())
        os._exit(127)


def _wait_status(st):
    if os.WIFEXITED(st):
        return os.WEXITSTATUS(st)
    return 128 + os.WTERMSIG(st)


def pid1(cfg, status_fd):
    """Namespace init: (unshare) build the root, fork the command, reap until it exits."""
    if cfg["mode"] == "zygote":
        zygote(cfg, status_fd)
    if cfg["mode"] == "unshare":
        build_root(cfg)
        _check(_libc.sethostname(b"sandbox", 7), "sethostname")
        if not cfg["network"]:
            loopback_up()
    child = os.fork()
    if child == 0:
        try:
            command(cfg, status_fd)
        except BaseException as e:
            _fail(status_fd, e)
    os.close(status_fd)
    _reap_until(child)


def _reap_until(child):
    """As pid 1: reap every process until ``child`` exits, then exit with its status."""
    while True:
        try:
            pid, st = os.wait()
        except ChildProcessError:
            os._exit(125)
        except InterruptedError:
            continue
        if pid == child:
            os._exit(_wait_status(st))


def _fail(status_fd, e):
    try:
        os.write(status_fd, f"err {type(e).__name__}: {e}\n".encode()[:4000])
    finally:
        os._exit(125)


def main():
    stdin = sys.stdin.buffer
    import marshal

    cfg = marshal.loads(stdin.read(int.from_bytes(stdin.read(8), "little")))
    status_fd = cfg["status_fd"]
    try:
        if cfg["mode"] != "bwrap":
            prctl(PR_SET_PDEATHSIG, 9)
            if os.getppid() != cfg["ppid"]:
                os._exit(125)  # the parent died before we could notice
        for fd in cfg["cgroup_fds"]:
            os.write(fd, b"0")
            os.close(fd)
        os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
        if cfg["mode"] == "none":
            command(cfg, status_fd)
        if cfg["mode"] == "bwrap":
            prctl(PR_SET_PDEATHSIG, 9)  # bwrap's monitor outside the namespace
            pid1(cfg, status_fd)
        flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
        if not cfg["network"]:
            flags |= CLONE_NEWNET
        _check(_libc.unshare(flags), "unshare")
        child = os.fork()
        if child == 0:
            try:
                prctl(PR_SET_PDEATHSIG, 9)
                pid1(cfg, status_fd)
            except BaseException as e:
                _fail(status_fd, e)
    except BaseException as e:
        _fail(status_fd, e)
    os.close(status_fd)
    while True:
        try:
            _, st = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    os._exit(_wait_status(st))


# -- warm mode: a zygote that forks one fresh, fully isolated child per run --------------
#
# The zygote is pid 1 of the pool's namespaces (built like the unshare mode's): it
# imports the warm modules, checks it holds no writable shared mapping, then loops:
# receive one message (a single byte plus fds the parent opened for that run), fork,
# close the fds. It never reads a run's request (that lives in a memfd only the forked
# child reads), so its memory holds nothing of any run, and it never runs candidate
# code. Per run: C0 (the fork) reads the request, unshares new mount/PID/IPC/UTS/net
# namespaces and forks C1, pid 1 of the run's own PID namespace, which joins the run's
# cgroups, mounts a fresh /proc, fresh size-bounded /tmp and /dev/shm and the run's work
# dir (bound from an fd; no other run's dir is in view), then forks C2: the command
# stage (new session, rlimits, fresh uid, no-new-privs, seccomp, all other fds closed)
# that runs the Python program in-process, its heavy modules already imported.

MS_MOVE = 8192
PR_SET_DUMPABLE = 4
NEW_RUN_NS = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET


def shared_writable_maps():
    """Writable shared mappings of this process (a fork would share them with the zygote)."""
    found = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 1 and parts[1][1] == "w" and parts[1][3] == "s":
                found.append(line.strip())
    return found


_RUN_STAGE_MODULES = ("atexit", "builtins", "marshal", "resource", "signal", "socket", "types")
"""What a warm run's own stages import: imported once in the zygote, not once a run
(``resource`` alone cost a run ~1.8 ms in a fresh fork)."""


_ZYGOTE_TMP_BINDS: list = []
"""The zygote's view paths under /tmp or /dev/shm (each warm run re-binds them)."""


def zygote(cfg, status_fd):
    """The pool's pid 1: build the root, import the warm modules, fork per request."""
    import gc
    import importlib
    import select
    import socket

    global _ZYGOTE_TMP_BINDS
    build_root(cfg)
    _ZYGOTE_TMP_BINDS = under_tmpfs(cfg["ro_binds"])
    _check(_libc.sethostname(b"sandbox", 7), "sethostname")
    loopback_up()
    for name in (*cfg["warm"], *_RUN_STAGE_MODULES):
        importlib.import_module(name)
    _seccomp_fprog()
    # Everything imported so far lives as long as the zygote: out of the collector's
    # sight, a run's garbage collections do not walk (and copy on write) those pages.
    gc.freeze()
    shared = shared_writable_maps()
    if shared:
        raise OSError(0, f"writable shared mappings after the warm imports: {shared[:2]}")
    ctl = socket.socket(fileno=cfg["ctl_fd"])
    os.write(status_fd, b"ok zygote pid=%d\n" % os.getpid())
    os.close(status_fd)
    del cfg["ctl_fd"]
    while True:
        _reap_all()
        try:
            ready, _, _ = select.select([ctl], [], [], 1.0)
        except InterruptedError:
            continue
        if not ready:
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, 8, 16)
        except InterruptedError:
            continue
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)  # the parent closed the pool
        if msg != b"R" or len(fds) < 4:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            try:
                os.close(ctl.detach())
                warm_c0(fds)
            except BaseException:
                pass
            os._exit(125)
        for fd in fds:
            os.close(fd)


def _reap_all():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return


def _send(sock, item, fds=()):
    import marshal
    import socket

    if fds:
        socket.send_fds(sock, [marshal.dumps(item)], list(fds))
    else:
        sock.send(marshal.dumps(item))


def warm_c0(fds):
    """Per run, in the pool's namespaces: read the request, new namespaces, fork C1, report."""
    import marshal
    import socket

    sock = socket.socket(fileno=fds[0])
    out_w, err_w, req_fd = fds[1:4]
    cg = fds[4:]
    chunks = []
    while True:
        chunk = os.read(req_fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(req_fd)
    req = marshal.loads(b"".join(chunks))
    del chunks
    try:
        _check(_libc.unshare(NEW_RUN_NS), "unshare")
        c1 = os.fork()
    except BaseException as e:
        _send(sock, ("err", f"{type(e).__name__}: {e}"))
        os._exit(125)
    if c1 == 0:
        try:
            warm_c1(req, sock, out_w, err_w, cg)
        except BaseException as e:
            try:
                _send(sock, ("err", f"{type(e).__name__}: {e}"[:4000]))
            finally:
                os._exit(125)
    for fd in (out_w, err_w, *cg):
        os.close(fd)
    pidfd = os.pidfd_open(c1)
    _send(sock, ("pid",), [pidfd])
    os.close(pidfd)
    while True:
        try:
            _, st, ru = os.wait4(c1, 0)
            break
        except InterruptedError:
            continue
    _send(sock, ("exit", st, ru.ru_utime, ru.ru_stime, ru.ru_maxrss))
    os._exit(0)


def warm_c1(req, sock, out_w, err_w, cg):
    """pid 1 of the run's PID namespace: the run's own view, then fork the command."""
    prctl(PR_SET_PDEATHSIG, 9)
    for fd in cg:
        os.write(fd, b"0")
        os.close(fd)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    for d in ("/proc", "/tmp", "/dev/shm"):
        _check(_libc.umount2(d.encode(), MNT_DETACH), f"umount {d}")
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    opts = f"size={req['tmpfs_kb']}k,nr_inodes={req['tmpfs_inodes']},mode=1777"
    for d in TMPFS_DIRS:
        mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, opts)
    for i, path in enumerate(_ZYGOTE_TMP_BINDS):
        stash = f"{TMP_STASH}/{i}"
        if os.path.isdir(stash):
            _mkdirs(path)
        else:
            _touch(path)
        mount(stash, path, None, MS_BIND | MS_REC)
        mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        _check(_libc.umount2(stash.encode(), MNT_DETACH), f"umount {stash}")
    wd = req["workdir"]
    parent = os.path.dirname(wd)
    in_tmpfs = any(parent == d or parent.startswith(d + "/") for d in ("/tmp", "/dev/shm"))
    if in_tmpfs:
        os.makedirs(parent, mode=0o755, exist_ok=True)
    else:  # an empty mount point the zygote's root holds: a private tmpfs over it
        mount("tmpfs", parent, "tmpfs", MS_NOSUID | MS_NODEV, "size=16k,mode=0755")
    os.mkdir(wd, 0o755)
    spool = req["spool"]
    mount(spool + "/" + req["spool_name"], wd, None, MS_BIND)
    mount(None, wd, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV)
    _check(_libc.umount2(spool.encode(), MNT_DETACH), "umount the spool")  # no other run's dir
    if not in_tmpfs:
        mount(None, parent, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _check(_libc.sethostname(b"sandbox", 7), "sethostname")
    loopback_up()
    child = os.fork()
    if child == 0:
        try:
            warm_command(req, sock, out_w, err_w)
        except BaseException as e:
            try:
                _send(sock, ("err", f"{type(e).__name__}: {e}"[:4000]))
            finally:
                os._exit(125)
    sock.close()
    os.close(out_w)
    os.close(err_w)
    _reap_until(child)


def warm_command(req, sock, out_w, err_w):
    """The command stage of a warm run (as ``command``), then the program in-process."""
    import resource
    import signal

    try:  # noqa: SIM105
        os.setsid()
    except OSError:
        pass
    for which, soft, hard in req["rlimits"]:
        resource.setrlimit(which, (soft, hard))
    uid, gid = req["uid"], req["gid"]
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    prctl(PR_SET_DUMPABLE, 1)  # as an exec would: /proc/self is the run's own
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    seccomp = install_seccomp() if req["seccomp"] else False
    os.chdir(req["workdir"])
    _send(sock, ("ok", int(seccomp)))
    sock.close()
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    os.closerange(3, 1 << 20)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM):
        signal.signal(sig, signal.SIG_DFL)
    argv, env = req["argv"], req["env"]
    if not req["inproc"]:
        try:
            os.execvpe(argv[0], argv, env)
        except OSError as e:
            os.write(2, f"sandbox: cannot execute {argv[0]!r}: {e.strerror}\n".encode())
            os._exit(127)
    os._exit(run_inproc(argv[1:], env))


def run_inproc(args, env):
    """Run ``python ARGS`` in this (warm) interpreter: ``-c CODE``, ``-m MOD`` or a script."""
    import builtins
    import types

    g = globals()
    for name in ("_libc",):  # the init's own handles: nothing a program needs
        g.pop(name, None)
    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    for p in reversed([p for p in env.get("PYTHONPATH", "").split(":") if p]):
        sys.path.insert(0, p)
    if "random" in sys.modules:
        sys.modules["random"].seed()
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    code = None
    try:
        if args[0] == "-c":
            sys.argv = ["-c", *args[2:]]
            sys.path.insert(0, "")
            code = compile(args[1], "<string>", "exec")
        elif args[0] == "-m":
            import runpy

            sys.argv = [args[1], *args[2:]]
            sys.path.insert(0, os.getcwd())
            code = "module"
        else:
            path = args[0]
            sys.argv = list(args)
            sys.path.insert(0, os.path.dirname(os.path.realpath(path)))
            with open(path, "rb") as f:
                src = f.read()
            main.__file__ = path
            code = compile(src, path, "exec")
        main.__dict__["__cached__"] = None
        if code == "module":
            runpy._run_module_as_main(args[1], alter_argv=True)
        else:
            exec(code, main.__dict__)  # trusted: the sandboxed command stage runs the program
        status = 0
    except SystemExit as e:
        status = _exit_status(e.code)
    except BaseException as e:
        tb = e.__traceback__
        if tb is not None and tb.tb_next is not None and code is not None:
            tb = tb.tb_next  # drop this runner's own frame, as python's own traceback would
            e.__traceback__ = tb
        try:  # noqa: SIM105 (no contextlib import in the init)
            sys.excepthook(type(e), e, tb)
        except BaseException:
            pass
        status = 1
    return _finish(status)


def _exit_status(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:  # noqa: SIM105
        print(code, file=sys.stderr)
    except BaseException:
        pass
    return 1


def _finish(status):
    """What interpreter shutdown does that matters: join threads, atexit, flush."""
    try:
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
    except BaseException:
        pass
    try:
        import atexit

        atexit._run_exitfuncs()
    except SystemExit as e:
        status = _exit_status(e.code)
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except BaseException:
            if stream is sys.stdout:
                status = status or 120
    return status


main()

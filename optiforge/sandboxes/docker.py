"""``DockerSandbox``: each run in a fresh container (docker SDK).

No network (``network_mode="none"`` unless ``network=True``), memory and CPU caps,
read-only root file system, the work dir a tmpfs, all capabilities dropped,
``no-new-privileges``, a pids limit. ``put_archive``/``get_archive`` cannot reach a
tmpfs, so files go in (``tar -x`` on stdin) and come back (``tar -c``) through
``exec`` in the running container; the image needs ``/bin/sh`` and ``tar``. The
container is removed after every run.
"""

from __future__ import annotations

import contextlib
import io
import math
import socket
import tarfile
import threading
import time
from typing import Any

from optiforge.errors import ConfigError, SandboxError, SandboxUnavailable
from optiforge.sandboxes.base import (
    ExecResult,
    Protections,
    check_limits,
    decode_maybe,
    glob_match,
    normalize_cmd,
    safe_relpath,
)

_WORKDIR = "/work"


def docker_client(base_url: str | None = None, timeout_s: float = 5.0) -> Any:
    """A pinged docker client, or SandboxUnavailable naming the engine and the reason."""
    try:
        import docker
    except ImportError as e:  # pragma: no cover - docker is a core dependency
        raise SandboxUnavailable(f"the docker SDK is not installed: {e}") from e
    where = base_url or "DOCKER_HOST or the default socket"
    try:
        client = (
            docker.DockerClient(base_url=base_url, timeout=int(timeout_s))
            if base_url
            else docker.from_env(timeout=int(timeout_s))
        )
        client.ping()
    except Exception as e:  # the SDK raises DockerException, requests and OS errors
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SandboxUnavailable(f"no Docker engine reachable at {where}: {reason}") from e
    return client


def _tar(files: dict[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, content in files.items():
            rel = safe_relpath(name).as_posix()
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class DockerSandbox:
    """Runs each command in a fresh, locked-down container.

    image: must already be present or pullable by the engine (pulls need network).
    cpus: CPU cap (``nano_cpus``); pids_limit: max processes in the container.
    base_url: engine address; None uses ``DOCKER_HOST`` / the default socket.
    """

    backend = "docker"

    def __init__(
        self,
        image: str = "python:3.11-slim",
        *,
        tracer: Any | None = None,
        cpus: float = 1.0,
        pids_limit: int = 256,
        max_output_bytes: int = 1 << 20,
        tmpfs_mb: int = 512,
        base_url: str | None = None,
        user: str | None = "65534:65534",
    ) -> None:
        if cpus <= 0 or pids_limit < 1 or max_output_bytes < 0 or tmpfs_mb < 1:
            raise ConfigError(
                f"DockerSandbox limits must be positive: cpus={cpus} pids={pids_limit} "
                f"output={max_output_bytes} tmpfs_mb={tmpfs_mb}"
            )
        self.client = docker_client(base_url)
        self.image = image
        self.tracer = tracer
        self.cpus = cpus
        self.pids_limit = pids_limit
        self.max_output_bytes = max_output_bytes
        self.tmpfs_mb = tmpfs_mb
        self.user = user

    def _protections(self, network: bool) -> Protections:
        return Protections(
            backend="docker",
            process_group=True,  # the container's PID namespace dies with the container
            pid_namespace=True,
            rlimit_as=False,
            rlimit_cpu=False,
            rlimit_fsize=False,
            rlimit_nproc=False,
            pids_cgroup=True,  # pids_limit: the container's own pids cgroup
            rlimit_nofile=False,
            memory_cap=True,
            env_scrubbed=True,
            output_capped=True,
            network_isolated=not network,
            network_how="none" if network else "docker-none",
            fs_write_confined=True,
            fs_how="read-only root, tmpfs work dir and /tmp",
            run_as_uid=None,
            privileges_dropped=self.user is not None,
            minimal_view=True,  # the image's file system only: nothing of the host
            proc_private=True,
            seccomp=True,  # the engine's default profile (unless the daemon disables it)
            no_new_privs=True,
            # a killed caller cannot remove the container: it idles until its own sleep
            # (timeout + 120 s) ends; the run is bounded in time, but it does outlive us
            dies_with_parent=False,
            disk_bounded=True,  # read-only root, size-capped tmpfs
            memory_cgroup=True,
            network_requested=network,
            notes=[
                "cpu time is capped by nano_cpus and the wall timeout, not RLIMIT_CPU",
                "if the caller is killed, the container lives until timeout + 120 s",
            ],
        )

    def protections(self, network: bool = False) -> Protections:
        """What a run in this sandbox is protected by (see ``CONTAINMENT_PROMISE``)."""
        return self._protections(network)

    def run(
        self,
        cmd: list[str] | str,
        *,
        files: dict[str, str | bytes] | None = None,
        timeout_s: float = 60.0,
        memory_mb: int = 2048,
        network: bool = False,
        env: dict[str, str] | None = None,
        collect: list[str] | None = None,
    ) -> ExecResult:
        """Run ``cmd`` in a new container; see ``Sandbox.run``.

        The container's main process only idles; files go in, the command runs and
        outputs come back through ``exec`` inside it, because ``put_archive`` /
        ``get_archive`` cannot see a tmpfs (moby/moby#22020).
        """
        argv = normalize_cmd(cmd)
        check_limits(timeout_s, memory_mb)
        child_env = {"HOME": _WORKDIR, "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
        child_env.update(env or {})
        t0 = time.perf_counter()
        try:
            container = self.client.containers.create(
                self.image,
                ["/bin/sh", "-c", f"sleep {math.ceil(timeout_s) + 120}"],
                working_dir=_WORKDIR,
                network_mode="bridge" if network else "none",
                mem_limit=f"{memory_mb}m",
                memswap_limit=f"{memory_mb}m",
                nano_cpus=int(self.cpus * 1e9),
                pids_limit=self.pids_limit,
                read_only=True,
                tmpfs={
                    _WORKDIR: f"rw,exec,size={self.tmpfs_mb}m,mode=1777",
                    "/tmp": f"rw,size={self.tmpfs_mb}m,mode=1777",
                },
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                user=self.user,
                detach=True,
            )
        except Exception as e:
            raise SandboxError(f"docker could not create a container from {self.image}: {e}") from e
        api = self.client.api
        try:
            container.start()
            if files:
                self._put_files(container.id, files)
            fired = threading.Event()

            def _on_timeout() -> None:
                fired.set()
                _kill_quietly(container)

            exec_id = api.exec_create(
                container.id, argv, environment=child_env, workdir=_WORKDIR, user=self.user or ""
            )["Id"]
            timer = threading.Timer(timeout_s, _on_timeout)
            timer.start()
            cap = self.max_output_bytes
            bufs = [bytearray(), bytearray()]
            trunc = [False, False]
            try:
                for chunk_out, chunk_err in api.exec_start(exec_id, stream=True, demux=True):
                    for i, chunk in enumerate((chunk_out, chunk_err)):
                        if not chunk:
                            continue
                        room = cap - len(bufs[i])
                        if room > 0:
                            bufs[i] += chunk[:room]
                        if len(chunk) > room:
                            trunc[i] = True  # keep draining so the command never blocks
            except Exception:
                if not fired.is_set():
                    raise
            finally:
                timer.cancel()
            duration = time.perf_counter() - t0
            timed_out = fired.is_set()
            info = api.exec_inspect(exec_id)
            rc = info.get("ExitCode")
            rc = -9 if rc is None else int(rc)
            container.reload()
            oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
            collected = {} if timed_out else self._collect(container.id, collect)
        except SandboxError:
            raise
        except Exception as e:
            raise SandboxError(f"docker run failed: {e}") from e
        finally:
            _remove_quietly(container)
        killed_by = "timeout" if timed_out else "memory" if oom or rc == 137 else None
        if killed_by is None and rc > 128:
            killed_by = f"signal {rc - 128}"
        prot = self._protections(network)
        prot.notes.append("peak_rss_mb is not measured for docker runs (reported as 0)")
        result = ExecResult(
            returncode=rc,
            stdout=bytes(bufs[0]).decode("utf-8", errors="replace"),
            stderr=bytes(bufs[1]).decode("utf-8", errors="replace"),
            duration_s=duration,
            peak_rss_mb=0.0,
            timed_out=timed_out,
            files=collected,
            protections=prot,
            stdout_truncated=trunc[0],
            stderr_truncated=trunc[1],
            killed_by=killed_by,
        )
        if self.tracer is not None:
            self.tracer.event(
                "sandbox_run",
                backend="docker",
                duration_s=round(duration, 6),
                returncode=rc,
                timed_out=timed_out,
                killed_by=killed_by,
                peak_rss_mb=0.0,
                protections=prot.summary(),
            )
        return result

    def _put_files(self, container_id: str, files: dict[str, str | bytes]) -> None:
        """Untar ``files`` into the tmpfs work dir via ``tar -x`` on the exec's stdin."""
        api = self.client.api
        exec_id = api.exec_create(
            container_id,
            ["tar", "-x", "-C", _WORKDIR, "-f", "-"],
            stdin=True,
            user=self.user or "",
        )["Id"]
        sock = api.exec_start(exec_id, socket=True)
        raw = getattr(sock, "_sock", sock)
        raw.sendall(_tar(files))
        raw.shutdown(socket.SHUT_WR)
        while raw.recv(65536):
            pass
        raw.close()
        code = api.exec_inspect(exec_id).get("ExitCode")
        if code not in (0, None):
            raise SandboxError(f"could not copy input files into the container (tar exit {code})")

    def _collect(self, container_id: str, patterns: list[str] | None) -> dict[str, bytes | str]:
        """Tar the work dir inside the container (exec sees the tmpfs) and keep the matches."""
        if not patterns:
            return {}
        for p in patterns:
            safe_relpath(p)
        api = self.client.api
        exec_id = api.exec_create(
            container_id, ["tar", "-c", "-C", _WORKDIR, "-f", "-", "."], user=self.user or ""
        )["Id"]
        data = api.exec_start(exec_id, demux=True)[0] or b""
        out: dict[str, bytes | str] = {}
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar.getmembers():
                if not member.isfile():
                    continue  # symlinks and devices are never read back
                rel = member.name.removeprefix("./")
                if any(glob_match(rel, p) for p in patterns):
                    f = tar.extractfile(member)
                    if f is not None:
                        out[rel] = decode_maybe(f.read())
        return out


def _kill_quietly(container: Any) -> None:
    with contextlib.suppress(Exception):  # already gone
        container.kill()


def _remove_quietly(container: Any) -> None:
    with contextlib.suppress(Exception):
        container.remove(force=True)

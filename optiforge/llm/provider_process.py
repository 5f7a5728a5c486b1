"""litellm in a process of its own (``ProviderProcess``), off the run's interpreter lock.

litellm costs ~2.5 s to import and ~4 ms of Python per call. In the run's own process both
hold the run's one interpreter lock: the import delays everything the run does before its
first LLM call, and with a fast model the calls slow the search loop down. In a child
process the import overlaps the run's own start-up on another core, and a call costs the
run one message each way.

The child is trusted project code, never candidate code: ``python -m
optiforge.llm.provider_process FD``, with the environment the run had when it started it
(provider keys included, as the run itself has them; a changed environment starts a new
child). It imports litellm with the local price map (nothing reaches the network at
import), then serves requests concurrently, a thread per request in flight, answering
each with the reply as plain data or with the ``LLMError`` that ``translate_exception``
made of the failure. It ignores Ctrl-C (the run handles it) and exits when the run closes
the connection or dies. A child that dies is started again by the next request; requests
in flight then fail as retryable provider errors.

An ``openai/...`` model at an ``api_base`` that litellm has no price for (a local
OpenAI-compatible server, the embedded model's) is called through the ``openai`` client
alone (``optiforge.llm.openai_compat``): the child then never imports litellm (4 s here).

Protocol (pickles over a socketpair, ``multiprocessing.connection``): the run sends
``(id, op, args)``; the child answers ``(id, "ok", value)`` or ``(id, "err", (error class
name, message, attributes))``. Ops: ``warm`` (import litellm, then a mocked completion of
a model so its call path is loaded: the first real call took 0.32 s instead of 5 ms; or
the ``openai`` client for an endpoint ``openai_compat`` handles),
``complete`` (one ``litellm.completion``), ``json_mode`` (whether the provider takes
``response_format``).
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import contextlib
import hashlib
import itertools
import os
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any

from optiforge import errors
from optiforge.errors import LLMError, LLMProviderError, LLMTimeout
from optiforge.llm import litellm_calls as lc
from optiforge.llm import openai_compat as oc

MAX_IN_FLIGHT = 64
"""Requests the child runs at once (more wait their turn in the child)."""


_NOT_PROVIDER_ENV = ("OPTIFORGE_", "PYTEST_", "COLUMNS", "LINES", "OMP_", "MKL_", "OPENBLAS_")
"""Variables no provider call reads (ours, the test runner's, terminal and thread
settings): changing them keeps the child."""


def _env_digest() -> str:
    """The environment a provider call may read (keys, endpoints, proxies, certificates)."""
    env = sorted((k, v) for k, v in os.environ.items() if not k.startswith(_NOT_PROVIDER_ENV))
    return hashlib.sha256(repr(env).encode()).hexdigest()


class ProviderProcess:
    """The run's connection to its litellm child (thread-safe; started on first use)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._pending: dict[int, cf.Future[Any]] = {}
        self._ids = itertools.count()
        self._warm: dict[tuple[str, str | None], cf.Future[Any]] = {}
        self._env = ""
        self._pid = os.getpid()

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start the child now (no-op when it runs); returns at once."""
        with self._lock:
            self._ensure_locked()

    def _ensure_locked(self) -> Connection:
        if self._pid != os.getpid():  # inherited over a fork: the child is not ours
            self._proc = self._conn = None
            self._pending, self._warm, self._pid = {}, {}, os.getpid()
        env = _env_digest()
        alive = self._proc is not None and self._proc.poll() is None
        if alive and env != self._env:  # keys or settings changed: a child that has them
            self._close_locked()
            alive = False
        if not alive or self._conn is None:
            self._close_locked()
            self._spawn_locked()
            self._env = env
        assert self._conn is not None
        return self._conn

    def _spawn_locked(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "optiforge.llm.provider_process", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError as e:
            ours.close()
            raise LLMProviderError(f"could not start the LLM provider process: {e}") from e
        finally:
            theirs.close()
        conn = Connection(ours.detach())
        self._conn = conn
        pending: dict[int, cf.Future[Any]] = {}  # this child's requests in flight
        self._pending = pending
        proc = self._proc
        threading.Thread(
            target=self._read, args=(conn, proc, pending), name="llm-provider-reader",
            daemon=True,
        ).start()  # fmt: skip

    def _read(
        self, conn: Connection, proc: subprocess.Popen[bytes], pending: dict[int, cf.Future[Any]]
    ) -> None:
        """Hand each answer to its request; when the child is gone, fail what is left."""
        while True:
            try:
                rid, status, value = conn.recv()
            except (EOFError, OSError):
                break
            fut = pending.pop(rid, None)
            if fut is None:
                continue
            if status == "ok":
                fut.set_result(value)
            else:
                fut.set_exception(_rebuild(value))
        with contextlib.suppress(Exception):
            proc.wait(timeout=5)
        with self._lock:
            if self._conn is conn:
                self._conn = None
                self._warm = {}
            left = [pending.pop(rid) for rid in list(pending)]
        for fut in left:
            err = LLMProviderError(
                f"the LLM provider process exited (code {proc.returncode}) during the call"
            )
            err.retryable = True  # type: ignore[attr-defined] # the next try starts a new one
            fut.set_exception(err)

    def close(self) -> None:
        """Stop the child (it also stops on its own when this process exits)."""
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        conn, proc = self._conn, self._proc
        self._conn = self._proc = None
        self._warm = {}
        if conn is not None:
            # shutdown, not only close: the reader thread blocked in recv() holds the socket
            # open past a close(), and the child would never see its end-of-file
            with contextlib.suppress(OSError):
                dup = socket.fromfd(conn.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)
                dup.shutdown(socket.SHUT_RDWR)
                dup.close()
            with contextlib.suppress(OSError):
                conn.close()
        if proc is not None and self._pid == os.getpid():
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=2)

    # -- requests --------------------------------------------------------------------

    def submit(self, op: str, args: dict[str, Any]) -> cf.Future[Any]:
        """Send one request; its answer arrives in the returned future."""
        fut: cf.Future[Any] = cf.Future()
        with self._lock:
            conn = self._ensure_locked()
            rid = next(self._ids)
            pending = self._pending
            pending[rid] = fut
        try:
            with self._send_lock:
                conn.send((rid, op, args))
        except OSError as e:
            if pending.pop(rid, None) is not None:  # else the reader has failed it already
                err = LLMProviderError(f"the LLM provider process is gone: {e}")
                err.retryable = True  # type: ignore[attr-defined]
                fut.set_exception(err)
        return fut

    def call(self, op: str, args: dict[str, Any], timeout_s: float) -> Any:
        """One request's answer (its error re-raised here).

        Raises:
            LLMError: what the provider call failed with; ``LLMTimeout`` when the child
                gave no answer within ``timeout_s``.
        """
        fut = self.submit(op, args)
        try:
            return fut.result(timeout=timeout_s)
        except cf.TimeoutError:
            raise LLMTimeout(
                f"the LLM provider process gave no answer within {timeout_s:.0f} s"
            ) from None

    def warm(self, model: str, api_base: str | None) -> cf.Future[Any]:
        """The child's litellm import and ``model``'s warm-up (asked once, then shared)."""
        with self._lock:
            self._ensure_locked()
            fut = self._warm.get((model, api_base))
        if fut is None:
            fut = self.submit("warm", {"model": model, "api_base": api_base})
            with self._lock:
                fut = self._warm.setdefault((model, api_base), fut)
        return fut


_SHARED: ProviderProcess | None = None
_SHARED_LOCK = threading.Lock()


def shared() -> ProviderProcess:
    """This process's litellm child (one for every ``LiteLLM``; stopped at exit)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = ProviderProcess()
            atexit.register(_SHARED.close)
        return _SHARED


def _rebuild(value: Any) -> BaseException:
    """The run-side error for a child's ``(class name, message, attributes)``."""
    name, message, attrs = value
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, LLMError)):
        cls = LLMProviderError
    err = cls(message)
    for k, v in attrs.items():
        setattr(err, k, v)
    return err


# ------------------------------------------------------------------------------ the child


def _describe(err: BaseException) -> tuple[str, str, dict[str, Any]]:
    if isinstance(err, LLMError):
        attrs = {k: getattr(err, k) for k in ("retry_after", "retryable") if hasattr(err, k)}
        return type(err).__name__, str(err), attrs
    return (
        "LLMProviderError",
        f"the LLM provider process failed: {type(err).__name__}: {err}",
        {"retryable": False},
    )


def serve(fd: int) -> None:
    """The child's loop: answer requests on ``fd`` until the run closes it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
    conn = Connection(fd)
    send_lock = threading.Lock()
    import_lock = threading.Lock()
    imported: dict[str, Any] = {}

    def litellm() -> Any:
        """litellm, imported by the first request that needs it (an OpenAI-compatible
        endpoint never does: ``openai_compat``)."""
        with import_lock:
            if "litellm" not in imported:
                try:
                    imported["litellm"] = lc.import_litellm()
                except BaseException as e:  # noqa: BLE001 - every request says why
                    imported["litellm"] = None
                    imported["broken"] = e
            if imported["litellm"] is None:
                raise LLMProviderError(f"could not import litellm: {imported['broken']}")
            return imported["litellm"]

    def handle(rid: int, op: str, args: dict[str, Any]) -> None:
        try:
            value: Any = None
            model, api_base = args.get("model", ""), args.get("api_base")
            direct = oc.handles(model, api_base)
            if op == "warm":
                if direct:
                    oc.warm_up(str(api_base))
                else:
                    lc.warm_up(litellm(), model, api_base)
            elif op == "complete":
                kw = args["kwargs"]
                if oc.handles(model, kw.get("api_base")):
                    value = oc.complete(kw, model).model_dump()
                else:
                    value = lc.complete(litellm(), kw, model).model_dump()
            elif op == "json_mode":
                # litellm answers True for every openai/ model (response_format is OpenAI's)
                value = True if direct else lc.supports_json_mode(litellm(), model, api_base)
            else:
                raise LLMProviderError(f"unknown request {op!r}")
            answer = (rid, "ok", value)
        except BaseException as e:  # noqa: BLE001 - the run re-raises it
            answer = (rid, "err", _describe(e))
        with send_lock, contextlib.suppress(OSError):
            conn.send(answer)

    with cf.ThreadPoolExecutor(MAX_IN_FLIGHT, thread_name_prefix="llm") as pool:
        while True:
            try:
                rid, op, args = conn.recv()
            except (EOFError, OSError):
                break
            pool.submit(handle, rid, op, args)
        os._exit(0)  # the run is gone: calls in flight have no one to answer


if __name__ == "__main__":
    serve(int(sys.argv[1]))

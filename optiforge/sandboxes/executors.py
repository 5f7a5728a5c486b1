"""Executors: run many evaluations at once (``ProcessExecutor`` locally, ``RayExecutor`` on a cluster).

All share one small contract: ``map(fn, items) -> list`` (order-preserving),
``submit(fn, *args, **kw) -> Future``, ``shutdown()``, context manager, ``workers``.
``fn`` must be picklable (a module-level function) for the process and Ray back ends.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing as mp
import os
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol, Self, TypeVar, runtime_checkable

from optiforge.errors import ConfigError, SandboxUnavailable

T = TypeVar("T")
R = TypeVar("R")


@runtime_checkable
class Executor(Protocol):
    """Runs callables concurrently; results come back in input order."""

    workers: int

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``[fn(x) for x in items]``, concurrently; re-raises the first failure in order."""
        ...

    def submit(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> cf.Future[R]:
        """Schedule ``fn(*args, **kwargs)``; a ``concurrent.futures.Future``."""
        ...

    def shutdown(self) -> None:
        """Release the workers (idempotent)."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


class _ContextMixin:
    def shutdown(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class InlineExecutor(_ContextMixin):
    """Runs everything in the calling thread, one after another (for debugging: real tracebacks)."""

    workers = 1

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """Sequential ``map``."""
        return [fn(x) for x in items]

    def submit(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> cf.Future[R]:
        """Run now; return an already-completed future (exceptions land in the future)."""
        fut: cf.Future[R] = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as e:  # the future carries it, like a pool would
            fut.set_exception(e)
        return fut

    def shutdown(self) -> None:
        """Nothing to release."""
        return None


class ThreadExecutor(_ContextMixin):
    """A ``ThreadPoolExecutor``: for calls that spend their time waiting on a sandboxed
    subprocess (every task evaluator does), so the parent's GIL is not the limit and no
    worker process has to start and import the project first. A call doing real CPU work
    in Python should use ``ProcessExecutor``."""

    def __init__(self, workers: int | None = None) -> None:
        n = workers if workers is not None else (os.cpu_count() or 1)
        if n < 1:
            raise ConfigError(f"workers must be >= 1, got {n}")
        self.workers = n
        self._pool = cf.ThreadPoolExecutor(max_workers=n, thread_name_prefix="optiforge-eval")

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """Order-preserving parallel map."""
        return list(self._pool.map(fn, items))

    def submit(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> cf.Future[R]:
        """Schedule one call on the pool."""
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self) -> None:
        """Wait for running work and stop the threads."""
        self._pool.shutdown(wait=True, cancel_futures=True)


class ProcessExecutor(_ContextMixin):
    """A ``ProcessPoolExecutor`` on a ``spawn`` or ``forkserver`` context.

    ``fork`` is refused: forking a process that holds torch/BLAS threads or locks can
    deadlock the child.
    """

    def __init__(
        self, workers: int | None = None, *, context: Literal["spawn", "forkserver"] = "spawn"
    ) -> None:
        if context not in ("spawn", "forkserver"):
            raise ConfigError(f"ProcessExecutor context must be spawn|forkserver, got {context!r}")
        n = workers if workers is not None else (os.cpu_count() or 1)
        if n < 1:
            raise ConfigError(f"workers must be >= 1, got {n}")
        self.workers = n
        self._pool = cf.ProcessPoolExecutor(max_workers=n, mp_context=mp.get_context(context))

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """Order-preserving parallel map."""
        return list(self._pool.map(fn, items))

    def submit(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> cf.Future[R]:
        """Schedule one call on the pool."""
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self) -> None:
        """Wait for running work and stop the worker processes."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def _import_ray() -> Any:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError as e:
        raise SandboxUnavailable(
            "RayExecutor needs ray: pip install 'optiforge[ray]' (ray is not installed)"
        ) from e
    return ray


class _RayWorker:
    """A Ray actor that runs calls: kept for the whole Ray session, so its process has
    imported the project, and a callable shipped once (an evaluator with its task) is
    unpickled once and keeps its per-process state (the warm sandbox's zygote)."""

    def __init__(self) -> None:
        self.fns: dict[str, Any] = {}

    def ping(self) -> int:
        """Started (the caller waits for this to know the actor is up)."""
        return os.getpid()

    def run(self, key: str, holder: list[Any], args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
        """``fn(*args, **kw)``, ``fn`` read from the object store once per actor (``holder``
        wraps its ref so Ray does not resolve it on every call)."""
        fn = self.fns.get(key)
        if fn is None:
            import ray

            fn = self.fns[key] = ray.get(holder[0])
        return fn(*args, **kw)


class _RaySession:
    """This process's Ray (started in the background, or joined) and its warm actors.

    One per process: an eval's or a pipeline's owner starts it and every run's executor
    joins it, so ``ray.init`` and the actors' start-up are paid once, and overlap with
    whatever the caller does next (building the agent, starting the LLM)."""

    def __init__(self, ray: Any, address: str | None, num_cpus: int | None, temp_dir: str | None):
        self.ray = ray
        self.owned = not ray.is_initialized()
        self.actors: list[Any] = []
        self.inflight: list[int] = []
        self.lock = threading.Lock()
        self.closed = False
        self.workers_hint = num_cpus if address is None else None
        # Every Ray call of this process goes through one thread: Ray 2.60 kills the
        # process (exit 1, no message) when ray.put runs in another thread than the one
        # that called ray.init once that one is not the main thread.
        self.driver = cf.ThreadPoolExecutor(1, thread_name_prefix="ray-driver")
        self.started = self.driver.submit(self._start, address, num_cpus, temp_dir)

    def _start(self, address: str | None, num_cpus: int | None, temp_dir: str | None) -> None:
        ray = self.ray
        try:
            if self.owned:
                kw: dict[str, Any] = {
                    "address": address, "include_dashboard": False,
                    "ignore_reinit_error": True, "log_to_driver": False,
                }  # fmt: skip
                if address is None:
                    kw["num_cpus"] = num_cpus
                    kw["_temp_dir"] = temp_dir or os.path.join(
                        tempfile.gettempdir(), "optiforge-ray"
                    )
                ray.init(**kw)
            n = max(1, int(ray.cluster_resources().get("CPU", 1)))
            actor = ray.remote(num_cpus=1)(_RayWorker)
            self.actors = [actor.remote() for _ in range(n)]
            self.inflight = [0] * n
            ray.get([a.ping.remote() for a in self.actors])  # up, imports done
        except Exception as e:  # ray raises ConnectionError, RuntimeError, ...
            where = address or "a local Ray"
            raise SandboxUnavailable(f"could not start/connect to {where}: {e}") from e

    def wait(self) -> None:
        """Until Ray and the actors are up (raises ``SandboxUnavailable`` if they failed)."""
        self.started.result()

    def workers(self) -> int:
        if self.workers_hint is not None:
            return self.workers_hint
        self.wait()
        return len(self.actors)

    def call(self, fn: Callable[..., R], *args: Any) -> R:
        """``fn(*args)`` on the Ray driver thread (where every Ray call runs)."""
        return self.driver.submit(fn, *args).result()

    def submit(self, key: str, holder: list[Any], args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
        """A call on the actor with the fewest calls in flight (a ``cf.Future``)."""
        self.wait()
        with self.lock:
            if self.closed:
                raise SandboxUnavailable("the Ray executor was shut down")
            i = min(range(len(self.actors)), key=self.inflight.__getitem__)
            self.inflight[i] += 1
        actor = self.actors[i]
        fut: cf.Future[Any] = self.call(lambda: actor.run.remote(key, holder, args, kw).future())

        def done(_: cf.Future[Any], i: int = i) -> None:
            with self.lock:
                self.inflight[i] -= 1

        fut.add_done_callback(done)
        return fut

    def close(self) -> None:
        """Stop the actors at once (calls in flight end with an error); stop Ray if this
        process started it."""
        with self.lock:
            self.closed = True
        with contextlib.suppress(Exception):
            self.started.result(timeout=120)

        def stop() -> None:
            for a in self.actors:
                with contextlib.suppress(Exception):
                    self.ray.kill(a)
            if self.owned and self.ray.is_initialized():
                self.ray.shutdown()

        self.call(stop)
        self.driver.shutdown(wait=False)


_SESSION: _RaySession | None = None
_SESSION_LOCK = threading.Lock()


class RayExecutor(_ContextMixin):
    """Runs calls on Ray: the engine for more than one machine.

    address: a cluster (``ray://host:10001`` or ``auto``); None starts a local Ray.
    num_cpus: CPUs for a local Ray (ignored when connecting to a cluster).
    Ray starts (or is joined) in the background, so its ~3-10 s start overlaps the
    caller's own work; the first call waits for it. Calls run on warm actors, one per
    CPU, kept for the Ray session and shared by every ``RayExecutor`` of the process (an
    eval's or a pipeline's runs): a worker imports the project once, and a callable
    (an evaluator with its task) is shipped to the object store once and unpickled once
    per actor. ``shutdown`` stops the actors (calls in flight fail at once) and Ray only
    if this executor started it. Workers import ``fn`` by module name, so it must live in
    an importable module (or ``__main__``); a test module outside the package is not
    importable there.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        temp_dir: str | None = None,
    ) -> None:
        global _SESSION
        if num_cpus is not None and num_cpus < 1:
            raise ConfigError(f"num_cpus must be >= 1, got {num_cpus}")
        ray = _import_ray()
        self._ray = ray
        with _SESSION_LOCK:
            if _SESSION is None or _SESSION.closed:
                _SESSION = _RaySession(ray, address, num_cpus, temp_dir)
                self._owns = True
            else:
                self._owns = False
            self._session = _SESSION
        self._fns: dict[int, tuple[Any, str, list[Any]]] = {}
        """id(fn) -> (fn, key, [its object ref]): each callable goes to the store once."""

    @property
    def workers(self) -> int:
        """Actors (CPUs) calls are spread over (waits for a cluster's answer)."""
        return self._session.workers()

    def _shipped(self, fn: Callable[..., Any]) -> tuple[str, list[Any]]:
        got = self._fns.get(id(fn))
        if got is None or got[0] is not fn:
            self._session.wait()
            if len(self._fns) >= 64:  # a caller making new callables per call
                self._fns.clear()
            ref = self._session.call(self._ray.put, fn)
            got = self._fns[id(fn)] = (fn, uuid.uuid4().hex, [ref])
        return got[1], got[2]

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """Order-preserving map over the actors."""
        futs = [self.submit(fn, x) for x in items]
        return [f.result() for f in futs]

    def submit(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> cf.Future[R]:
        """One call on a warm actor as a ``concurrent.futures.Future``."""
        key, holder = self._shipped(fn)
        fut: cf.Future[R] = self._session.submit(key, holder, args, kwargs)
        return fut

    def shutdown(self) -> None:
        """Stop the actors and Ray if this executor started them (idempotent)."""
        global _SESSION
        if self._owns:
            with _SESSION_LOCK:
                if _SESSION is self._session:
                    _SESSION = None
            self._session.close()
        self._owns = False

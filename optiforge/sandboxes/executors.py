"""Executors: run many evaluations at once (``ProcessExecutor`` locally, ``RayExecutor`` on a cluster).

All share one small contract: ``map(fn, items) -> list`` (order-preserving),
``submit(fn, *args, **kw) -> Future``, ``shutdown()``, context manager, ``workers``.
``fn`` must be picklable (a module-level function) for the process and Ray back ends.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import tempfile
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


def _apply(fn: Callable[..., R], args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
    return fn(*args, **kwargs)


class RayExecutor(_ContextMixin):
    """Runs calls as Ray tasks: the engine for more than one machine.

    address: a cluster (``ray://host:10001`` or ``auto``); None starts a local Ray.
    num_cpus: CPUs for a local Ray (ignored when connecting to a cluster).
    Ray is initialised only if it is not already; ``shutdown`` stops it only if we
    started it. Workers import ``fn`` by module name, so it must live in an importable
    module (or ``__main__``); a test module outside the package is not importable there.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        temp_dir: str | None = None,
    ) -> None:
        if num_cpus is not None and num_cpus < 1:
            raise ConfigError(f"num_cpus must be >= 1, got {num_cpus}")
        ray = _import_ray()
        self._ray = ray
        self._owns = False
        if not ray.is_initialized():
            kw: dict[str, Any] = {
                "address": address,
                "include_dashboard": False,
                "ignore_reinit_error": True,
                "log_to_driver": False,
            }
            if address is None:
                kw["num_cpus"] = num_cpus
                kw["_temp_dir"] = temp_dir or os.path.join(tempfile.gettempdir(), "optiforge-ray")
            try:
                ray.init(**kw)
            except Exception as e:  # ray raises ConnectionError, RuntimeError, ...
                where = address or "a local Ray"
                raise SandboxUnavailable(f"could not start/connect to {where}: {e}") from e
            self._owns = True
        self.workers = int(ray.cluster_resources().get("CPU", 1))
        # One remote trampoline: @ray.remote refuses builtins (math.factorial, ...),
        # while cloudpickle ships any picklable callable as an argument.
        self._apply = ray.remote(_apply)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """Order-preserving map over Ray tasks (``ray.get`` keeps the ref order)."""
        refs = [self._apply.remote(fn, (x,), {}) for x in items]
        return list(self._ray.get(refs))

    def submit(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> cf.Future[R]:
        """One Ray task as a ``concurrent.futures.Future``."""
        fut: cf.Future[R] = self._apply.remote(fn, args, kwargs).future()
        return fut

    def shutdown(self) -> None:
        """Stop Ray if this executor started it."""
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()
        self._owns = False

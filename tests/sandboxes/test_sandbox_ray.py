"""RayExecutor on a local Ray (num_cpus=2): one module-scoped Ray for all tests."""

from __future__ import annotations

import functools
import itertools
import math
import operator
import os

import pytest

from optiforge.sandboxes import Executor, RayExecutor

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def rex() -> RayExecutor:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ex = RayExecutor(num_cpus=2)
    yield ex
    ex.shutdown()
    assert not ray.is_initialized()


# Ray workers import functions by module: test modules are not importable there, so the
# tests ship stdlib callables (a package module or partial works the same way).
_inv = functools.partial(operator.truediv, 1)


@pytest.mark.slow
def test_ray_map_submit_and_errors(rex: RayExecutor) -> None:
    assert isinstance(rex, Executor)
    assert rex.workers == 2
    items = [9, 2, 7, 0, 4]
    assert rex.map(math.factorial, items) == [math.factorial(i) for i in items]
    assert rex.submit(operator.mul, 6, 7).result(timeout=60) == 42
    assert rex.submit(os.getpid).result(timeout=60) != os.getpid()
    with pytest.raises(ZeroDivisionError):
        rex.map(_inv, [1, 0])
    with pytest.raises(ZeroDivisionError):
        rex.submit(_inv, 0).result(timeout=60)


def test_second_executor_reuses_running_ray(rex: RayExecutor) -> None:
    other = RayExecutor()
    assert other.map(abs, [-3]) == [3]
    other.shutdown()  # did not start Ray, so must not stop it
    assert ray.is_initialized()


def _actor_pids(rex: RayExecutor) -> set[int]:
    return set(ray.get([a.ping.remote() for a in rex._session.actors]))


def test_calls_run_on_warm_actors_that_keep_a_shipped_callable(rex: RayExecutor) -> None:
    """Calls land on the session's actors (one per CPU, kept: no process per call), and a
    callable is unpickled once per actor, not per call (its state survives calls)."""
    pids = {rex.submit(os.getpid).result(timeout=60) for _ in range(12)}
    assert pids <= _actor_pids(rex) and len(_actor_pids(rex)) == 2
    counter = functools.partial(next, itertools.count())
    # one call at a time goes to the first idle actor: one counter, counting on
    assert [rex.submit(counter).result(timeout=60) for _ in range(5)] == [0, 1, 2, 3, 4]


def test_a_joining_executor_shares_the_actors(rex: RayExecutor) -> None:
    """A run's executor inside an eval joins the eval's Ray and its actors (it starts no
    actors of its own, which would wait forever for CPUs the first ones hold)."""
    other = RayExecutor(num_cpus=2)
    assert other._session is rex._session
    pids = {other.submit(os.getpid).result(timeout=60) for _ in range(8)}
    assert pids <= _actor_pids(rex)
    other.shutdown()  # did not start them: they keep running
    assert rex.submit(operator.add, 1, 2).result(timeout=60) == 3

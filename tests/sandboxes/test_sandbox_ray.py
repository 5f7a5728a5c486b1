"""RayExecutor on a local Ray (num_cpus=2): one module-scoped Ray for all tests."""

from __future__ import annotations

import functools
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

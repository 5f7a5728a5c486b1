"""Executors: order-preserving map, futures, errors, lifecycle (process pool and inline)."""

from __future__ import annotations

import math
import operator
import os

import pytest

from optiforge.errors import ConfigError
from optiforge.sandboxes import Executor, InlineExecutor, ProcessExecutor


@pytest.fixture(scope="module")
def pool() -> ProcessExecutor:
    ex = ProcessExecutor(2)
    yield ex
    ex.shutdown()


def test_protocol() -> None:
    assert isinstance(InlineExecutor(), Executor)
    with ProcessExecutor(1) as ex:
        assert isinstance(ex, Executor) and ex.workers == 1


def test_map_preserves_order(pool: ProcessExecutor) -> None:
    items = [7, 1, 5, 0, 12, 3]
    assert pool.map(math.factorial, items) == [math.factorial(i) for i in items]
    assert pool.workers == 2


def test_runs_in_other_processes(pool: ProcessExecutor) -> None:
    pids = set(pool.map(_getpid, range(8)))
    assert os.getpid() not in pids


def _getpid(_: int) -> int:
    return os.getpid()


def test_submit_and_errors(pool: ProcessExecutor) -> None:
    assert pool.submit(operator.add, 2, 3).result(timeout=30) == 5
    assert pool.submit(pow, 2, exp=10).result(timeout=30) == 1024
    with pytest.raises(ZeroDivisionError):
        pool.submit(operator.truediv, 1, 0).result(timeout=30)
    with pytest.raises(ZeroDivisionError):
        pool.map(_inv, [1, 0, 2])


def _inv(x: int) -> float:
    return 1 / x


def test_inline_executor() -> None:
    with InlineExecutor() as ex:
        assert ex.map(_inv, [1, 2, 4]) == [1.0, 0.5, 0.25]
        fut = ex.submit(_inv, 0)
        assert isinstance(fut.exception(), ZeroDivisionError)


def test_bad_config() -> None:
    with pytest.raises(ConfigError, match="workers"):
        ProcessExecutor(0)
    with pytest.raises(ConfigError, match="spawn"):
        ProcessExecutor(1, context="fork")  # type: ignore[arg-type]


def test_shutdown_is_idempotent() -> None:
    ex = ProcessExecutor(1)
    assert ex.map(abs, [-1]) == [1]
    ex.shutdown()
    ex.shutdown()
    with pytest.raises(RuntimeError):
        ex.submit(abs, -1)

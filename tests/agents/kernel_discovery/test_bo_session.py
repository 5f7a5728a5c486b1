"""``BOSession``: the BO loop one round at a time, restorable from its rows.

Kernel Discovery's graph nodes are BO steps on it; its resume rests on two facts tested
here: stepping the session is the loop, and a session restored from its rows (a resume)
goes on exactly as the uninterrupted one, without calling the objective again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from optiforge.errors import SolverError
from optiforge.evals.suites.hdbo import embedded
from optiforge.solvers.bo import AcqConfig, BOLoop
from optiforge.solvers.bo.loop import kernel_model
from optiforge.solvers.bo.session import BOSession
from optiforge.solvers.gp.kernels import KernelSpec

ACQ = AcqConfig(num_restarts=1, raw_samples=16, maxiter=20)


def _rbf() -> KernelSpec:
    from optiforge.solvers.gp import grammar

    return grammar.build_kernel("RBF_ARD")


def _model(session: BOSession, used: list[str]) -> Any:
    spec = _rbf()

    def fn(Xu: torch.Tensor, target: torch.Tensor, rnd: int) -> Any:
        used.append(spec.expression)
        return kernel_model(spec, Xu, target, rnd, seed=0, gp_restarts=1,
                            resumable=session.resumable)  # fmt: skip

    return fn


def _kw(log: Path) -> dict[str, Any]:
    return {"budget": 9, "n_init": 5, "seed": 0, "acq_config": ACQ, "resumable": True,
            "log_path": log}  # fmt: skip


@pytest.fixture(autouse=True)
def _one_thread() -> Any:
    from threadpoolctl import threadpool_limits

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(n)


def test_stepping_is_the_loop_and_a_restored_session_goes_on_the_same(tmp_path: Path) -> None:
    problem = embedded("hartmann", 3, 3, seed=0)
    loop = BOLoop(problem, budget=9, n_init=5, kernel_provider=lambda X, y, r: _rbf(), seed=0,
                  acq_config=ACQ, resume_path=tmp_path / "loop.jsonl").run()  # fmt: skip

    calls: list[int] = []

    class Counted:
        """A fresh problem (its own noise stream) that counts objective calls."""

        def __init__(self) -> None:
            self.problem = embedded("hartmann", 3, 3, seed=0)
            self.bounds = self.problem.bounds

        def __call__(self, X: torch.Tensor) -> torch.Tensor:
            calls.append(int(X.shape[0]))
            return self.problem(X)

        def replay_noise(self, sizes: list[int]) -> None:
            self.problem.replay_noise(sizes)

    # A fresh session per step, restored from the rows so far: every node entry a resume.
    log = tmp_path / "session.jsonl"
    s = BOSession(Counted(), **_kw(log))
    rows = [s.begin()]
    while not s.done:
        s = BOSession.restore(Counted(), rows, **_kw(log))
        used: list[str] = []
        rows.append(s.step(_model(s, used), used))
    assert sum(calls) == 9  # restoring never calls the objective
    torch.testing.assert_close(s.trace().X, loop.X, rtol=0, atol=0)
    assert s.trace().y.tolist() == loop.y.tolist() and s.kernels() == loop.kernels
    assert (tmp_path / "loop.jsonl").read_text() == log.read_text()

    # A row the log holds beyond the state (a killed node's evaluation) is adopted.
    s = BOSession.restore(Counted(), rows[:-1], **_kw(log))
    assert s.step(lambda *a: pytest.fail("no model for a logged round"), []) == rows[-1]
    assert sum(calls) == 9
    # A log that lacks rows the state holds is refused.
    log.write_text("\n".join(log.read_text().splitlines()[:3]) + "\n")
    with pytest.raises(SolverError, match="does not hold"):
        BOSession.restore(Counted(), rows, **_kw(log))
    assert json.loads(log.read_text().splitlines()[0])["header"]["budget"] == 9


def test_a_session_that_is_not_resumable_is_not_restored() -> None:
    problem = embedded("hartmann", 3, 3, seed=0)
    s = BOSession(problem, budget=6, n_init=5, seed=0, acq_config=ACQ)
    rows = [s.begin()]
    with pytest.raises(SolverError, match="not resumable"):
        BOSession.restore(problem, rows, budget=6, n_init=5, seed=0, acq_config=ACQ)

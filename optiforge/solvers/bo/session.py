"""Step-wise GP-BO (``BOSession``): the ``BOLoop`` one round at a time, its state plain data.

``BOLoop.run`` is a ``BOSession`` driven to the end in one call. An agent that changes
the kernel between rounds as graph nodes (Kernel Discovery) drives the session itself:
``begin()`` evaluates the initial Sobol design, ``step(model_fn, kernels)`` runs one round
(fit -> qLogEI -> evaluate) with the model the caller supplies, exactly as the loop does.

State: ``rows`` is the whole record of a session: the initial design (round -1) and one
row per BO round, each ``{"round", "x" (unit cube, `q x D`), "y", "fallback", "kernel"}``,
JSON-serializable. ``BOSession.restore(problem, rows, ...)`` rebuilds the session from
them without calling the objective (the counter is charged and a noise stream is
advanced past them, as a resumed ``BOLoop`` does). Every session seeds each round's
randomness (acquisition raw samples and MC base samples, fallback points; the GP fit in
``loop.kernel_model``) from ``(seed, round)``: a restored session proposes exactly what the
uninterrupted one would, and two methods run with the same seed share round r's
randomness (paired seeds: the Kernel Discovery agent and its GP-BO baselines differ by
their kernels, not by their random streams). ``resumable`` marks a session whose rows may
be restored.

Log: with ``log_path`` every evaluation is appended (fsynced) to a JSONL file, header
first, as soon as the objective returns. A row already in the log when its round comes
(an evaluation finished by a killed process) is adopted instead of calling the
objective again.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from botorch.models.model import Model
from torch import Tensor

from optiforge.errors import SolverError
from optiforge.solvers.bo.loop import (
    DTYPE,
    AcqConfig,
    CountedObjective,
    ExactGPFactory,
    KernelProvider,
    ModelFactory,
    Problem,
    ProposedPoints,
    Trace,
    checked_points,
    exact_gp_factory,
    optimize_qlogei,
    round_seed,
    sobol,
    standardize,
)

RoundModel = Callable[[Tensor, Tensor, int], "Model | ProposedPoints"]
"""``(X_unit n x D, targets n (maximise), round) -> fitted Model or ProposedPoints``."""


class BOSession:
    """GP-BO with qLogEI, one round per ``step``; minimises ``problem`` within ``budget``."""

    def __init__(
        self,
        problem: Problem,
        *,
        budget: int,
        n_init: int = 10,
        batch_size: int = 1,
        seed: int = 0,
        acq_config: AcqConfig | None = None,
        name: str = "bo",
        resumable: bool = False,
        log_path: str | Path | None = None,
    ) -> None:
        if budget < n_init or n_init < 2 or batch_size < 1:
            raise SolverError("need budget >= n_init >= 2 and batch_size >= 1")
        self.problem, self.budget, self.n_init, self.q = problem, budget, n_init, batch_size
        self.seed, self.name, self.resumable = seed, name, resumable
        self.acq_config = acq_config or AcqConfig()
        self.obj = CountedObjective(problem, budget)
        self.D = self.obj.dim
        self.rows: list[dict[str, Any]] = []
        """The session's state: the initial design (round -1), then one row per round."""
        self.Xu = torch.empty(0, self.D, dtype=DTYPE)
        """`n x D` evaluated points in the unit cube (as proposed: not clamped)."""
        self.y = torch.empty(0, dtype=DTYPE)
        self._gen = torch.Generator().manual_seed(seed + 7919)
        self.log_path = Path(log_path) if log_path is not None else None
        self.logged = self._read_log()
        """Rows already in the log (a resumed run's): adopted when their round comes."""

    # ------------------------------------------------------------------ state

    @property
    def round(self) -> int:
        """The next BO round (0 after the initial design)."""
        return max(len(self.rows) - 1, 0)

    @property
    def left(self) -> int:
        """Evaluations left in the budget."""
        return self.obj.left

    @property
    def done(self) -> bool:
        return bool(self.rows) and self.obj.left <= 0

    @property
    def n_fallbacks(self) -> int:
        return sum(1 for r in self.rows if r.get("fallback"))

    def kernels(self) -> list[str]:
        """The kernel of every round that chose one (the loop's ``Trace.kernels``)."""
        return [str(r["kernel"]) for r in self.rows[1:] if r.get("kernel")]

    @classmethod
    def restore(cls, problem: Problem, rows: Sequence[dict[str, Any]], **kw: Any) -> BOSession:
        """The session that produced ``rows`` (same settings ``kw``), without calling the
        objective. Exact for a resumable session; ``SolverError`` for one that is not.

        With ``log_path``, the log must hold ``rows`` (it may be one row ahead)."""
        s = cls(problem, **kw)
        if rows and not s.resumable:
            raise SolverError("a BO session that is not resumable cannot be restored exactly")
        if s.log_path is not None and s.logged[: len(rows)] != list(rows):
            raise SolverError(
                f"{s.log_path} does not hold the {len(rows)} evaluation rows of the "
                "checkpointed session (cut or edited)"
            )
        for row in rows:
            s.adopt(row)
        return s

    def adopt(self, row: dict[str, Any]) -> None:
        """Add an earlier run's evaluations without calling the objective (the counter is
        charged; a problem with ``replay_noise`` advances its noise stream past them)."""
        X = torch.tensor(row["x"], dtype=DTYPE).reshape(-1, self.D)
        y = torch.tensor(row["y"], dtype=DTYPE).reshape(-1)
        self.obj.used += y.numel()
        self.obj.X.append(self.obj.to_problem(X.clamp(0, 1)))
        self.obj.y.append(y)
        replay_noise = getattr(self.problem, "replay_noise", None)
        if callable(replay_noise):
            replay_noise([int(y.numel())])
        self._extend(row, X, y)

    def adopt_logged(self) -> int:
        """Adopt every row of the log beyond the session's; returns how many."""
        n = 0
        while len(self.logged) > len(self.rows):
            self.adopt(self.logged[len(self.rows)])
            n += 1
        return n

    def _extend(self, row: dict[str, Any], X: Tensor, y: Tensor) -> None:
        self.rows.append(row)
        self.Xu = torch.cat([self.Xu, X]) if self.Xu.numel() else X
        self.y = torch.cat([self.y, y]) if self.y.numel() else y

    def trace(self, t0: float | None = None, kernels: list[str] | None = None) -> Trace:
        """Everything evaluated so far (``kernels``: default the rows' own)."""
        import time

        return self.obj.trace(
            self.name, self.seed, time.perf_counter() if t0 is None else t0,
            kernels=self.kernels() if kernels is None else kernels, n_fallbacks=self.n_fallbacks,
        )  # fmt: skip

    # ------------------------------------------------------------------ steps

    def begin(self) -> dict[str, Any]:
        """Seed torch and evaluate the initial Sobol design (or adopt it from the log)."""
        if self.rows:
            raise SolverError("the BO session has already begun")
        torch.manual_seed(self.seed)
        if self.logged:
            self.adopt(self.logged[0])
            return self.rows[-1]
        Xu = sobol(self.n_init, self.D, self.seed)
        y = self.obj(Xu)
        row = {"round": -1, "x": Xu.tolist(), "y": y.tolist()}
        self._append(row)
        self._extend(row, Xu, y)
        return row

    def step(self, model_fn: RoundModel, kernels: list[str]) -> dict[str, Any]:
        """One BO round: ``model_fn`` (which appends its kernel's expression to ``kernels``
        once it has chosen one) -> qLogEI, or the ``ProposedPoints`` it returns -> evaluate.

        A model or acquisition that fails (``SolverError``, ``RuntimeError``,
        ``ValueError``) is an honest fallback: a random point, counted in the row.
        """
        if not self.rows:
            raise SolverError("begin() the BO session first")
        if self.done:
            raise SolverError("the BO session's budget is spent")
        if len(self.logged) > len(self.rows):  # evaluated by a killed run: not again
            self.adopt(self.logged[len(self.rows)])
            return self.rows[-1]
        rnd, D, Xu = self.round, self.D, self.Xu
        q = min(self.q, self.obj.left)
        target = -standardize(self.y)  # BoTorch maximises
        fallback = False
        n_kernels = len(kernels)
        try:
            model = model_fn(Xu, target, rnd)
            if isinstance(model, ProposedPoints):
                cand = checked_points(model.X, q, D)
            else:
                # Raw samples and MC base samples seeded per round, in every session: a
                # resumed run proposes what the uninterrupted one would, and two methods
                # with the same seed share round r's randomness (paired seeds).
                torch.manual_seed(round_seed(self.seed, rnd) + 1)
                cand = optimize_qlogei(model, target, q, D, self.acq_config, X_baseline=Xu)
        except (SolverError, RuntimeError, ValueError) as e:
            # Honest fallback: a random point, counted in the trace.
            fallback = True
            warnings.warn(
                f"BO round {rnd}: model/acquisition failed ({e}); using a random point",
                stacklevel=2,
            )
            self._gen = torch.Generator().manual_seed(round_seed(self.seed, rnd) + 2)
            cand = torch.rand(q, D, generator=self._gen, dtype=DTYPE)
        y_new = self.obj(cand)
        row = {
            "round": rnd,
            "x": cand.to(DTYPE).tolist(),
            "y": y_new.tolist(),
            "fallback": fallback,
            # None when the model failed before a kernel was chosen this round.
            "kernel": kernels[-1] if len(kernels) > n_kernels else None,
        }
        self._append(row)
        self._extend(row, cand.to(DTYPE), y_new)
        return row

    # ------------------------------------------------------------------ log

    def header(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "seed": self.seed,
            "budget": self.budget,
            "n_init": self.n_init,
            "batch_size": self.q,
            "dim": self.D,
        }

    def _read_log(self) -> list[dict[str, Any]]:
        """Evaluation rows of an earlier run of this session (header checked); [] when none."""
        if self.log_path is None or not self.log_path.exists():
            return []
        data = self.log_path.read_bytes()
        if data and not data.endswith(b"\n"):  # a write cut off by a kill: redone
            data = data[: data.rfind(b"\n") + 1]
            with self.log_path.open("r+b") as fh:
                fh.truncate(len(data))  # so the next row starts a clean line
        rows: list[dict[str, Any]] = []
        for i, line in enumerate(data.decode().splitlines()):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise SolverError(f"{self.log_path}: line {i + 1} is not JSON") from err
        if not rows:
            return []
        header = rows[0].get("header")
        if header != self.header():
            raise SolverError(
                f"{self.log_path} belongs to another BO run ({header} != {self.header()})"
            )
        return rows[1:]

    def _append(self, row: dict[str, Any]) -> None:
        if self.log_path is None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.log_path.exists() or self.log_path.stat().st_size == 0
        with self.log_path.open("a") as fh:
            if fresh:
                fh.write(json.dumps({"header": self.header()}) + "\n")
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            os.fsync(fh.fileno())  # on disk before the next (possibly expensive) evaluation
        self.logged.append(row)


class BOLoop:
    """GP-BO with qLogEI (or qLogNEI: ``acq``); minimises ``problem`` within ``budget`` evaluations.

    Args:
        kernel_provider: returns the kernel for a round; called at round 0 and every
            ``refresh_every`` rounds (hyperparameters are refitted every round).
        model_factory: alternative to ``kernel_provider`` (e.g. BoTorch's SingleTaskGP).
        resume_path: JSONL file of this run's evaluations: appended to after every
            evaluation and, when it exists, reloaded so the run continues where it stopped
            (the objective is not called again for the points it holds).
    """

    def __init__(
        self,
        problem: Problem,
        *,
        budget: int,
        n_init: int = 10,
        batch_size: int = 1,
        kernel_provider: KernelProvider | None = None,
        model_factory: ModelFactory | None = None,
        refresh_every: int = 1,
        gp_restarts: int = 1,
        seed: int = 0,
        acq: str = "qLogEI",
        acq_config: AcqConfig | None = None,
        name: str = "bo",
        resume_path: str | Path | None = None,
    ) -> None:
        if budget < n_init or n_init < 2 or batch_size < 1 or refresh_every < 1:
            raise SolverError("need budget >= n_init >= 2, batch_size >= 1, refresh_every >= 1")
        if (kernel_provider is None) == (model_factory is None):
            raise SolverError("give exactly one of kernel_provider or model_factory")
        self.problem, self.budget, self.n_init, self.q = problem, budget, n_init, batch_size
        self.seed, self.name = seed, name
        self.resume_path = Path(resume_path) if resume_path is not None else None
        self.acq_config = acq_config or AcqConfig(acquisition=acq)
        if acq_config is not None and acq != "qLogEI" and acq != acq_config.acquisition:
            raise SolverError(
                f"acq={acq!r} disagrees with acq_config.acquisition={acq_config.acquisition!r}"
            )
        self._kernels: list[str] = []
        if kernel_provider is not None:
            model_factory, self._kernels = exact_gp_factory(
                kernel_provider, refresh_every=refresh_every, gp_restarts=gp_restarts, seed=seed
            )
        assert model_factory is not None
        self.model_factory = model_factory

    def session(self) -> Any:
        """A fresh ``BOSession`` with this loop's settings (its log: ``resume_path``)."""
        return BOSession(
            self.problem, budget=self.budget, n_init=self.n_init, batch_size=self.q,
            seed=self.seed, acq_config=self.acq_config, name=self.name,
            resumable=self.resume_path is not None, log_path=self.resume_path,
        )  # fmt: skip

    def run(self) -> Trace:
        """Initial Sobol design, then rounds of fit -> qLogEI -> evaluate until the budget is spent."""
        t0 = time.perf_counter()
        session = self.session()
        session.begin()
        # Resume: the logged evaluations are reloaded, the objective is not called for them.
        rnd = session.adopt_logged()
        if rnd and isinstance(self.model_factory, ExactGPFactory):
            self.model_factory.used.extend(session.kernels())
            self.model_factory.replay(session.Xu, session.y, self.n_init, self.q, rnd)
        while not session.done:
            session.step(self.model_factory, self._kernels)
        return session.trace(t0, kernels=list(self._kernels))

"""``AutoROBenchmark``: the ``evals.protocol`` Benchmark over AutoRO-Bench instances.

A candidate is either cvxpy code (``str``, run in the sandbox under the I/O protocol of
``optiforge.solvers.robust.candidate``), a dict ``{"x": [...], "objective": f}``, or a
formulation ``{"model": <ROProblem JSON>, "code": str}``: the program runs with the
candidate's OWN model as ``instance.json`` and its answer is verified against the hidden
ground truth; ``metrics["model_match"]`` says whether the model equals the ground truth.

Text-only tasks (every ``app`` split): ``description`` is the statement and its model
sheet in words plus the modelling and I/O protocols, never the problem JSON; a bare
program is rejected (it would have to read a model it was never given), a formulation
is required.
Accuracy = robust-feasible, reported objective consistent with ``x``, and recomputed
objective equal to the reference within ``rel_tol`` (absolute floor ``abs_tol``); every
score carries the tolerances it used in ``metrics``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from optiforge.errors import ConfigError, InvalidTask, SandboxError
from optiforge.evals.protocol import Score, SuiteHooks
from optiforge.evals.suites.autoro.applications import APP_SPLITS, app_instances
from optiforge.evals.suites.autoro.instances import generate
from optiforge.solvers.robust import (
    DEFAULT_ABS_TOL,
    DEFAULT_FEAS_TOL,
    DEFAULT_REL_TOL,
    Verdict,
    verify,
    verify_candidate_code,
)
from optiforge.solvers.robust.candidate import __doc__ as IO_PROTOCOL
from optiforge.solvers.robust.compare import model_differences
from optiforge.solvers.robust.instance import ROInstance
from optiforge.solvers.robust.model import ROProblem, parse_problem

APP_SPLIT_NAMES: tuple[str, ...] = ("app", *APP_SPLITS)
AUTORO_SPLITS: tuple[str, ...] = ("dev", "test", "heldout", *APP_SPLIT_NAMES)

MODELLING_PROTOCOL = """Modelling protocol (text-only task): the problem JSON is not given. First write
the model you read in the statement as an ROProblem (the instance.json schema below;
variables x1..xn in the statement's order are indices 0..n-1, constraints in the
statement's order); then write the counterpart program. The program runs with YOUR
model as instance.json, and the solution it prints (x, objective) is verified against
the hidden ground-truth model: a wrong model gives a wrong solution."""
# test seeds differ from dev so "in-distribution" never means "the same instances"
_SPLIT_SEED_OFFSET = {"dev": 0, "test": 1000, "heldout": 2000}


@dataclass
class AutoROTask:
    """One AutoRO-Bench instance as a ``Task``: ``evaluate`` verifies a candidate itself."""

    instance: ROInstance
    rel_tol: float = DEFAULT_REL_TOL
    abs_tol: float = DEFAULT_ABS_TOL
    feas_tol: float = DEFAULT_FEAS_TOL
    timeout_s: float = 60.0
    suite: str = "autoro"
    metric: str = "accuracy"
    higher_is_better: bool = True
    budget: int | None = None
    """No budget of its own: the agent's attempt limit applies."""
    text_only: bool | None = None
    """The agent reads words only (default: True for the ``app`` splits)."""
    name: str = field(init=False)
    split: str = field(init=False)
    description: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.instance.id
        self.split = self.instance.split
        if self.text_only is None:
            self.text_only = self.split.startswith("app")
        if self.text_only:
            self.description = (
                f"{self.instance.description}\n\n{MODELLING_PROTOCOL}\n\n{IO_PROTOCOL}"
            )
        else:
            self.description = (
                f"{self.instance.description}\n\nProblem JSON (instance.json):\n"
                f"{self.instance.problem.to_json()}\n\n{IO_PROTOCOL}"
            )

    @property
    def statement(self) -> str:
        """The problem as words (text-only tasks: what the modelling step reads)."""
        return self.instance.description

    def tolerance_line(self) -> str:
        """The tolerances this task scores with (printed in every report)."""
        return f"rel_tol={self.rel_tol:g} abs_tol={self.abs_tol:g} feas_tol={self.feas_tol:g}"

    def evaluate(self, candidate: Any, sandbox: Any = None) -> Score:
        """Score a program (``str``), an ``{"x", "objective"}`` dict or a formulation
        ``{"model", "code"}``: 1.0 iff correct (against the hidden ground truth)."""
        ref = self.instance.reference_objective
        model: ROProblem | None = None
        if isinstance(candidate, dict) and "code" in candidate and "model" in candidate:
            try:
                raw = candidate["model"]
                model = raw if isinstance(raw, ROProblem) else parse_problem(raw)
            except InvalidTask as exc:  # a malformed model is the candidate's failure
                return self._score_reason(f"candidate model is not an ROProblem: {exc}")
            candidate = candidate["code"]
            if not isinstance(candidate, str):
                return self._score_reason("formulation code must be a string")
        elif isinstance(candidate, str) and self.text_only:
            return self._score_reason(
                'text-only task: the candidate must be a formulation {"model": ..., "code": ...}'
            )
        if isinstance(candidate, str):
            if sandbox is None:
                raise SandboxError("AutoRO code candidates need a sandbox (untrusted code)")
            verdict = verify_candidate_code(
                self.instance.problem,
                candidate,
                sandbox,
                reference_objective=ref,
                timeout_s=self.timeout_s,
                rel_tol=self.rel_tol,
                abs_tol=self.abs_tol,
                feas_tol=self.feas_tol,
                instance_json=model.to_json() if model is not None else None,
            )
            score = self._score(verdict)
            if model is not None:
                diffs = model_differences(model, self.instance.problem)
                score.metrics["model_match"] = 0.0 if diffs else 1.0
                # paths only (no values): the training label adaptation's reflection reads
                score.details["model_fields"] = [d.split(":", 1)[0] for d in diffs]
            return score
        if isinstance(candidate, dict) and "x" in candidate and "objective" in candidate:
            obj = candidate["objective"]
            if not isinstance(obj, int | float) or isinstance(obj, bool):
                return self._score_reason("malformed candidate: objective is not a number")
            verdict = verify(
                self.instance.problem,
                candidate["x"],
                float(obj),
                reference_objective=ref,
                rel_tol=self.rel_tol,
                abs_tol=self.abs_tol,
                feas_tol=self.feas_tol,
            )
        else:
            return self._score_reason(
                'candidate must be cvxpy code (str) or {"x": [...], "objective": f}'
            )
        return self._score(verdict)

    def _score_reason(self, reason: str) -> Score:
        return Score(
            value=0.0,
            passed=False,
            metrics={"rel_tol": self.rel_tol, "abs_tol": self.abs_tol, "feas_tol": self.feas_tol},
            details={"reasons": [reason], "tolerance": self.tolerance_line()},
        )

    def _score(self, v: Verdict) -> Score:
        metrics = {
            "rel_tol": v.rel_tol,
            "abs_tol": v.abs_tol,
            "feas_tol": v.feas_tol,
            "max_violation": v.max_violation,
        }
        if v.rel_err is not None:
            metrics["rel_err"] = v.rel_err
        return Score(
            value=1.0 if v.correct else 0.0,
            passed=v.correct,
            metrics=metrics,
            details={
                "reasons": v.reasons,
                "tolerance": v.tolerance_line(),
                "robust_feasible": v.robust_feasible,
                "objective_match": v.objective_match,
                "objective_consistent": v.objective_consistent,
                "reference_objective": v.reference_objective,
                "recomputed_objective": v.recomputed_objective,
            },
        )


@dataclass
class AutoROBenchmark(SuiteHooks):
    """AutoRO-Bench: generated ``dev``/``test``/``heldout`` instances plus the ``app`` set.

    n_per_split: generated instances per split (difficulty cycles 1..5).
    seed: base seed; each split adds its own offset.
    """

    n_per_split: int = 30
    seed: int = 0
    description: str = (
        "AutoRO-Bench: robust-optimization reformulation (box, ellipsoidal, budget, polyhedral, "
        "intersections) plus 22 applications; accuracy = robust-feasible and optimal"
    )
    rel_tol: float = DEFAULT_REL_TOL
    abs_tol: float = DEFAULT_ABS_TOL
    feas_tol: float = DEFAULT_FEAS_TOL
    name: str = "autoro"
    splits: tuple[str, ...] = AUTORO_SPLITS

    def instances(self, split: str = "dev") -> list[ROInstance]:
        """The raw instances of ``split``."""
        if split not in AUTORO_SPLITS:
            raise ConfigError(
                f"unknown AutoRO split {split!r} (expected {'|'.join(AUTORO_SPLITS)})"
            )
        if split in APP_SPLIT_NAMES:
            return app_instances(split)
        return generate(split, self.n_per_split, seed=self.seed + _SPLIT_SEED_OFFSET[split])

    def tasks(self, split: str = "dev") -> list[AutoROTask]:
        """All tasks of ``split``; ``ConfigError`` for an unknown split."""
        return [
            AutoROTask(inst, rel_tol=self.rel_tol, abs_tol=self.abs_tol, feas_tol=self.feas_tol)
            for inst in self.instances(split)
        ]

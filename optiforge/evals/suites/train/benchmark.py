"""The ``train`` suite: small training problems (``problems.py``) where a candidate is a
training plan, ``{"optimizer": NAME, "hparams": {...}}``, naming a method of the training
catalogue (``optiforge.solvers.train.catalogue``) and its hyperparameters.

``TrainTask.evaluate`` validates the plan against the catalogue (a known name, a method
that applies to the problem's kind, known hyperparameters inside their ranges; one line
saying what is wrong otherwise), runs the catalogue's method in-process for the task's
step budget from the harness's seed (the plan is data: no candidate code runs), and scores
the trained model on held-out data the method never saw (lower is better). Keys other than
``optimizer`` and ``hparams`` are ignored (``details["ignored"]``).

The references an agent is compared with (the ``formulator``'s baselines on this suite):
``default_plan`` is AdamW at its catalogue defaults (on the bilevel problem: AdamW ERM of
the inner loss with ``lam`` left uniform, i.e. no cleaning), and ``tuned_plan`` tunes
every applicable catalogue method by random search (the defaults plus ``trials - 1``
draws, log-uniform where the range is logarithmic) scored on a validation split that is
not the held-out one, and returns the best. Methods added to the catalogue are picked up
by both without change here.

Splits: ``dev`` (the four problems at base size) and ``test`` (each with other data and a
harder setting: a wider net, an ill-conditioned matrix, a longer context, more label
noise).
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass
from typing import Any

from optiforge.evals.plans import (
    InvalidPlan,
    check_hparams,
    hparams_as_data,
    one_line,
    one_thread,
    sample_hparams,
)
from optiforge.evals.protocol import Score, SuiteHooks
from optiforge.evals.suites.train.problems import (
    DigitsCleaning,
    DigitsMLP,
    GrammarLM,
    MatrixSensing,
)
from optiforge.evals.suites.train.protocol import PLAN_KEYS
from optiforge.solvers.train import catalogue
from optiforge.solvers.train.api import TrainMethod, TrainResult

Problem = DigitsMLP | MatrixSensing | GrammarLM | DigitsCleaning

__all__ = ["InvalidPlan", "TrainBenchmark", "TrainTask", "options_of", "validate_plan"]

METRICS = {"classify": "heldout_ce", "lowrank": "relative_error", "lm": "heldout_nats",
           "bilevel": "heldout_ce"}  # fmt: skip


def validate_plan(plan: Any, kind: str) -> tuple[TrainMethod, dict[str, float]]:
    """The catalogue method and its full hyperparameters for ``plan`` on a problem of
    ``kind``; ``InvalidPlan`` with one line naming what is wrong."""
    if isinstance(plan, str):
        try:
            plan = json.loads(plan)
        except json.JSONDecodeError as e:
            raise InvalidPlan(f"a training plan is a JSON object, not parseable: {e}") from None
    if not isinstance(plan, dict):
        raise InvalidPlan(f"a training plan is a JSON object {{optimizer, hparams}}, got {type(plan).__name__}")  # fmt: skip
    name = plan.get("optimizer")
    if not isinstance(name, str) or name not in catalogue.ENTRIES:
        raise InvalidPlan(f"unknown optimizer {name!r} (catalogue: {', '.join(catalogue.names())})")
    method = catalogue.get(name)
    if kind not in method.kinds:
        fits = [n for n in catalogue.names() if kind in catalogue.get(n).kinds]
        raise InvalidPlan(f"optimizer {name!r} does not apply to a {kind} problem (it runs on "
                          f"{', '.join(sorted(method.kinds))}; for {kind}: {', '.join(fits)})")  # fmt: skip
    return method, check_hparams(name, method.hparams, plan.get("hparams"))


def options_of(kind: str) -> dict[str, dict[str, Any]]:
    """The catalogue methods that apply to ``kind``, as data (``TrainPlanTask.options``)."""
    out: dict[str, dict[str, Any]] = {}
    for name in catalogue.names():
        m = catalogue.get(name)
        if kind in m.kinds:
            out[name] = {"description": m.description, "hparams": hparams_as_data(m.hparams)}
    return out


def train_and_score(
    problem: Problem, method: TrainMethod, hp: dict[str, float], steps: int, seed: int
) -> tuple[float, TrainResult]:
    """Run ``method`` on ``problem`` and score it with the problem's own ``evaluate``
    (``inf`` when the loss diverged)."""
    res = method.run(problem, hp, steps, seed)
    if isinstance(problem, DigitsCleaning):
        lam = res.lam if res.lam is not None else problem.make(seed)[1]
        value = problem.evaluate(res.model, lam)
    else:
        value = problem.evaluate(res.model)
    return (value if math.isfinite(value) else math.inf), res


@dataclass
class TrainTask:
    """One training problem with a step budget (see the module doc)."""

    name: str
    split: str
    problem: Problem
    budget: int
    suite: str = "train"
    higher_is_better: bool = False
    seed: int = 0
    """The training seed when the caller gives none (a plan never chooses it)."""
    seeded_by_harness: bool = True
    """The runner passes the run's seed to ``evaluate``."""

    @property
    def metric(self) -> str:
        return METRICS[self.problem.kind]

    @property
    def problem_kind(self) -> str:
        return self.problem.kind

    @property
    def description(self) -> str:
        return f"{self.problem.description} Budget: {self.budget} optimizer steps."

    @property
    def facts(self) -> dict[str, float | int | str]:
        p = self.problem
        model = p.make(0)[0] if isinstance(p, DigitsCleaning) else p.make_model(0)
        return {"kind": p.kind, "steps": self.budget, "batch_size": p.batch_size,
                "n_params": sum(t.numel() for t in model.parameters())}  # fmt: skip

    @property
    def options(self) -> dict[str, dict[str, Any]]:
        return options_of(self.problem.kind)

    def check_plan(self, candidate: Any) -> str | None:
        """None for a plan ``evaluate`` can run, else the one line saying why not."""
        try:
            validate_plan(candidate, self.problem.kind)
        except InvalidPlan as e:
            return str(e)
        return None

    def default_plan(self) -> dict[str, Any]:
        return {"optimizer": "adamw", "hparams": catalogue.get("adamw").defaults()}

    def tuned_plan(self, trials: int, seed: int) -> dict[str, Any]:
        """Random search over every applicable method (its defaults first, then
        ``trials - 1`` draws), each trial trained from ``seed`` and scored on the
        validation split; the best plan, with the search under ``"search"``."""
        rng = random.Random(f"tune/{self.name}/{seed}")
        tuning = self.problem.for_tuning()
        seen: list[dict[str, Any]] = []
        for name in self.options:
            method = catalogue.get(name)
            for trial in range(trials):
                hp = method.defaults() if trial == 0 else sample_hparams(method.hparams, rng)
                try:
                    value, _ = train_and_score(tuning, method, hp, self.budget, seed)
                except Exception as e:  # noqa: BLE001 - a method that fails is not the best
                    seen.append({"optimizer": name, "hparams": hp, "val": math.inf,
                                 "error": one_line(e)})  # fmt: skip
                    continue
                seen.append({"optimizer": name, "hparams": hp, "val": value})
        best = min(seen, key=lambda r: r["val"])
        return {"optimizer": best["optimizer"], "hparams": best["hparams"], "search": seen}

    def evaluate(
        self, candidate: Any, sandbox: Any | None = None, *, seed: int | None = None
    ) -> Score:
        """Run the plan for ``budget`` steps from ``seed`` (default ``self.seed``); score
        it on held-out data."""
        seed = int(self.seed if seed is None else seed)
        try:
            method, hp = validate_plan(candidate, self.problem.kind)
        except InvalidPlan as e:
            return Score(value=math.inf, passed=False, details={"reason": str(e)})
        plan = candidate if isinstance(candidate, dict) else json.loads(str(candidate))
        ignored = sorted(str(k) for k in plan if k not in PLAN_KEYS)
        t0 = time.perf_counter()
        details: dict[str, Any] = {"optimizer": method.name, "hparams": hp, "ignored": ignored}
        try:
            with one_thread():
                value, res = train_and_score(self.problem, method, hp, self.budget, seed)
        except Exception as e:  # noqa: BLE001 - the method's failure is the plan's score
            return Score(value=math.inf, passed=False,
                         details={**details, "reason": f"{method.name} failed: {one_line(e)}"})  # fmt: skip
        metrics = {"train_s": time.perf_counter() - t0}
        curve = [c for c in res.curve if math.isfinite(c)]
        if curve:
            metrics["final_train_loss"] = sum(curve[-10:]) / len(curve[-10:])
        if isinstance(self.problem, DigitsMLP | DigitsCleaning):
            metrics["accuracy"] = self.problem.accuracy(res.model)
        metrics |= {k: float(v) for k, v in res.extra.items() if isinstance(v, int | float)}
        if not math.isfinite(value):
            return Score(value=math.inf, passed=False, metrics=metrics,
                         details={**details, "reason": "training diverged (non-finite loss)"})  # fmt: skip
        return Score(value=value, passed=True, metrics=metrics, details=details)


def _tasks() -> list[TrainTask]:
    return [
        TrainTask("digits-mlp", "dev", DigitsMLP(), 600),
        TrainTask("lowrank-sensing", "dev", MatrixSensing(), 600),
        TrainTask("grammar-lm", "dev", GrammarLM(), 800),
        TrainTask("digits-cleaning", "dev", DigitsCleaning(), 600),
        TrainTask(
            "digits-mlp-wide",
            "test",
            DigitsMLP(name="digits-mlp-wide", hidden=256, data_seed=1),
            600,
        ),  # fmt: skip
        TrainTask(
            "lowrank-illcond",
            "test",
            MatrixSensing(
                name="lowrank-illcond", m=40, n=40, rank=4, cond=100.0, n_meas=900, data_seed=1
            ),
            600,
        ),  # fmt: skip
        TrainTask(
            "grammar-lm-ctx8",
            "test",
            GrammarLM(name="grammar-lm-ctx8", context=8, data_seed=1),
            800,
        ),  # fmt: skip
        TrainTask(
            "digits-cleaning-noisy",
            "test",
            DigitsCleaning(name="digits-cleaning-noisy", noise=0.5, data_seed=1),
            600,
        ),  # fmt: skip
    ]


class TrainBenchmark(SuiteHooks):
    """The ``train`` suite (see the module doc)."""

    name = "train"
    description = (
        "Training problems: pick a training optimizer and its hyperparameters from the catalogue"
    )
    splits = ("dev", "test")

    def tasks(self, split: str = "dev") -> list[TrainTask]:
        self.check_split(split)
        return [t for t in _tasks() if t.split == split]

    def notes(self, split: str, settings: Any = None) -> list[str]:
        return ["A plan is scored by training it for the task's steps from the run's seed and "
                "evaluating on held-out data (lower is better); adamw: the fixed AdamW default "
                "(ERM with uniform weights on the bilevel problem); tuned: every applicable "
                "catalogue method tuned by random search on a validation split."]  # fmt: skip

    def suite_metrics(self, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Per method: the optimizers its plans named."""
        chosen: dict[str, dict[str, int]] = {}
        for r in rows:
            plan = (r.get("extra") or {}).get("plan") or {}
            if plan.get("optimizer"):
                c = chosen.setdefault(str(r.get("method")), {})
                c[str(plan["optimizer"])] = c.get(str(plan["optimizer"]), 0) + 1
        return {"optimizers": chosen} if chosen else None

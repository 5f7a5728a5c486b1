"""The ``rl`` suite: constrained and multi-objective control problems DESCRIBED IN WORDS,
where a candidate is a control plan that poses the problem and names a method of the RL
catalogue (``optiforge.solvers.rl.catalogue``) with its hyperparameters::

    {"kind": "cmdp", "limits": [2, 1], "method": "locu", "hparams": {...}}
    {"kind": "mo-offline", "objective": "min", "method": "aetdice", "hparams": {...}}

Each task holds the words (``description``) and the structured truth the words state
(``truth``: an ``api.ControlProblem`` with its kind, environment, limits or objective).
``RLTask.evaluate``:

1. validates the plan (one line saying what is wrong): a known method that imports here, a
   posed kind it solves, known hyperparameters inside their ranges, and a posed problem
   consistent with the words' numbers: as many limits as the system has constraint costs,
   each the number the words state for it (``cmdp`` and ``statewise`` both read the same
   numbers: an episode budget or an every-step bound; posing one as the other is allowed
   and is scored on the truth), the stated scalarization for ``mo-offline``, the task's
   environment when ``env`` is given;
2. runs the method in-process on the POSED problem for the task's budget from the
   harness's seed (the plan is data: no candidate code runs; the method sees neither the
   truth's scoring nor any evaluation seed);
3. scores the trained policy on ``episodes`` held-out episodes of the TRUE problem (seeds
   from ``HELD_OUT_SEED``; ``api.evaluate``), lower is better:

   - online kinds: the penalized return ``-return + penalty * excess``; ``excess`` for a
     ``cmdp`` truth is ``sum_i max(0, cost_i - limit_i) / max(limit_i, 1)`` (mean episode
     cost over its budget, relative), for a ``statewise`` truth the share of episodes in
     which some instantaneous cost exceeded its bound. ``penalty`` is the task's: about
     one full task return per unit of excess (documented per task).
   - ``mo-offline``: minus the stated objective of the policy's return vector on held-out
     episodes, computed by ``MO_SCORER`` (the offline module's evaluation of a policy on
     its multi-objective environment); until that module is merged these tasks fail with
     one line saying so.

The references (the ``formulator``'s baselines here): ``default_plan`` poses the problem as
the words state it and runs ``ppo-lag`` (online; a ``statewise`` truth posed as a ``cmdp``
with the same numbers when ``ppo-lag`` does not solve ``statewise``) or
``linear-scalarization`` (``mo-offline``) at catalogue defaults; ``tuned_plan`` poses it
the same way and tries every applicable method (defaults, then random draws) scored on
validation episodes (``VALIDATION_SEED``), keeping the best. Methods that do not import
yet (another helper's module not merged) are left out of both and of ``options``.
"""

from __future__ import annotations

import importlib
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from optiforge.evals.plans import (
    InvalidPlan,
    check_hparams,
    hparams_as_data,
    num,
    one_line,
    one_thread,
    sample_hparams,
)
from optiforge.evals.protocol import Score, SuiteHooks
from optiforge.evals.suites.rl.protocol import PLAN_KEYS
from optiforge.solvers.rl import catalogue
from optiforge.solvers.rl.api import KINDS, ControlProblem, RLMethod, RLResult

__all__ = ["InvalidPlan", "RLBenchmark", "RLTask", "parse_objective", "validate_plan"]

HELD_OUT_SEED = 10_000
"""Held-out episodes reset with seeds ``HELD_OUT_SEED + k`` (what the suite scores)."""
VALIDATION_SEED = 20_000
"""The ``tuned`` search's episodes: ``VALIDATION_SEED + k`` (never the held-out ones)."""
MO_SCORER = "optiforge.solvers.rl.aetdice:evaluate_objective"
"""``evaluate_objective(problem, policy, episodes, seed) -> {"objective": float, ...}``:
the mean stated objective (higher is better) of ``policy`` on ``episodes`` fresh episodes
(seeds from ``seed``) of the offline problem's multi-objective environment."""
OBJECTIVES = ("linear", "min", "cvar", "fair")
"""Scalarizations a ``mo-offline`` plan may state: ``linear:w1,...,wk``, ``min``,
``cvar:alpha``, ``fair``."""


def parse_objective(text: str) -> tuple[str, tuple[float, ...]]:
    """``"linear:0.7,0.3"`` -> ``("linear", (0.7, 0.3))``; ``InvalidPlan`` naming the
    known forms otherwise."""
    name, _, args = str(text).strip().lower().partition(":")
    if name not in OBJECTIVES:
        raise InvalidPlan(f"unknown objective {text!r} (known: linear:w1,...,wk, min, cvar:alpha, fair)")  # fmt: skip
    try:
        values = tuple(float(a) for a in args.split(",") if a.strip())
    except ValueError:
        raise InvalidPlan(f"objective {text!r}: its parameters must be numbers") from None
    if name in ("linear", "cvar") and not values:
        raise InvalidPlan(f"objective {text!r} needs its parameters ({name}:...)")
    return name, values


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def method_or_error(name: Any) -> RLMethod:
    """The catalogue method ``name``; ``InvalidPlan`` for an unknown one or one whose
    module does not import here."""
    if not isinstance(name, str) or name not in catalogue.ENTRIES:
        raise InvalidPlan(f"unknown method {name!r} (catalogue: {', '.join(catalogue.names())})")
    try:
        return catalogue.get(name)
    except ImportError as e:
        raise InvalidPlan(f"method {name!r} is not available here ({one_line(e)})") from None


def available() -> list[str]:
    """The catalogue names whose module imports here (another helper's module may not be
    merged yet)."""
    out = []
    for name in catalogue.names():
        try:
            catalogue.get(name)
        except ImportError:
            continue
        out.append(name)
    return out


def options(max_steps: int | None = None) -> dict[str, dict[str, Any]]:
    """The importable methods as data (``RLPlanTask.options``); ``max_steps``: an online
    task's step budget, which caps ``steps_per_iter``'s range (a longer rollout runs no
    update, and ``validate_plan`` refuses it)."""
    out: dict[str, dict[str, Any]] = {}
    for name in available():
        m = catalogue.get(name)
        hps = hparams_as_data(m.hparams)
        spi = hps.get("steps_per_iter")
        if max_steps is not None and spi is not None:
            spi["high"] = min(float(spi["high"]), float(max_steps))
            spi["default"] = min(float(spi["default"]), spi["high"])
        out[name] = {"description": m.description, "kinds": sorted(m.kinds), "hparams": hps}
    return out


def validate_plan(plan: Any, truth: ControlProblem, labels: tuple[str, ...] = ()
                  ) -> tuple[RLMethod, dict[str, float], ControlProblem]:  # fmt: skip
    """The method, its full hyperparameters and the posed problem for ``plan`` against the
    true problem ``truth``; ``InvalidPlan`` with one line naming what is wrong (see the
    module doc). ``labels``: the constraint costs' names, for the messages."""
    if isinstance(plan, str):
        try:
            plan = json.loads(plan)
        except json.JSONDecodeError as e:
            raise InvalidPlan(f"a control plan is a JSON object, not parseable: {e}") from None
    if not isinstance(plan, dict):
        raise InvalidPlan(f"a control plan is a JSON object {{kind, limits|objective, method, hparams}}, got {type(plan).__name__}")  # fmt: skip
    name = plan.get("method")
    method = method_or_error(name)
    kind = plan.get("kind")
    if kind not in KINDS:
        raise InvalidPlan(f"kind {kind!r} is not a problem kind (one of {', '.join(KINDS)})")
    if kind not in method.kinds:
        fits = [n for n in available() if kind in catalogue.get(n).kinds]
        raise InvalidPlan(f"method {name!r} does not solve a {kind} problem (it solves "
                          f"{', '.join(sorted(method.kinds))}; for {kind}: {', '.join(fits) or 'none here'})")  # fmt: skip
    hp = check_hparams(str(name), method.hparams, plan.get("hparams"))
    if truth.kind != "mo-offline" and hp.get("steps_per_iter", 0) > truth.budget:
        raise InvalidPlan(f"hparams.steps_per_iter={num(float(hp['steps_per_iter']))} exceeds the "
                          f"task's budget of {truth.budget} environment steps: no update would run")  # fmt: skip
    env = plan.get("env")
    if env is not None and str(env).replace(" ", "") != truth.env.replace(" ", ""):
        raise InvalidPlan(f"env {env!r} is not the system the description is about ({truth.env})")
    offline = truth.kind == "mo-offline"
    if (kind == "mo-offline") != offline:
        what = "a logged dataset (offline)" if offline else "an online system (no dataset)"
        raise InvalidPlan(f"kind {kind!r} does not fit the description: it is about {what}")
    if offline:
        objective = plan.get("objective")
        if not isinstance(objective, str) or not objective:
            raise InvalidPlan("a mo-offline plan states its objective (linear:w1,...,wk, min, cvar:alpha, fair)")  # fmt: skip
        got, want = parse_objective(objective), parse_objective(truth.objective)
        if (
            got[0] != want[0]
            or len(got[1]) != len(want[1])
            or not all(_close(a, b) for a, b in zip(got[1], want[1], strict=True))
        ):
            raise InvalidPlan(f"objective {objective!r} is not the one the description states")
        posed = replace(truth, kind="mo-offline", objective=objective.strip().lower(), limits=())
        return method, hp, posed
    limits = plan.get("limits")
    if not isinstance(limits, list | tuple) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in limits
    ):
        raise InvalidPlan(f"limits must be a list of numbers, one per constraint cost, got {limits!r}")  # fmt: skip
    n = len(truth.limits)
    if len(limits) != n:
        raise InvalidPlan(f"the plan poses {len(limits)} limit(s); the description constrains {n} "
                          f"cost(s){' (' + ', '.join(labels) + ')' if labels else ''}")  # fmt: skip
    for i, (got_v, want_v) in enumerate(zip(limits, truth.limits, strict=True)):
        if not _close(float(got_v), want_v):
            label = labels[i] if i < len(labels) else f"constraint {i}"
            raise InvalidPlan(f"limits[{i}]={num(float(got_v))} is not the number the description states for {label}")  # fmt: skip
    posed = replace(truth, kind=kind, limits=tuple(float(v) for v in limits))
    return method, hp, posed


def penalized(truth: ControlProblem, stats: dict[str, Any], penalty: float) -> tuple[float, float]:
    """``(score, excess)`` of ``api.evaluate``'s statistics on the true online problem:
    ``-return + penalty * excess`` (module doc)."""
    if truth.kind == "cmdp":
        excess = sum(max(0.0, c - lim) / max(lim, 1.0)
                     for c, lim in zip(stats["cost"], truth.limits, strict=True))  # fmt: skip
    else:
        excess = float(stats["violation"])
    return -float(stats["return"]) + penalty * excess, excess


@dataclass
class RLTask:
    """One control problem in words with its truth and budget (see the module doc)."""

    name: str
    split: str
    words: str
    truth: ControlProblem
    penalty: float = 5.0
    """Score per unit of excess (about one full return of the task)."""
    episodes: int = 10
    """Held-out (and validation) episodes."""
    labels: tuple[str, ...] = ()
    """What the words call each constraint cost, in the environment's order."""
    suite: str = "rl"
    higher_is_better: bool = False
    seed: int = 0
    """The training seed when the caller gives none (a plan never chooses it)."""
    seeded_by_harness: bool = True
    kinds: tuple[str, ...] = KINDS

    @property
    def budget(self) -> int:
        return int(self.truth.budget)

    @property
    def metric(self) -> str:
        return "neg_objective" if self.truth.kind == "mo-offline" else "penalized_return"

    @property
    def description(self) -> str:
        unit = (
            "gradient steps on the dataset"
            if self.truth.kind == "mo-offline"
            else "environment steps"
        )
        return f"{self.words} Budget: {self.budget} {unit}."

    @property
    def facts(self) -> dict[str, float | int | str]:
        out: dict[str, float | int | str] = {"env": self.truth.env, "budget": self.budget}
        if self.truth.kind == "mo-offline":
            out["data"] = "offline"
        else:
            out["n_costs"] = len(self.truth.limits)
            out["episodes"] = self.episodes
        return out

    @property
    def options(self) -> dict[str, dict[str, Any]]:
        return options(None if self.truth.kind == "mo-offline" else self.budget)

    def check_plan(self, candidate: Any) -> str | None:
        try:
            validate_plan(candidate, self.truth, self.labels)
        except InvalidPlan as e:
            return str(e)
        return None

    def _posed(self, method: str) -> dict[str, Any]:
        """The truth as a plan for ``method`` (what the references pose)."""
        t = self.truth
        if t.kind == "mo-offline":
            return {"kind": t.kind, "objective": t.objective, "method": method}
        m = catalogue.get(method)
        kind = t.kind if t.kind in m.kinds else "cmdp"
        return {"kind": kind, "limits": list(t.limits), "method": method}

    def default_plan(self) -> dict[str, Any]:
        name = "linear-scalarization" if self.truth.kind == "mo-offline" else "ppo-lag"
        m = method_or_error(name)
        return {**self._posed(name), "hparams": {k: h.default for k, h in m.hparams.items()}}

    def applicable(self) -> list[str]:
        """Importable methods that solve the truth's kind (or, online, a ``cmdp``)."""
        t = self.truth.kind
        ok = {t} if t == "mo-offline" else {t, "cmdp"}
        return [n for n in available() if catalogue.get(n).kinds & ok]

    def tuned_plan(self, trials: int, seed: int) -> dict[str, Any]:
        """Every applicable method (its defaults, then ``trials - 1`` draws), trained from
        ``seed`` and scored on validation episodes; the best plan, the search under
        ``"search"``."""
        rng = random.Random(f"tune/{self.name}/{seed}")
        seen: list[dict[str, Any]] = []
        for name in self.applicable():
            method = catalogue.get(name)
            for trial in range(trials):
                hp = ({k: h.default for k, h in method.hparams.items()} if trial == 0
                      else sample_hparams(method.hparams, rng))  # fmt: skip
                plan = {**self._posed(name), "hparams": hp}
                try:
                    value, _, _ = self.run_plan(plan, seed, VALIDATION_SEED)
                except Exception as e:  # noqa: BLE001 - a method that fails is not the best
                    seen.append({"plan": plan, "val": math.inf, "error": one_line(e)})
                    continue
                seen.append({"plan": plan, "val": value})
        if not seen:
            raise InvalidPlan(f"no catalogue method that solves {self.truth.kind} imports here")
        best = min(seen, key=lambda r: r["val"])
        return {**best["plan"], "search": seen}

    def run_plan(self, plan: Any, seed: int, eval_seed: int) -> tuple[float, dict[str, Any], RLResult]:  # fmt: skip
        """Validate, train on the posed problem from ``seed``, score on the truth's episodes
        from ``eval_seed``: ``(score, metrics, result)``; ``InvalidPlan`` or the method's
        own exception otherwise."""
        method, hp, posed = validate_plan(plan, self.truth, self.labels)
        t0 = time.perf_counter()
        with one_thread():
            res = method.run(posed, seed, **hp)
        metrics: dict[str, Any] = {"train_s": time.perf_counter() - t0}
        if self.truth.kind == "mo-offline":
            scorer = _mo_scorer()
            stats = scorer(self.truth, res.policy, self.episodes, eval_seed)
            value = -float(stats["objective"])
            metrics["objective"] = float(stats["objective"])
        else:
            from optiforge.solvers.rl.api import evaluate

            stats = evaluate(self.truth, res.policy, episodes=self.episodes, seed=eval_seed)
            value, excess = penalized(self.truth, stats, self.penalty)
            metrics |= {
                "return": stats["return"],
                "excess": excess,
                "violation": stats["violation"],
            }
            metrics |= {f"cost_{i}": float(c) for i, c in enumerate(stats["cost"])}
            metrics |= {f"max_cost_{i}": float(c) for i, c in enumerate(stats["max_cost"])}
        metrics["eval_s"] = time.perf_counter() - t0 - metrics["train_s"]
        metrics |= {k: float(v) for k, v in res.extra.items() if isinstance(v, int | float)}
        return value, metrics, res

    def evaluate(self, candidate: Any, sandbox: Any | None = None, *, seed: int | None = None) -> Score:  # fmt: skip
        """Train the plan from ``seed`` (default ``self.seed``); score held out."""
        seed = int(self.seed if seed is None else seed)
        try:
            method, hp, posed = validate_plan(candidate, self.truth, self.labels)
        except InvalidPlan as e:
            return Score(value=math.inf, passed=False, details={"reason": str(e)})
        plan = candidate if isinstance(candidate, dict) else json.loads(str(candidate))
        ignored = sorted(str(k) for k in plan if k not in PLAN_KEYS)
        details: dict[str, Any] = {"method": method.name, "hparams": hp, "kind": posed.kind,
                                   "limits": list(posed.limits), "objective": posed.objective,
                                   "ignored": ignored}  # fmt: skip
        try:
            value, metrics, _ = self.run_plan(plan, seed, HELD_OUT_SEED)
        except Exception as e:  # noqa: BLE001 - the method's failure is the plan's score
            return Score(value=math.inf, passed=False,
                         details={**details, "reason": f"{method.name} failed: {one_line(e)}"})  # fmt: skip
        if not math.isfinite(value):
            return Score(value=math.inf, passed=False, metrics=metrics,
                         details={**details, "reason": "non-finite score"})  # fmt: skip
        return Score(value=value, passed=True, metrics=metrics, details=details)


def _mo_scorer() -> Callable[..., dict[str, Any]]:
    module, _, attr = MO_SCORER.partition(":")
    try:
        fn: Callable[..., dict[str, Any]] = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise RuntimeError(f"mo-offline scoring needs {module}.{attr} ({one_line(e)})") from None
    return fn


def _point(spec: str, kind: str, limits: tuple[float, ...], budget: int, name: str) -> ControlProblem:  # fmt: skip
    return ControlProblem(name=name, kind=kind, description="", env=spec, limits=limits, budget=budget)  # type: ignore[arg-type]  # fmt: skip


POINT = ("A point robot in the plane starts at (-2, 0) and is pushed by a bounded 2-D force; "
         "it is rewarded for closing the distance to the goal at (2, 0) (+1 on reaching it; "
         "episodes of 200 steps).")  # fmt: skip


def _tasks() -> list[RLTask]:
    mo = ("A fishing boat's logged trips (a fixed dataset from its skipper's usual policy; "
          "no new trips may be made): each trip brings home two catches, cod and herring.")  # fmt: skip
    return [
        RLTask(
            "point-two-hazards",
            "dev",
            f"{POINT} Two kinds of circular hazards lie on the way, red and blue. Drive it to "
            "the goal, but on average it must spend at most 2 steps per episode inside red "
            "hazards and at most 1 step inside blue ones.",
            _point(
                "point-hazards:groups=2,layout_seed=6",
                "cmdp",
                (2.0, 1.0),
                6000,
                "point-two-hazards",
            ),
            labels=("red hazards", "blue hazards"),
        ),  # fmt: skip
        RLTask(
            "point-one-hazard",
            "dev",
            f"{POINT} Circular hazards lie on the way. Drive it to the goal; on average it may "
            "spend at most 1 step per episode inside a hazard.",
            _point(
                "point-hazards:groups=1,layout_seed=3", "cmdp", (1.0,), 6000, "point-one-hazard"
            ),
            labels=("hazards",),
        ),  # fmt: skip
        RLTask(
            "point-never-touch",
            "dev",
            f"{POINT} Circular hazards lie on the way and the contact sensor is noisy "
            "(heavy-tailed noise on its reading). Drive it to the goal, but it must never "
            "touch a hazard in any step of an episode.",
            _point(
                "point-hazards:groups=1,cost_noise=0.5,layout_seed=6",
                "statewise",
                (0.0,),
                6000,
                "point-never-touch",
            ),
            labels=("hazard contact",),
        ),  # fmt: skip
        RLTask(
            "fishing-max-min",
            "dev",
            f"{mo} From this dataset, find the policy that maximizes the expected value of the "
            "worse of the two catches on a trip (the smaller of cod and herring brought home).",
            ControlProblem(
                name="fishing-max-min",
                kind="mo-offline",
                description="",
                env="resource:horizon=20,attack=0.3",
                objective="min",
                budget=2000,
            ),
            episodes=50,
            penalty=0.0,
        ),  # fmt: skip
        RLTask(
            "point-three-hazards-corridor",
            "test",
            f"{POINT} It must stay in a corridor (walls at |y| = 0.6) and three kinds of "
            "hazards lie on the way: red, blue and green. On average per episode it may spend "
            "at most 1 step in red hazards, at most 1 in blue ones, at most 2 in green ones "
            "and at most 0.5 touching the corridor walls.",
            _point(
                "point-hazards:groups=3,corridor=0.6,layout_seed=5",
                "cmdp",
                (1.0, 1.0, 2.0, 0.5),
                6000,
                "point-three-hazards-corridor",
            ),
            labels=("red hazards", "blue hazards", "green hazards", "corridor walls"),
        ),  # fmt: skip
        RLTask(
            "cheetah-speed-limit",
            "test",
            "Make the MuJoCo half-cheetah (HalfCheetah-v5, episodes of 1000 steps) run forward; "
            "a step faster than 1 m/s is over the speed limit, and it must never be over the "
            "speed limit in any step.",
            _point("HalfCheetah-v5+velocity:1.0", "statewise", (0.0,), 4000, "cheetah-speed-limit"),
            penalty=200.0,
            episodes=3,
            labels=("speed limit",),
        ),  # fmt: skip
        RLTask(
            "point-noisy-two-never",
            "test",
            f"{POINT} Red and blue hazards lie on the way and both contact sensors are noisy "
            "(heavy-tailed noise). It must never touch a red hazard nor a blue one in any step.",
            _point(
                "point-hazards:groups=2,cost_noise=0.5,layout_seed=3",
                "statewise",
                (0.0, 0.0),
                6000,
                "point-noisy-two-never",
            ),
            labels=("red hazards", "blue hazards"),
        ),  # fmt: skip
        RLTask(
            "fishing-weighted",
            "test",
            f"{mo} From this dataset, find the policy that maximizes the expected value of "
            "the catch, where cod is worth 0.7 and herring 0.3 per unit.",
            ControlProblem(
                name="fishing-weighted",
                kind="mo-offline",
                description="",
                env="resource:horizon=20,attack=0.3",
                objective="linear:0.7,0.3",
                budget=2000,
            ),
            episodes=50,
            penalty=0.0,
        ),  # fmt: skip
    ]


class RLBenchmark(SuiteHooks):
    """The ``rl`` suite (see the module doc)."""

    name = "rl"
    description = (
        "Control problems in words: pose the constrained or multi-objective problem and pick an "
        "RL method and its hyperparameters from the catalogue"
    )
    splits = ("dev", "test")

    def tasks(self, split: str = "dev") -> list[RLTask]:
        self.check_split(split)
        return [t for t in _tasks() if t.split == split]

    def notes(self, split: str, settings: Any = None) -> list[str]:
        return ["A plan poses the problem (kind, limits or objective, checked against the "
                "words' numbers) and names a catalogue RL method, trained for the task's budget "
                "from the run's seed and scored on held-out episodes of the true problem: "
                "-return + penalty x excess (online) or -objective (offline), lower is better; "
                "ppo-lag / linear-scalarization: the fixed default; tuned: every applicable "
                "method tuned by random search on validation episodes."]  # fmt: skip

    def suite_metrics(self, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Per method: the RL methods its plans named."""
        chosen: dict[str, dict[str, int]] = {}
        for r in rows:
            plan = (r.get("extra") or {}).get("plan") or {}
            if plan.get("method"):
                c = chosen.setdefault(str(r.get("method")), {})
                c[str(plan["method"])] = c.get(str(plan["method"]), 0) + 1
        return {"rl_methods": chosen} if chosen else None

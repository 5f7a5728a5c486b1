"""BBOWP: black-box optimization word problems (23 instances in four domains).

Each instance is a natural-language description of a black box (as a practitioner would
write it: what the system is, what its knobs are called, what "better" means, the
budget), an executable black box (``optiforge.solvers.blackbox.problems``), a
human-designed formulation (a ``SearchSpace`` over the knobs that matter, with sensible
ranges and scales, and an optimizer), and hidden truth (which knobs matter). Some
descriptions are deliberately less informative (``informative=False``: the knobs are
listed without units, hints or typical values), the paper's hard case.

A candidate is a formulation: ``{"space": SearchSpace, "method": one of PORTFOLIO}``,
optionally a ``kernel`` expression (``solvers.gp.grammar``; for ``gp`` and
``kernel_search``) and a ``pilot`` (the formulation a revision started from: see
``BBOWPTask.evaluate``). Only these keys (``FORMULATION_KEYS``) are read; anything else,
a ``seed`` above all, is ignored and listed in ``details["ignored"]``: the optimizer's
seed is the harness's (``evaluate(..., seed=)``, the run's seed, so an eval's seeds are
independent runs), never the formulation's, which could otherwise pick a lucky one.
``Task.evaluate`` runs that optimization for the instance's budget *inside the sandbox*
(the black box and the optimizer shipped as files: ``sandboxes.payload``) and scores the
best value found (lower is better). The fixed default formulation — every knob at its
full valid range, linear scales, GP-BO — is the paper's comparison point.

Eval reports add the formulation quality (``suite_metrics``): variable precision and
recall against the hidden important knobs, range overlap with the human formulation, the
optimizers chosen, and how often a method beats the human and the default formulation
of the same seed; with the hidden reference numbers (``reference.json``, written by
``benchmarks/bbowp_reference.py``) also the normalized regret against the long run's best
and the algorithm regret against the oracle optimizer.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optiforge.evals.protocol import Score, SuiteHooks

_RUNNER = r"""
import json, math, sys, warnings
warnings.filterwarnings("ignore")
from optiforge.solvers.blackbox import SearchSpace, optimize
from optiforge.solvers.blackbox.problems import BLACK_BOXES
req = json.load(open("request.json"))
box = BLACK_BOXES[req["black_box"]]
vals, configs, wall, stages = [], [], 0.0, []
for st in req["stages"]:
    res = optimize(box, SearchSpace.model_validate(st["space"]), st["budget"],
                   method=st["method"], seed=req["seed"], kernel=st.get("kernel"))
    vals += [v if math.isfinite(v) else None for v in res.values]
    configs += res.configs
    wall += res.wall_s
    stages.append(len(res.values))
print(json.dumps({"values": vals, "configs": configs, "wall_s": wall, "stages": stages},
                 default=str))
"""


FORMULATION_KEYS = frozenset({"space", "method", "kernel", "pilot"})
"""What a formulation may say (an allow-list); its other keys are ignored, never read."""
PILOT_KEYS = frozenset({"space", "method", "kernel", "evals"})
"""What a formulation's ``pilot`` may say."""


def _ignored(form: dict[str, Any]) -> list[str]:
    """The keys of ``form`` (and of its pilot) the harness does not read (sorted)."""
    out = sorted(str(k) for k in form if k not in FORMULATION_KEYS)
    pilot = form.get("pilot")
    if isinstance(pilot, dict):
        out += sorted(f"pilot.{k}" for k in pilot if k not in PILOT_KEYS)
    return out


@dataclass
class BBOWPTask:
    """One word problem."""

    name: str
    split: str
    domain: str
    black_box: str
    description: str
    budget: int
    human: dict[str, Any]
    """The human-designed formulation: ``{"space": ..., "method": ...}``."""
    hidden: dict[str, Any] = field(default_factory=dict)
    """What an agent must not be told: ``important`` knobs."""
    informative: bool = True
    suite: str = "bbowp"
    metric: str = "best_value"
    higher_is_better: bool = False
    timeout_s: float = 240.0
    seed: int = 0
    """The optimizer's seed when the caller gives none (a formulation never chooses it)."""
    seeded_by_harness: bool = True
    """The runner passes the run's seed to ``evaluate`` (the optimizer's seed is the harness's)."""

    def evaluate(
        self, candidate: Any, sandbox: Any | None = None, *, seed: int | None = None
    ) -> Score:
        """Run the formulated optimization in the sandbox; score its best value.

        ``seed``: the optimizer's seed, chosen by the harness (default ``self.seed``); a
        ``seed`` in the formulation is ignored (``details["ignored"]``). A formulation with a ``pilot`` (``{"space", "method", "evals"[, "kernel"]}``: the
        formulation a revision started from, and how many evaluations it ran) is re-run as
        two stages within the one budget: the pilot for ``evals``, then the revised
        formulation for the rest; the score is the best over both."""
        return self.run(candidate, sandbox, seed=seed)

    def pilot(
        self, formulation: Any, evals: int, sandbox: Any | None = None, *, seed: int | None = None
    ) -> Score:
        """A short run of ``formulation`` (``evals`` evaluations, at most half the budget),
        for a formulator that revises its space: the harness runs it in the sandbox like
        ``evaluate``; ``details["evaluations"]`` lists what it saw (config and value)."""
        evals = max(1, min(int(evals), self.budget // 2))
        return self.run(formulation, sandbox, budget=evals, observed=True, seed=seed)

    def run(
        self,
        candidate: Any,
        sandbox: Any | None = None,
        *,
        budget: int | None = None,
        observed: bool = False,
        seed: int | None = None,
    ) -> Score:
        """``evaluate`` with another ``budget`` (default the instance's); ``observed``: list
        every evaluation (config and value) in ``details["evaluations"]``; ``seed``: the
        harness's optimizer seed (default ``self.seed``)."""
        from optiforge.sandboxes import get_sandbox
        from optiforge.sandboxes.payload import package_files

        budget = self.budget if budget is None else int(budget)
        form = candidate if isinstance(candidate, dict) else json.loads(str(candidate))
        if not isinstance(form, dict):
            return Score(value=math.inf, passed=False,
                         details={"reason": f"a formulation is a JSON object, got {type(form).__name__}"})  # fmt: skip
        ignored = _ignored(form)
        stages, why = [], None
        pilot = form.get("pilot")
        if pilot:
            evals = int(pilot.get("evals", 0)) if isinstance(pilot, dict) else 0
            if not 1 <= evals <= budget // 2:
                why = f"pilot evals must be 1..{budget // 2}, got {evals}"
            else:
                stages.append(_stage(pilot, evals))
        stages.append(_stage(form, budget - sum(st.get("budget", 0) for st in stages)))
        why = why or next((st["error"] for st in stages if "error" in st), None)
        if why:
            return Score(value=math.inf, passed=False,
                         details={"reason": why[:500], "ignored": ignored})  # fmt: skip
        sandbox = sandbox or get_sandbox("local")
        files: dict[str, str | bytes] = {}
        files |= package_files("optiforge.errors", "optiforge.solvers.blackbox",
                              "optiforge.solvers.bo", "optiforge.solvers.gp",
                              "optiforge.solvers.asktell", "optiforge.solvers.bandits")  # fmt: skip
        files["request.json"] = json.dumps({"stages": stages, "black_box": self.black_box,
                                            "seed": int(self.seed if seed is None else seed)})  # fmt: skip
        files["run.py"] = _RUNNER
        python = str(getattr(sandbox, "python", None) or "python3")
        env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        res = sandbox.run(
            [python, "run.py"], files=files, timeout_s=self.timeout_s, memory_mb=4096, env=env
        )
        metrics = {"sandbox_s": float(res.duration_s)}
        if res.timed_out or res.returncode != 0:
            why = "timed out" if res.timed_out else f"exit {res.returncode}: {res.stderr[-400:]}"
            return Score(value=math.inf, passed=False, metrics=metrics,
                         details={"reason": why, "ignored": ignored})  # fmt: skip
        out = json.loads(res.stdout.strip().splitlines()[-1])
        vals = [math.inf if v is None else float(v) for v in out["values"]]
        finite = [v for v in vals if math.isfinite(v)]
        details: dict[str, Any] = {"stages": out.get("stages"), "ignored": ignored}
        if observed:
            details["evaluations"] = [
                {"config": c, "value": None if not math.isfinite(v) else v}
                for c, v in zip(out["configs"], vals, strict=False)
            ]
        if not finite:
            return Score(value=math.inf, passed=False, metrics=metrics,
                         details={**details, "reason": "no evaluation was feasible"})  # fmt: skip
        trace, best = [], math.inf
        for v in vals:
            best = min(best, v)
            trace.append(best if math.isfinite(best) else None)
        metrics["n_failed"] = float(len(vals) - len(finite))
        return Score(value=min(finite), passed=True, metrics=metrics,
                     details={**details, "trace": trace})  # fmt: skip

    @property
    def knobs(self) -> dict[str, dict[str, Any]]:
        """The system's knobs as its API states them: type, valid range or choices (public;
        which of them matter is not said)."""
        from optiforge.solvers.blackbox.problems import BLACK_BOXES

        return {
            name: {"kind": k.kind, "low": k.low, "high": k.high, "choices": list(k.choices)}
            for name, k in BLACK_BOXES[self.black_box].knobs.items()
        }

    def default_formulation(self) -> dict[str, Any]:
        """Every knob at its full valid range, linear scales, GP-BO (the paper's baseline)."""
        from optiforge.solvers.blackbox.problems import BLACK_BOXES

        variables: list[dict[str, Any]] = []
        for name, k in BLACK_BOXES[self.black_box].knobs.items():
            if k.kind == "categorical":
                variables.append({"kind": "categorical", "name": name, "choices": list(k.choices)})
            else:
                variables.append({"kind": k.kind, "name": name, "low": k.low, "high": k.high})
        return {"space": {"variables": variables}, "method": "gp"}


def _stage(form: dict[str, Any], budget: int) -> dict[str, Any]:
    """One optimization stage of a request (checked here: the space, the method, the
    kernel expression); ``{"error": why}`` when the formulation is invalid."""
    from optiforge.solvers.blackbox import PORTFOLIO, SearchSpace
    from optiforge.solvers.gp import grammar

    try:
        space = SearchSpace.model_validate(form.get("space"))
    except Exception as e:  # noqa: BLE001 - an invalid formulation is a failed candidate
        return {"error": f"invalid space: {e}"}
    method, kernel = str(form.get("method", "")), form.get("kernel")
    if method not in PORTFOLIO:
        return {"error": f"method {method!r} is not one of {', '.join(PORTFOLIO)}"}
    st: dict[str, Any] = {
        "space": space.model_dump(mode="json"),
        "method": method,
        "budget": budget,
    }
    if kernel is not None:
        if method not in ("gp", "kernel_search"):
            return {
                "error": f"a kernel expression needs method gp or kernel_search, not {method!r}"
            }
        try:
            st["kernel"] = grammar.canonical(str(kernel))
        except Exception as e:  # noqa: BLE001 - InvalidCandidate: the expression's fault
            return {"error": f"kernel: {e}"}
    return st


def _v(kind: str, name: str, *args: Any, log: bool = False, **kw: Any) -> dict[str, Any]:
    if kind == "cat":
        return {"kind": "categorical", "name": name, "choices": list(args), **kw}
    return {"kind": kind, "name": name, "low": args[0], "high": args[1], "log": log, **kw}


# name -> (domain, black box, split, budget, informative, description, human space, method, important)
_INSTANCES: list[tuple[str, str, str, str, int, bool, str, list[dict[str, Any]], str, list[str]]] = [
    ("svm-tumours", "ml", "svm_breast_cancer", "dev", 30, True,
     "We classify breast-tumour biopsies (30 numeric features, ~570 patients) as benign or malignant "
     "with a support vector classifier on standardized features. Knobs: C (regularization strength), "
     "gamma (kernel width), kernel (rbf, poly, sigmoid, linear), degree (poly only), coef0, shrinking "
     "(heuristic on/off), tol (stopping tolerance). Minimize the 3-fold cross-validated error rate. "
     "We can afford 30 training runs.",
     [_v("float", "C", 1e-2, 1e3, log=True), _v("float", "gamma", 1e-5, 1e-1, log=True)], "gp",
     ["C", "gamma"]),
    ("gbm-progression", "ml", "gbm_diabetes", "dev", 30, True,
     "A gradient-boosted regression model predicts disease progression one year ahead from 10 "
     "baseline measurements of ~440 diabetes patients. Knobs: n_estimators (trees, 10-400), "
     "learning_rate, max_depth, subsample (row fraction per tree), min_samples_leaf, max_features "
     "(1.0, sqrt or log2). Minimize the 3-fold cross-validated mean squared error (in thousands). "
     "Budget: 30 fits.",
     [_v("float", "learning_rate", 5e-3, 0.3, log=True), _v("int", "n_estimators", 20, 300),
      _v("int", "max_depth", 1, 5), _v("float", "subsample", 0.5, 1.0)], "tpe",
     ["learning_rate", "n_estimators", "max_depth"]),
    ("knn-digits", "ml", "knn_digits", "heldout", 20, False,
     "Handwritten-digit classifier, k nearest neighbours. Knobs: n_neighbors, weights, p, leaf_size, "
     "algorithm. Minimize cross-validated error; 20 runs.",
     [_v("int", "n_neighbors", 1, 15), _v("cat", "weights", "uniform", "distance"), _v("int", "p", 1, 2)],
     "tpe", ["n_neighbors", "weights", "p"]),
    ("logreg-wine", "ml", "logreg_wine", "dev", 20, False,
     "Wine cultivar classifier (logistic regression). Knobs: C, tol, max_iter, fit_intercept, "
     "standardize. Minimize cross-validated error; 20 runs.",
     [_v("cat", "standardize", True, False), _v("float", "C", 1e-3, 1e2, log=True),
      _v("int", "max_iter", 200, 2000)], "tpe", ["standardize", "C"]),
    ("pressure-vessel", "engineering", "pressure_vessel", "dev", 40, True,
     "Design a cylindrical pressure vessel with hemispherical heads holding at least 1,296,000 cubic "
     "inches, length at most 240 in. Shell and head plates come in 1/16-inch steps (shell_plates and "
     "head_plates count those steps; the ASME code needs thickness >= 0.0193 x radius for the shell "
     "and >= 0.00954 x radius for the heads). Knobs: shell_plates, head_plates, radius (in), length "
     "(in). Minimize material, forming and welding cost; infeasible designs are heavily penalized. "
     "40 cost evaluations.",
     [_v("int", "shell_plates", 10, 25), _v("int", "head_plates", 5, 15), _v("float", "radius", 40.0, 60.0),
      _v("float", "length", 150.0, 240.0)], "tpe", ["shell_plates", "head_plates", "radius", "length"]),
    ("welded-beam", "engineering", "welded_beam", "dev", 40, True,
     "A cantilever bar (14 in, 6000 lb tip load) is welded to a support. Knobs: weld_thickness and "
     "weld_length (in), bar_height and bar_thickness (in). Minimize fabrication cost subject to shear "
     "stress <= 13,600 psi, bending stress <= 30,000 psi, tip deflection <= 0.25 in, buckling load >= "
     "6000 lb and weld no thicker than the bar. Typical welds are a fraction of an inch. 40 evaluations.",
     [_v("float", "weld_thickness", 0.1, 0.6), _v("float", "weld_length", 2.0, 8.0),
      _v("float", "bar_height", 6.0, 10.0), _v("float", "bar_thickness", 0.15, 0.5)], "gp",
     ["weld_thickness", "weld_length", "bar_height", "bar_thickness"]),
    ("spring", "engineering", "spring", "heldout", 40, False,
     "Tension/compression spring. Knobs: wire_diameter, coil_diameter, active_coils. Minimize weight "
     "under deflection, shear, surge-frequency and outer-diameter limits. 40 evaluations.",
     [_v("float", "wire_diameter", 0.05, 0.2), _v("float", "coil_diameter", 0.25, 1.3),
      _v("float", "active_coils", 2.0, 15.0)], "gp", ["wire_diameter", "coil_diameter", "active_coils"]),
    ("speed-reducer", "engineering", "speed_reducer", "dev", 40, True,
     "Gearbox (speed reducer) design: face_width (cm), module (cm), pinion_teeth (integer), shaft1_length, "
     "shaft2_length, shaft1_diameter, shaft2_diameter (cm). Minimize its weight under bending, surface "
     "stress, shaft deflection and shaft stress limits. 40 evaluations.",
     [_v("float", "face_width", 2.6, 3.6), _v("float", "module", 0.7, 0.8), _v("int", "pinion_teeth", 17, 20),
      _v("float", "shaft1_length", 7.3, 8.3), _v("float", "shaft2_length", 7.3, 8.3),
      _v("float", "shaft1_diameter", 2.9, 3.9), _v("float", "shaft2_diameter", 5.0, 5.5)], "gp",
     ["face_width", "pinion_teeth", "shaft1_diameter", "shaft2_diameter"]),
    ("predator-prey", "science", "lotka_volterra_fit", "dev", 40, True,
     "Calibrate a predator-prey (Lotka-Volterra) model to 31 yearly counts of hares and lynx (initial "
     "populations known). Knobs: prey_growth, predation, predator_gain, predator_death (rates per year, "
     "each somewhere between 0.001 and 10; rates like these usually span orders of magnitude) and "
     "solver_rtol. Minimize log10 of the mean squared error between model and counts. 40 simulations.",
     [_v("float", "prey_growth", 0.1, 5.0, log=True), _v("float", "predation", 0.01, 2.0, log=True),
      _v("float", "predator_gain", 0.01, 2.0, log=True), _v("float", "predator_death", 0.1, 5.0, log=True)],
     "tpe", ["prey_growth", "predation", "predator_gain", "predator_death"]),
    ("reaction", "science", "reaction_yield", "dev", 30, True,
     "A batch reactor turns A into the product B, which degrades to C if cooked too long or too hot. "
     "Knobs: temperature_c (20-200), time_min (1-1440), concentration (mol/L), catalyst (none, pd, pt, "
     "ni), ph, stirring_rpm. Maximize the yield of B (we minimize negative yield). 30 experiments.",
     [_v("float", "temperature_c", 40.0, 160.0), _v("float", "time_min", 1.0, 600.0, log=True),
      _v("cat", "catalyst", "none", "pd", "pt", "ni"), _v("float", "ph", 4.0, 9.0),
      _v("float", "concentration", 0.1, 2.0)], "tpe", ["temperature_c", "time_min", "catalyst", "ph"]),
    ("epidemic", "science", "sir_fit", "heldout", 30, False,
     "Fit an SIR epidemic model to 30 observed prevalence points. Knobs: transmission_rate, "
     "recovery_rate, initial_infected. Minimize log10 mean squared error. 30 simulations.",
     [_v("float", "transmission_rate", 0.05, 2.0, log=True), _v("float", "recovery_rate", 0.01, 1.0, log=True),
      _v("float", "initial_infected", 1e-6, 1e-2, log=True)], "gp",
     ["transmission_rate", "recovery_rate", "initial_infected"]),
    ("matmul-tiling", "mixed", "matmul_tiling", "dev", 30, True,
     "Tune a 2048^3 fp32 matrix-multiply kernel on a 132-SM GPU (modelled runtime, ms). Knobs: tile_m, "
     "tile_n (16-256), tile_k (8-128), stages (pipeline depth 1-6), unroll (1-16), vector_width (none, "
     "x2, x4, x8), layout (row, col, blocked), threads_hint (a scheduler hint, 32-1024). Minimize "
     "runtime. 30 measurements.",
     [_v("cat", "tile_m", 64, 128, 256), _v("cat", "tile_n", 64, 128, 256), _v("cat", "tile_k", 16, 32, 64),
      _v("int", "stages", 1, 4), _v("cat", "unroll", 2, 4, 8), _v("cat", "vector_width", "x4", "x8"),
      _v("cat", "layout", "row", "blocked")], "tpe",
     ["tile_m", "tile_n", "tile_k", "stages", "vector_width", "layout"]),
    ("cache-service", "mixed", "cache_policy", "dev", 25, False,
     "A caching service. Knobs: cache_mb, policy, ttl_s, shards, compression, log_level_debug. "
     "Minimize p99 latency (ms). 25 load tests.",
     [_v("float", "cache_mb", 512.0, 16384.0, log=True), _v("cat", "policy", "lru", "lfu", "arc"),
      _v("float", "ttl_s", 300.0, 86400.0, log=True), _v("int", "shards", 4, 32)], "tpe",
     ["cache_mb", "policy", "ttl_s", "shards"]),
    ("elasticnet-progression", "ml", "elasticnet_diabetes", "dev", 25, True,
     "A linear model with elastic-net regularization predicts diabetes progression from 10 baseline "
     "measurements. Knobs: alpha (overall penalty strength; useful values range over several orders of "
     "magnitude), l1_ratio (0 = ridge, 1 = lasso), fit_intercept, max_iter, tol, selection (cyclic or "
     "random coordinate order). Minimize 3-fold cross-validated MSE (in thousands). 25 fits.",
     [_v("float", "alpha", 1e-4, 1.0, log=True), _v("float", "l1_ratio", 0.0, 1.0)], "gp",
     ["alpha", "l1_ratio"]),
    ("forest-wine", "ml", "forest_wine", "heldout", 20, True,
     "A random forest classifies wines into three cultivars from 13 chemical measurements (178 "
     "samples). Knobs: n_estimators (10-200 trees; more is slower), max_depth, min_samples_leaf, "
     "max_features (sqrt, log2, all), criterion (gini, entropy), bootstrap. Minimize 3-fold "
     "cross-validated error. 20 fits.",
     [_v("int", "max_depth", 2, 12), _v("int", "min_samples_leaf", 1, 8),
      _v("cat", "max_features", "sqrt", "log2"), _v("int", "n_estimators", 50, 200)], "tpe",
     ["max_depth", "min_samples_leaf", "max_features"]),
    ("tree-tumours", "ml", "tree_breast_cancer", "dev", 30, False,
     "Decision tree for tumour biopsies. Knobs: max_depth, min_samples_leaf, criterion, splitter, "
     "ccp_alpha. Minimize cross-validated error; 30 fits.",
     [_v("int", "max_depth", 2, 10), _v("int", "min_samples_leaf", 1, 20),
      _v("float", "ccp_alpha", 0.0, 0.02), _v("cat", "criterion", "gini", "entropy")], "tpe",
     ["max_depth", "min_samples_leaf", "ccp_alpha"]),
    ("three-bar-truss", "engineering", "three_bar_truss", "dev", 30, True,
     "A symmetric three-bar truss carries a 2 kN/cm2 load. Knobs: area_outer (cross-section of the two "
     "outer bars) and area_middle (the middle bar), each between 0.001 and 1 cm2. Minimize the truss "
     "volume subject to the stress in every bar staying at or below 2 kN/cm2. 30 evaluations.",
     [_v("float", "area_outer", 0.5, 1.0), _v("float", "area_middle", 0.05, 0.8)], "gp",
     ["area_outer", "area_middle"]),
    ("cantilever", "engineering", "cantilever", "dev", 40, True,
     "A cantilever beam is made of five hollow square sections of equal wall thickness; knobs "
     "section_1 ... section_5 are the sections' heights (0.01-100). Minimize the beam's weight subject "
     "to a tip-deflection limit (stiffer sections near the support carry more). 40 evaluations.",
     [_v("float", f"section_{i}", 3.0, 8.0) for i in range(1, 6)], "gp",
     [f"section_{i}" for i in range(1, 6)]),
    ("gear-train", "mixed", "gear_train", "heldout", 40, False,
     "Gear train with four gears. Knobs: teeth_a, teeth_b, teeth_d, teeth_f (integers). Minimize log10 "
     "of the squared error to the target ratio. 40 evaluations.",
     [_v("int", "teeth_a", 12, 60), _v("int", "teeth_b", 12, 60), _v("int", "teeth_d", 12, 60),
      _v("int", "teeth_f", 12, 60)], "tpe", ["teeth_a", "teeth_b", "teeth_d", "teeth_f"]),
    ("enzyme-kinetics", "science", "enzyme_fit", "dev", 30, True,
     "Fit a Michaelis-Menten model with a competitive inhibitor to reaction rates measured at eight "
     "substrate concentrations, with and without inhibitor. Knobs: vmax (maximum rate), km (Michaelis "
     "constant), ki (inhibition constant) -- biochemical constants like these span orders of "
     "magnitude -- and temperature_offset (a correction in degrees). Minimize log10 MSE. 30 fits.",
     [_v("float", "vmax", 1.0, 100.0, log=True), _v("float", "km", 0.1, 50.0, log=True),
      _v("float", "ki", 0.1, 50.0, log=True)], "gp", ["vmax", "km", "ki"]),
    ("oscillator", "science", "oscillator_fit", "heldout", 25, True,
     "Calibrate a damped spring-mass model to a recorded free-decay trace (10 s, 101 samples). Knobs: "
     "mass (kg, 0.5-2), damping (N s/m), stiffness (N/m). Minimize log10 MSE between model and trace. "
     "25 simulations.",
     [_v("float", "damping", 0.01, 3.0, log=True), _v("float", "stiffness", 0.5, 20.0, log=True),
      _v("float", "mass", 0.5, 2.0)], "gp", ["damping", "stiffness"]),
    ("database", "mixed", "db_config", "dev", 25, True,
     "Tune a database server for an OLTP benchmark on a 64 GB, 32-core machine. Knobs: buffer_pool_mb, "
     "worker_threads, max_connections, wal_sync (fsync, fdatasync, group_commit, off -- off is not "
     "allowed in production but the benchmark will accept it), checkpoint_s, log_verbose (0/1). "
     "Maximize throughput (we minimize its negative). 25 benchmark runs.",
     [_v("float", "buffer_pool_mb", 4096.0, 49152.0, log=True), _v("int", "worker_threads", 16, 64),
      _v("cat", "wal_sync", "fdatasync", "group_commit"), _v("int", "max_connections", 200, 1000)], "gp",
     ["buffer_pool_mb", "worker_threads", "wal_sync"]),
    ("training-schedule", "mixed", "training_schedule", "heldout", 25, False,
     "Training run of a fixed network. Knobs: learning_rate, batch_size, schedule, warmup_steps, "
     "weight_decay, data_seed. Minimize validation loss. 25 runs.",
     [_v("float", "learning_rate", 1e-4, 3e-2, log=True), _v("cat", "batch_size", 64, 128, 256, 512),
      _v("cat", "schedule", "cosine", "linear"), _v("int", "warmup_steps", 100, 2000)], "tpe",
     ["learning_rate", "batch_size", "schedule"]),
]  # fmt: skip


def _tasks() -> list[BBOWPTask]:
    out = []
    for name, domain, box, split, budget, informative, desc, space, method, important in _INSTANCES:
        out.append(BBOWPTask(name=name, split=split, domain=domain, black_box=box, description=desc,
                             budget=budget, human={"space": {"variables": space}, "method": method},
                             hidden={"important": important}, informative=informative))  # fmt: skip
    return out


class BBOWPBenchmark(SuiteHooks):
    """The ``bbowp`` suite (see the module doc)."""

    name = "bbowp"
    description = "Black-box optimization word problems: formulate a search space and an optimizer, then run it"
    splits = ("dev", "heldout")

    def tasks(self, split: str = "dev") -> list[BBOWPTask]:
        self.check_split(split)
        return [t for t in _tasks() if t.split == split]

    def suite_metrics(self, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Per method: search-space quality against the hidden important knobs (precision,
        recall, range overlap with the human formulation), the optimizers chosen, and the
        result against the human and the default formulation of the same seed."""
        by_task = {t.name: t for t in _tasks()}
        per: dict[str, dict[str, list[tuple[Any, float]]]] = {}  # method -> metric -> (seed, v)
        chosen: dict[str, dict[str, int]] = {}
        # the references of each (task, seed): the human formulation, and the fixed default
        # (the ``default`` baseline, or the offline agent, which writes the same)
        refs: dict[tuple[Any, Any], dict[str, float | None]] = {}
        for r in rows:
            by = (r.get("extra") or {}).get("by")
            kind = "human" if r.get("method") == "human" else (
                "default" if r.get("method") == "default" or by == "default" else None)  # fmt: skip
            if kind:
                refs.setdefault((r.get("task"), r.get("seed")), {})[kind] = r.get("best_score")
        for r in rows:
            task, form = by_task.get(str(r.get("task"))), (r.get("extra") or {}).get("formulation")
            if task is None or not form:
                continue
            method = str(r.get("method"))
            m = per.setdefault(method, {})
            seed = r.get("seed")
            for k, v in space_quality(form, task).items():
                if v is not None:
                    m.setdefault(k, []).append((seed, v))
            ch = chosen.setdefault(method, {})
            ch[str(form.get("method"))] = ch.get(str(form.get("method")), 0) + 1
            for k, v in regrets(
                r.get("best_score"),
                form,
                task.name,
                refs.get((r.get("task"), r.get("seed")), {}).get("default"),
            ).items():
                if v is not None:
                    m.setdefault(k, []).append((seed, v))
            mine, ref = r.get("best_score"), refs.get((r.get("task"), r.get("seed")), {})
            for kind in ("human", "default"):
                other = ref.get(kind)
                is_ref = method == kind or (r.get("extra") or {}).get("by") == kind
                if other is not None and not is_ref:
                    m.setdefault(f"beats_{kind}", []).append(
                        (seed, float(mine is not None and mine < other))
                    )
        if not per:
            return None
        return {
            method: {**{k: _seed_mean(v)[0] for k, v in m.items()},
                     **{f"{k}_ci95": _seed_mean(v)[1] for k, v in m.items()},
                     "n": len(next(iter(m.values()), [])), "optimizers": chosen.get(method, {})}
            for method, m in sorted(per.items())
        }  # fmt: skip

    def report_sections(self, summary: dict[str, Any]) -> list[str]:
        sm = summary.get("suite_metrics") or {}
        if not sm:
            return []
        lines = ["## Formulation quality", "",
                 "Against the hidden important knobs and the human formulation: means over runs, "
                 "± the 95% t-interval over seeds (of each seed's mean over tasks).", "",
                 "| method | variable precision | variable recall | range overlap (IoU) | beats default | beats human | normalized regret | oracle optimizer chosen | algorithm regret | optimizers |",
                 "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip

        for method, m in sm.items():
            opts = ", ".join(f"{k} x{v}" for k, v in m.get("optimizers", {}).items())

            def cell(k: str, pct: bool = True, m: dict[str, Any] = m) -> str:
                v, ci = m.get(k), m.get(f"{k}_ci95")
                if v is None:
                    return "-"
                f = (lambda x: f"{100 * x:.0f}%") if pct else (lambda x: f"{x:.2f}")
                return f(v) + ("" if ci is None else f" ± {f(ci)}")

            lines.append(f"| {method} | {cell('precision')} | {cell('recall')} | {cell('range_iou')} | "
                         f"{cell('beats_default')} | {cell('beats_human')} | "
                         f"{cell('normalized_regret', False)} | {cell('oracle_choice')} | "
                         f"{cell('algorithm_regret', False)} | {opts} |")  # fmt: skip
        return ["\n".join(lines)]


def _seed_mean(values: list[tuple[Any, float]]) -> tuple[float | None, float | None]:
    """Mean over runs, and the 95% t-interval half-width over the seeds' means (None for one
    seed)."""
    from optiforge.evals.stats import mean_ci95

    if not values:
        return None, None
    by_seed: dict[Any, list[float]] = {}
    for seed, v in values:
        by_seed.setdefault(seed, []).append(v)
    _, half = mean_ci95([sum(v) / len(v) for v in by_seed.values()])
    return sum(v for _, v in values) / len(values), half


def reference() -> dict[str, Any]:
    """The hidden reference numbers (``benchmarks/bbowp_reference.py``): per instance the
    best value of a long run, and the oracle optimizer with every optimizer's mean result
    on the human formulation. Empty until that script has run."""
    path = Path(__file__).with_name("reference.json")
    return json.loads(path.read_text()) if path.is_file() else {}


def regrets(
    value: float | None, form: dict[str, Any], task: str, default: float | None
) -> dict[str, float | None]:
    """``normalized_regret``: ``(value - reference best) / (default's value - reference best)``
    (0: as good as the long run, 1: no better than the fixed default); ``algorithm_regret``:
    how far the chosen optimizer's mean on the human space is from the oracle's, as a share
    of the spread between the best and worst optimizer (0: the oracle's choice)."""
    ref = reference().get(task)
    if not ref:
        return {}
    out: dict[str, float | None] = {"oracle_choice": float(form.get("method") == ref["oracle"])}
    means = ref["method_means"]
    chosen = means.get(str(form.get("method")))
    spread = max(means.values()) - min(means.values())
    out["algorithm_regret"] = (
        (chosen - means[ref["oracle"]]) / spread if chosen is not None and spread > 0 else None
    )
    best = ref["best_value"]
    if value is not None and default is not None and default > best:
        out["normalized_regret"] = (value - best) / (default - best)
    return out


def space_quality(form: dict[str, Any], task: BBOWPTask) -> dict[str, float | None]:
    """Precision and recall of the formulation's variables against the hidden important
    knobs, and the mean overlap (intersection over union, log scale where the human's is)
    of its numeric ranges with the human formulation's on the important knobs."""
    names = {v.get("name") for v in (form.get("space") or {}).get("variables", [])}
    important = set(task.hidden.get("important", []))
    hit = names & important
    human = {v["name"]: v for v in task.human["space"]["variables"]}
    mine = {v.get("name"): v for v in (form.get("space") or {}).get("variables", [])}
    ious = []
    for k in important:
        h, m = human.get(k), mine.get(k)
        if h is None or "low" not in h:
            continue
        if m is None or m.get("low") is None:
            ious.append(0.0)
            continue
        f = (lambda x: math.log(max(float(x), 1e-300))) if h.get("log") else float
        lo, hi = max(f(h["low"]), f(m["low"])), min(f(h["high"]), f(m["high"]))
        union = max(f(h["high"]), f(m["high"])) - min(f(h["low"]), f(m["low"]))
        ious.append(max(0.0, hi - lo) / union if union > 0 else 1.0)
    return {
        "precision": len(hit) / len(names) if names else None,
        "recall": len(hit) / len(important) if important else None,
        "range_iou": sum(ious) / len(ious) if ious else None,
    }

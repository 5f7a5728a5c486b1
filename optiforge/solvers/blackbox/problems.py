"""Black boxes of the BBOWP suite: executable objectives with the knobs a practitioner
would have, to be minimized.

Each black box takes a configuration (a dict; a missing knob takes its default) and
returns one float, lower is better; an invalid configuration (outside a knob's valid
range, or an engineering design that breaks a constraint) is ``nan`` or a penalized
value, as a real system would fail or be infeasible. Nothing here says which knobs
matter or where the optimum is: that is hidden truth kept by the suite
(``evals/suites/bbowp``), never shipped into a sandbox. Each call takes well under a
second on one core.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Scalar = str | int | float | bool


@dataclass(frozen=True)
class Knob:
    """One input of a black box: its type, the range it accepts, its default."""

    kind: str  # "float" | "int" | "categorical"
    default: Scalar
    low: float | None = None
    high: float | None = None
    choices: tuple[Scalar, ...] = ()

    def valid(self, v: Any) -> bool:
        if self.kind == "categorical":
            return v in self.choices
        try:
            x = float(v)
        except (TypeError, ValueError):
            return False
        if self.kind == "int" and x != int(x):
            return False
        return math.isfinite(x) and self.low <= x <= self.high  # type: ignore[operator]


@dataclass(frozen=True)
class BlackBox:
    name: str
    knobs: dict[str, Knob]
    fn: Callable[[dict[str, Any]], float]
    info: dict[str, Any] = field(default_factory=dict)

    def __call__(self, config: dict[str, Any]) -> float:
        unknown = sorted(set(config) - set(self.knobs))
        if unknown:
            return math.nan  # a knob the system does not have
        full = {k: config.get(k, kb.default) for k, kb in self.knobs.items()}
        if not all(self.knobs[k].valid(v) for k, v in full.items()):
            return math.nan
        return float(self.fn(full))


def F(default: float, low: float, high: float) -> Knob:
    return Knob("float", default, low, high)


def I(default: int, low: int, high: int) -> Knob:  # noqa: E743 - a knob constructor
    return Knob("int", default, low, high)


def C(default: Scalar, *choices: Scalar) -> Knob:
    return Knob("categorical", default, choices=tuple(choices))


# ----------------------------------------------------------------------------- ML (sklearn)


def _cv(model: Any, data: str, scoring: str = "accuracy", folds: int = 3) -> float:
    from sklearn import datasets
    from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score

    X, y = getattr(datasets, f"load_{data}")(return_X_y=True)
    split = (StratifiedKFold if scoring == "accuracy" else KFold)(
        folds, shuffle=True, random_state=0
    )
    return float(np.mean(cross_val_score(model, X, y, cv=split, scoring=scoring)))


def svm_breast_cancer(c: dict[str, Any]) -> float:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    m = SVC(C=c["C"], gamma=c["gamma"], kernel=c["kernel"], degree=c["degree"], coef0=c["coef0"],
            shrinking=c["shrinking"], tol=c["tol"], max_iter=20000)  # fmt: skip
    return 1.0 - _cv(make_pipeline(StandardScaler(), m), "breast_cancer")


def gbm_diabetes(c: dict[str, Any]) -> float:
    from sklearn.ensemble import GradientBoostingRegressor

    m = GradientBoostingRegressor(
        n_estimators=c["n_estimators"], learning_rate=c["learning_rate"], max_depth=c["max_depth"],
        subsample=c["subsample"], min_samples_leaf=c["min_samples_leaf"],
        max_features=c["max_features"], random_state=0)  # fmt: skip
    return -_cv(m, "diabetes", "neg_mean_squared_error") / 1000.0


def knn_digits(c: dict[str, Any]) -> float:
    from sklearn.neighbors import KNeighborsClassifier

    m = KNeighborsClassifier(n_neighbors=c["n_neighbors"], weights=c["weights"], p=c["p"],
                             leaf_size=c["leaf_size"], algorithm=c["algorithm"])  # fmt: skip
    return 1.0 - _cv(m, "digits")


def logreg_wine(c: dict[str, Any]) -> float:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    steps = [StandardScaler()] if c["standardize"] else []
    m = LogisticRegression(
        C=c["C"], tol=c["tol"], max_iter=c["max_iter"], fit_intercept=c["fit_intercept"]
    )
    return 1.0 - _cv(make_pipeline(*steps, m), "wine")


# ----------------------------------------------------------------------------- engineering


def _penalized(cost: float, violations: list[float]) -> float:
    """``cost`` plus a steep penalty for each violated constraint ``g <= 0``."""
    excess = sum(max(0.0, g) for g in violations)
    return cost + 1e6 * excess if excess > 0 else cost


def pressure_vessel(c: dict[str, Any]) -> float:
    ts, th = 0.0625 * c["shell_plates"], 0.0625 * c["head_plates"]
    r, length = c["radius"], c["length"]
    cost = (0.6224 * ts * r * length + 1.7781 * th * r**2 + 3.1661 * ts**2 * length
            + 19.84 * ts**2 * r)  # fmt: skip
    g = [-ts + 0.0193 * r, -th + 0.00954 * r,
         -math.pi * r**2 * length - 4 / 3 * math.pi * r**3 + 1_296_000, length - 240]  # fmt: skip
    return _penalized(cost, g)


def welded_beam(c: dict[str, Any]) -> float:
    h, wl, t, b = c["weld_thickness"], c["weld_length"], c["bar_height"], c["bar_thickness"]
    p, L, E, G = 6000.0, 14.0, 30e6, 12e6
    tau_p = p / (math.sqrt(2) * h * wl)
    m = p * (L + wl / 2)
    r = math.sqrt(wl**2 / 4 + ((h + t) / 2) ** 2)
    j = 2 * (math.sqrt(2) * h * wl * (wl**2 / 12 + ((h + t) / 2) ** 2))
    tau_pp = m * r / j
    tau = math.sqrt(tau_p**2 + 2 * tau_p * tau_pp * wl / (2 * r) + tau_pp**2)
    sigma = 6 * p * L / (b * t**2)
    delta = 4 * p * L**3 / (E * t**3 * b)
    pc = 4.013 * E * math.sqrt(t**2 * b**6 / 36) / L**2 * (1 - t / (2 * L) * math.sqrt(E / (4 * G)))
    cost = 1.10471 * h**2 * wl + 0.04811 * t * b * (14.0 + wl)
    g = [tau - 13600, sigma - 30000, h - b, 0.10471 * h**2 + 0.04811 * t * b * (14 + wl) - 5,
         0.125 - h, delta - 0.25, p - pc]  # fmt: skip
    return _penalized(cost, [x / 1000 for x in g[:2]] + g[2:6] + [g[6] / 1000])


def spring(c: dict[str, Any]) -> float:
    d, D, n = c["wire_diameter"], c["coil_diameter"], c["active_coils"]
    cost = (n + 2) * D * d**2
    g = [1 - D**3 * n / (71785 * d**4),
         (4 * D**2 - d * D) / (12566 * (D * d**3 - d**4)) + 1 / (5108 * d**2) - 1,
         1 - 140.45 * d / (D**2 * n), (D + d) / 1.5 - 1]  # fmt: skip
    return _penalized(cost, g)


def speed_reducer(c: dict[str, Any]) -> float:
    x1, x2, x3 = c["face_width"], c["module"], c["pinion_teeth"]
    x4, x5, x6, x7 = (
        c["shaft1_length"],
        c["shaft2_length"],
        c["shaft1_diameter"],
        c["shaft2_diameter"],
    )
    cost = (0.7854 * x1 * x2**2 * (3.3333 * x3**2 + 14.9334 * x3 - 43.0934)
            - 1.508 * x1 * (x6**2 + x7**2) + 7.4777 * (x6**3 + x7**3) + 0.7854 * (x4 * x6**2 + x5 * x7**2))  # fmt: skip
    g = [27 / (x1 * x2**2 * x3) - 1, 397.5 / (x1 * x2**2 * x3**2) - 1,
         1.93 * x4**3 / (x2 * x3 * x6**4) - 1, 1.93 * x5**3 / (x2 * x3 * x7**4) - 1,
         math.sqrt((745 * x4 / (x2 * x3)) ** 2 + 16.9e6) / (110 * x6**3) - 1,
         math.sqrt((745 * x5 / (x2 * x3)) ** 2 + 157.5e6) / (85 * x7**3) - 1,
         x2 * x3 / 40 - 1, 5 * x2 / x1 - 1, x1 / (12 * x2) - 1,
         (1.5 * x6 + 1.9) / x4 - 1, (1.1 * x7 + 1.9) / x5 - 1]  # fmt: skip
    return _penalized(cost, g)


# ----------------------------------------------------------------------------- science


def _lv_observed() -> tuple[np.ndarray, np.ndarray]:
    t = np.linspace(0, 15, 31)
    return t, _lotka(1.1, 0.4, 0.1, 0.4, 10.0, 5.0, t)


def _lotka(
    a: float, b: float, d: float, g: float, x0: float, y0: float, t: np.ndarray
) -> np.ndarray:
    from scipy.integrate import solve_ivp

    sol = solve_ivp(lambda _, z: [a * z[0] - b * z[0] * z[1], d * z[0] * z[1] - g * z[1]],
                    (t[0], t[-1]), [x0, y0], t_eval=t, rtol=1e-6, atol=1e-8)  # fmt: skip
    if not sol.success or sol.y.shape[1] != t.size:
        return np.full((2, t.size), np.nan)
    return sol.y


def lotka_volterra_fit(c: dict[str, Any]) -> float:
    t, obs = _lv_observed()
    pred = _lotka(
        c["prey_growth"], c["predation"], c["predator_gain"], c["predator_death"], 10.0, 5.0, t
    )  # the initial populations were counted; solver_rtol changes little
    if not np.all(np.isfinite(pred)):
        return math.nan
    return float(np.log10(np.mean((pred - obs) ** 2) + 1e-12))


def reaction_yield(c: dict[str, Any]) -> float:
    """Negative yield (%) of a two-step reaction A -> B -> C (B wanted), Arrhenius kinetics."""
    T = c["temperature_c"] + 273.15
    cat = {"none": 1.0, "pd": 3.0, "pt": 2.2, "ni": 1.5}[c["catalyst"]]
    k1 = cat * 2e7 * math.exp(-60000 / (8.314 * T)) * (c["concentration"] / 0.5) ** 0.5
    k2 = 5e9 * math.exp(-80000 / (8.314 * T))
    ph_factor = math.exp(-((c["ph"] - 6.5) ** 2) / 2.0)
    t = c["time_min"]
    b = (
        k1 / (k2 - k1) * (math.exp(-k1 * t) - math.exp(-k2 * t))
        if abs(k2 - k1) > 1e-12
        else k1 * t * math.exp(-k1 * t)
    )
    return -100.0 * b * ph_factor


def sir_fit(c: dict[str, Any]) -> float:
    from scipy.integrate import solve_ivp

    t = np.arange(0, 60, 2.0)

    def run(beta: float, gamma: float, i0: float) -> np.ndarray:
        f = lambda _, z: [-beta * z[0] * z[1], beta * z[0] * z[1] - gamma * z[1]]  # noqa: E731
        s = solve_ivp(f, (0, t[-1]), [1 - i0, i0], t_eval=t, rtol=1e-6, atol=1e-9)
        return s.y[1] if s.success and s.y.shape[1] == t.size else np.full(t.size, np.nan)

    obs = run(0.35, 0.1, 1e-4)
    pred = run(c["transmission_rate"], c["recovery_rate"], c["initial_infected"])
    if not np.all(np.isfinite(pred)):
        return math.nan
    return float(np.log10(np.mean((pred - obs) ** 2) + 1e-14))


# ----------------------------------------------------------------------------- mixed


def matmul_tiling(c: dict[str, Any]) -> float:
    """Modelled runtime (ms) of a tiled matmul kernel: tiles, unroll, vectorize, layout."""
    m = n = k = 2048
    bm, bn, bk = c["tile_m"], c["tile_n"], c["tile_k"]
    regs = bm * bn / 64 + bk / 4
    spill = 1.0 + max(0.0, regs - 255) / 64
    occupancy = min(1.0, 65536 / max(1.0, (bm * bk + bk * bn) * 4 * c["stages"]))
    reuse = 2 * bm * bn / (bm + bn)
    vec = {"none": 1.0, "x2": 1.6, "x4": 2.3, "x8": 2.4}[c["vector_width"]]
    layout = {"row": 1.0, "col": 0.85, "blocked": 1.25}[c["layout"]]
    unroll = 1.0 + 0.15 * math.log2(c["unroll"]) - 0.04 * math.log2(c["unroll"]) ** 2
    throughput = reuse * vec * layout * unroll * (0.3 + 0.7 * occupancy) / spill
    waves = math.ceil((m / bm) * (n / bn) / 132)
    return float(
        2 * m * n * k / (throughput * 1e9) * (1 + 0.02 * waves) + 0.01 * c["threads_hint"] / 1024
    )


def cache_policy(c: dict[str, Any]) -> float:
    """Modelled p99 latency (ms) of a caching service under a fixed workload."""
    size_mb = c["cache_mb"]
    hit = 1 - math.exp(
        -size_mb / {"lru": 900.0, "lfu": 700.0, "fifo": 1300.0, "arc": 600.0}[c["policy"]]
    )
    ttl_loss = math.exp(-c["ttl_s"] / 120.0)
    hit *= 1 - 0.5 * ttl_loss
    shard_over = 0.05 * c["shards"] + 4.0 / c["shards"]
    gc = 0.002 * size_mb if c["compression"] == "none" else 0.0008 * size_mb + 1.5
    return float(2.0 + 40.0 * (1 - hit) + shard_over + gc + 0.3 * c["log_level_debug"])


def elasticnet_diabetes(c: dict[str, Any]) -> float:
    from sklearn.linear_model import ElasticNet

    m = ElasticNet(alpha=c["alpha"], l1_ratio=c["l1_ratio"], fit_intercept=c["fit_intercept"],
                   max_iter=c["max_iter"], tol=c["tol"], selection=c["selection"], random_state=0)  # fmt: skip
    return -_cv(m, "diabetes", "neg_mean_squared_error") / 1000.0


def forest_wine(c: dict[str, Any]) -> float:
    from sklearn.ensemble import RandomForestClassifier

    mf = None if c["max_features"] == "all" else c["max_features"]
    m = RandomForestClassifier(n_estimators=c["n_estimators"], max_depth=c["max_depth"],
                               min_samples_leaf=c["min_samples_leaf"], max_features=mf,
                               criterion=c["criterion"], bootstrap=c["bootstrap"], random_state=0)  # fmt: skip
    return 1.0 - _cv(m, "wine")


def tree_breast_cancer(c: dict[str, Any]) -> float:
    from sklearn.tree import DecisionTreeClassifier

    m = DecisionTreeClassifier(max_depth=c["max_depth"], min_samples_leaf=c["min_samples_leaf"],
                               criterion=c["criterion"], splitter=c["splitter"],
                               ccp_alpha=c["ccp_alpha"], random_state=0)  # fmt: skip
    return 1.0 - _cv(m, "breast_cancer")


def three_bar_truss(c: dict[str, Any]) -> float:
    a1, a2, length, p, sigma = c["area_outer"], c["area_middle"], 100.0, 2.0, 2.0
    cost = (2 * math.sqrt(2) * a1 + a2) * length
    den = math.sqrt(2) * a1**2 + 2 * a1 * a2
    g = [(math.sqrt(2) * a1 + a2) / den * p - sigma, a2 / den * p - sigma,
         1 / (a1 + math.sqrt(2) * a2) * p - sigma]  # fmt: skip
    return _penalized(cost, g)


def cantilever(c: dict[str, Any]) -> float:
    x = [c[f"section_{i}"] for i in range(1, 6)]
    cost = 0.0624 * sum(x)
    g = [61 / x[0] ** 3 + 37 / x[1] ** 3 + 19 / x[2] ** 3 + 7 / x[3] ** 3 + 1 / x[4] ** 3 - 1]
    return _penalized(cost, g)


def gear_train(c: dict[str, Any]) -> float:
    ratio = (c["teeth_a"] * c["teeth_b"]) / (c["teeth_d"] * c["teeth_f"])
    return math.log10((1 / 6.931 - ratio) ** 2 + 1e-16)


def enzyme_fit(c: dict[str, Any]) -> float:
    s = np.array([0.5, 1, 2, 5, 10, 20, 50, 100.0])
    inh = np.array([0.0, 5.0])
    obs = np.array([[12 * x / (4 * (1 + i / 3) + x) for x in s] for i in inh])
    vmax, km, ki = c["vmax"], c["km"], c["ki"]
    pred = np.array([[vmax * x / (km * (1 + i / ki) + x) for x in s] for i in inh])
    pred = pred * (1 + 0.001 * (c["temperature_offset"]))
    return float(np.log10(np.mean((pred - obs) ** 2) + 1e-12))


def oscillator_fit(c: dict[str, Any]) -> float:
    t = np.linspace(0, 10, 101)

    def x(m: float, damping: float, k: float) -> np.ndarray:
        w0, zeta = math.sqrt(k / m), damping / (2 * math.sqrt(k * m))
        if zeta >= 1:
            return np.exp(-w0 * t) * (1 + w0 * t)
        wd = w0 * math.sqrt(1 - zeta**2)
        return np.exp(-zeta * w0 * t) * (np.cos(wd * t) + zeta * w0 / wd * np.sin(wd * t))

    obs = x(1.0, 0.3, 4.0)
    pred = x(c["mass"], c["damping"], c["stiffness"])
    return float(np.log10(np.mean((pred - obs) ** 2) + 1e-12))


def db_config(c: dict[str, Any]) -> float:
    """Modelled negative throughput (k tx/s) of a database server under a fixed load."""
    mem = c["buffer_pool_mb"]
    cache = 1 - math.exp(-mem / 6000.0)
    workers = c["worker_threads"]
    par = min(workers, 32) / 32 - 0.004 * max(0, workers - 32)
    conns = c["max_connections"]
    queue = 1.0 if conns >= 200 else conns / 200
    sync = {"fsync": 1.0, "fdatasync": 1.15, "group_commit": 1.6, "off": 1.7}[c["wal_sync"]]
    ckpt = 1 - 0.3 * math.exp(-c["checkpoint_s"] / 60.0)
    return -float(
        50 * (0.2 + 0.8 * cache) * max(0.05, par) * queue * sync * ckpt - 2 * c["log_verbose"]
    )


def training_schedule(c: dict[str, Any]) -> float:
    """Modelled validation loss of a fixed network trained for a fixed number of steps."""
    lr, bs = c["learning_rate"], c["batch_size"]
    best_lr = 3e-3 * math.sqrt(bs / 256)
    lr_term = (math.log10(lr) - math.log10(best_lr)) ** 2
    sched = {"cosine": 0.0, "linear": 0.03, "constant": 0.12, "step": 0.06}[c["schedule"]]
    warm = 0.05 * math.exp(-c["warmup_steps"] / 200.0) * (lr > 1e-3)
    noise = 0.02 * math.log2(max(1, 1024 // bs))
    wd = 0.02 * (math.log10(c["weight_decay"]) + 2) ** 2 / 9
    return float(1.5 + 0.4 * lr_term + sched + warm + noise + wd + 0.0 * c["data_seed"])


BLACK_BOXES: dict[str, BlackBox] = {
    "svm_breast_cancer": BlackBox("svm_breast_cancer", {
        "C": F(1.0, 1e-4, 1e4), "gamma": F(0.01, 1e-6, 10.0), "kernel": C("rbf", "rbf", "poly", "sigmoid", "linear"),
        "degree": I(3, 1, 6), "coef0": F(0.0, -1.0, 1.0), "shrinking": C(True, True, False),
        "tol": F(1e-3, 1e-6, 1e-1)}, svm_breast_cancer),
    "gbm_diabetes": BlackBox("gbm_diabetes", {
        "n_estimators": I(100, 10, 400), "learning_rate": F(0.1, 1e-3, 1.0), "max_depth": I(3, 1, 10),
        "subsample": F(1.0, 0.3, 1.0), "min_samples_leaf": I(1, 1, 50),
        "max_features": C(1.0, 1.0, "sqrt", "log2")}, gbm_diabetes),
    "knn_digits": BlackBox("knn_digits", {
        "n_neighbors": I(5, 1, 100), "weights": C("uniform", "uniform", "distance"), "p": I(2, 1, 3),
        "leaf_size": I(30, 5, 200), "algorithm": C("auto", "auto", "ball_tree", "kd_tree", "brute")}, knn_digits),
    "logreg_wine": BlackBox("logreg_wine", {
        "C": F(1.0, 1e-5, 1e3), "tol": F(1e-4, 1e-6, 1e-1), "max_iter": I(100, 20, 2000),
        "fit_intercept": C(True, True, False), "standardize": C(False, True, False)}, logreg_wine),
    "pressure_vessel": BlackBox("pressure_vessel", {
        "shell_plates": I(20, 1, 99), "head_plates": I(20, 1, 99), "radius": F(50.0, 10.0, 200.0),
        "length": F(100.0, 10.0, 240.0)}, pressure_vessel),
    "welded_beam": BlackBox("welded_beam", {
        "weld_thickness": F(0.5, 0.1, 2.0), "weld_length": F(5.0, 0.1, 10.0),
        "bar_height": F(5.0, 0.1, 10.0), "bar_thickness": F(1.0, 0.1, 2.0)}, welded_beam),
    "spring": BlackBox("spring", {
        "wire_diameter": F(0.1, 0.05, 2.0), "coil_diameter": F(1.0, 0.25, 1.3),
        "active_coils": F(10.0, 2.0, 15.0)}, spring),
    "speed_reducer": BlackBox("speed_reducer", {
        "face_width": F(3.0, 2.6, 3.6), "module": F(0.75, 0.7, 0.8), "pinion_teeth": I(20, 17, 28),
        "shaft1_length": F(7.8, 7.3, 8.3), "shaft2_length": F(7.8, 7.3, 8.3),
        "shaft1_diameter": F(3.5, 2.9, 3.9), "shaft2_diameter": F(5.3, 5.0, 5.5)}, speed_reducer),
    "lotka_volterra_fit": BlackBox("lotka_volterra_fit", {
        "prey_growth": F(1.0, 1e-3, 10.0), "predation": F(1.0, 1e-3, 10.0),
        "predator_gain": F(1.0, 1e-3, 10.0), "predator_death": F(1.0, 1e-3, 10.0),
        "solver_rtol": F(1e-6, 1e-9, 1e-3)},
        lotka_volterra_fit),
    "reaction_yield": BlackBox("reaction_yield", {
        "temperature_c": F(60.0, 20.0, 200.0), "time_min": F(60.0, 1.0, 1440.0),
        "concentration": F(0.5, 0.05, 2.0), "catalyst": C("none", "none", "pd", "pt", "ni"),
        "ph": F(7.0, 1.0, 13.0), "stirring_rpm": F(300.0, 50.0, 1500.0)}, reaction_yield),
    "sir_fit": BlackBox("sir_fit", {
        "transmission_rate": F(0.5, 1e-3, 5.0), "recovery_rate": F(0.2, 1e-3, 2.0),
        "initial_infected": F(1e-3, 1e-7, 0.1)}, sir_fit),
    "matmul_tiling": BlackBox("matmul_tiling", {
        "tile_m": C(64, 16, 32, 64, 128, 256), "tile_n": C(64, 16, 32, 64, 128, 256),
        "tile_k": C(32, 8, 16, 32, 64, 128), "stages": I(2, 1, 6), "unroll": C(1, 1, 2, 4, 8, 16),
        "vector_width": C("none", "none", "x2", "x4", "x8"), "layout": C("row", "row", "col", "blocked"),
        "threads_hint": I(256, 32, 1024)}, matmul_tiling),
    "cache_policy": BlackBox("cache_policy", {
        "cache_mb": F(256.0, 16.0, 16384.0), "policy": C("lru", "lru", "lfu", "fifo", "arc"),
        "ttl_s": F(60.0, 1.0, 86400.0), "shards": I(4, 1, 64), "compression": C("none", "none", "lz4"),
        "log_level_debug": I(0, 0, 1)}, cache_policy),
    "elasticnet_diabetes": BlackBox("elasticnet_diabetes", {
        "alpha": F(1.0, 1e-5, 100.0), "l1_ratio": F(0.5, 0.0, 1.0), "fit_intercept": C(True, True, False),
        "max_iter": I(1000, 100, 10000), "tol": F(1e-4, 1e-6, 1e-2),
        "selection": C("cyclic", "cyclic", "random")}, elasticnet_diabetes),
    "forest_wine": BlackBox("forest_wine", {
        "n_estimators": I(100, 10, 200), "max_depth": I(10, 1, 30), "min_samples_leaf": I(1, 1, 40),
        "max_features": C("sqrt", "sqrt", "log2", "all"), "criterion": C("gini", "gini", "entropy"),
        "bootstrap": C(True, True, False)}, forest_wine),
    "tree_breast_cancer": BlackBox("tree_breast_cancer", {
        "max_depth": I(10, 1, 30), "min_samples_leaf": I(1, 1, 60), "criterion": C("gini", "gini", "entropy"),
        "splitter": C("best", "best", "random"), "ccp_alpha": F(0.0, 0.0, 0.1)}, tree_breast_cancer),
    "three_bar_truss": BlackBox("three_bar_truss", {
        "area_outer": F(0.5, 0.001, 1.0), "area_middle": F(0.5, 0.001, 1.0)}, three_bar_truss),
    "cantilever": BlackBox("cantilever", {f"section_{i}": F(10.0, 0.01, 100.0) for i in range(1, 6)},
                           cantilever),
    "gear_train": BlackBox("gear_train", {
        "teeth_a": I(30, 12, 60), "teeth_b": I(30, 12, 60), "teeth_d": I(30, 12, 60),
        "teeth_f": I(30, 12, 60)}, gear_train),
    "enzyme_fit": BlackBox("enzyme_fit", {
        "vmax": F(1.0, 1e-2, 1e3), "km": F(1.0, 1e-3, 1e3), "ki": F(1.0, 1e-3, 1e3),
        "temperature_offset": F(0.0, -5.0, 5.0)}, enzyme_fit),
    "oscillator_fit": BlackBox("oscillator_fit", {
        "mass": F(1.0, 0.5, 2.0), "damping": F(1.0, 1e-3, 10.0), "stiffness": F(1.0, 1e-2, 100.0)},
        oscillator_fit),
    "db_config": BlackBox("db_config", {
        "buffer_pool_mb": F(128.0, 16.0, 65536.0), "worker_threads": I(8, 1, 256),
        "max_connections": I(100, 10, 2000), "wal_sync": C("fsync", "fsync", "fdatasync", "group_commit", "off"),
        "checkpoint_s": F(30.0, 1.0, 3600.0), "log_verbose": I(0, 0, 1)}, db_config),
    "training_schedule": BlackBox("training_schedule", {
        "learning_rate": F(1e-3, 1e-6, 1.0), "batch_size": C(256, 16, 32, 64, 128, 256, 512, 1024),
        "schedule": C("constant", "cosine", "linear", "constant", "step"), "warmup_steps": I(0, 0, 5000),
        "weight_decay": F(1e-2, 1e-6, 1.0), "data_seed": I(0, 0, 1000)}, training_schedule),
}  # fmt: skip
"""Every black box by name (the suite's instances reference them)."""

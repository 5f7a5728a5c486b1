"""``nco``: distill a black-box neural TSP policy into a readable program portfolio (EPB).

Each task is a fixed, seeded set of TSP instances (uniform, or clustered as a
distribution shift) of one size. The teacher is the shipped POMO-style attention policy
(``optiforge.solvers.nco.policy``, trained on uniform TSP-20 by
``benchmarks/train_tsp_teacher.py``): an agent may query it as a black box on training
instances of its own (``teacher_trajectories``: its greedy tours and per-step
distributions). A candidate is a portfolio ``{"programs": {name: source}, "router":
K x F weights, "beta": {name: sharpness}}`` (``optiforge.solvers.nco.programs``);
``evaluate`` builds a tour per test instance with it *in the sandbox* (greedy from city 0)
and scores the mean optimality gap in percent against the reference (2-opt + Or-opt from
8 starts, ``solvers.nco.tsp.local_search``: best known, not proven optimal). Metrics:
the gap, the gap to the teacher's greedy tour from the same start, top-1 agreement with
the teacher along the portfolio's own tours (at every state the portfolio reached, its
next city against the teacher's argmax there), router accuracy (at the same states, the
router's heaviest program's argmax against the teacher's), portfolio size and total
program lines, and per stage (early, middle, late thirds of the tour) the router's mean
weight on each program.

What the sandbox sees: the instances and the portfolio, nothing else. The teacher's
tours, its decisions and the reference are computed and compared in the parent (the
teacher is queried along the tour the portfolio built, so no state of a teacher tour,
whose successor would give the teacher's next city away, reaches program code). The
features, router weights and stage weights are recomputed in the parent from the
validated tour; only the tour and the programs' scores come from the sandbox.

CVRP and TSPLIB instances are not included (no CVRP teacher yet; TSPLIB's licence is not
stated as permissive).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from optiforge.evals.protocol import Score, SuiteHooks

_RUNNER = "from optiforge.solvers.nco.programs import run_request\nrun_request()\n"
STAGES = ("early", "middle", "late")
TRAIN_N = 20
"""Cities of the instances an agent may query the teacher on."""


@dataclass
class NCOTask:
    """One instance set (see the module doc)."""

    name: str
    split: str
    n: int
    distribution: str
    count: int = 16
    seed: int = 0
    suite: str = "nco"
    metric: str = "gap_pct"
    higher_is_better: bool = False
    budget: int | None = 24
    """Edit rounds an agent may spend (block I steps)."""
    timeout_s: float = 300.0

    @property
    def description(self) -> str:
        return (f"Distill a TSP construction policy (a black-box teacher) into a portfolio of "
                f"readable next-city heuristics mixed by a router; judged on {self.count} "
                f"{self.distribution} instances with {self.n} cities.")  # fmt: skip

    @cached_property
    def instances(self) -> np.ndarray:
        from optiforge.solvers.nco.tsp import clustered_instances, uniform_instances

        make = uniform_instances if self.distribution == "uniform" else clustered_instances
        return make(self.n, self.count, self.seed)

    @cached_property
    def reference(self) -> list[float]:
        from optiforge.solvers.nco.tsp import local_search

        return [local_search(x, 8, seed=i)[1] for i, x in enumerate(self.instances)]

    @cached_property
    def teacher_tours(self) -> list[list[int]]:
        return _teacher_greedy(self.instances)

    def teacher_trajectories(self, count: int, seed: int) -> list[dict[str, Any]]:
        """The teacher queried on ``count`` fresh training instances (uniform TSP-20, the
        teacher's own training distribution, whatever the task: larger and clustered tasks
        are shifts the portfolio never saw; never the test instances): coords, its greedy
        tour from city 0, and its next-city distribution at every step."""
        from optiforge.solvers.nco.policy import load_teacher, teacher_step_probs
        from optiforge.solvers.nco.tsp import uniform_instances

        xs = uniform_instances(TRAIN_N, count, 10_000 + seed)
        model = load_teacher()
        tours = _teacher_greedy(xs)
        return [{"coords": x, "tour": t, "probs": teacher_step_probs(model, x, t)}
                for x, t in zip(xs, tours, strict=True)]  # fmt: skip

    def practice_instances(self, count: int, seed: int) -> np.ndarray:
        """Fresh instances of the teacher's training distribution (uniform TSP-20), never
        the test instances and not those ``teacher_trajectories`` returns: an agent may
        build tours on them to check its portfolio (no teacher query needed)."""
        from optiforge.solvers.nco.tsp import uniform_instances

        return uniform_instances(TRAIN_N, count, 20_000 + seed)

    def program_scores(self, programs: dict[str, str], trajectories: list[dict[str, Any]],
                       sandbox: Any | None = None) -> list[dict[str, Any]]:  # fmt: skip
        """Per trajectory, along its tour: the router features and every program's
        standardized scores (``z``; visited cities NaN), computed in the sandbox."""
        return self._run({"kind": "scores", "programs": programs,
                          "instances": [t["coords"].tolist() for t in trajectories],
                          "tours": [list(t["tour"]) for t in trajectories]}, sandbox)  # fmt: skip

    def construct(self, portfolio: dict[str, Any], instances: list[np.ndarray],
                  sandbox: Any | None = None) -> list[list[int] | None]:  # fmt: skip
        """Greedy tours (from city 0) built by ``portfolio`` on an agent's own instances
        (e.g. its validation instances), in the sandbox; ``None`` where it failed or did
        not return a tour."""
        built = self._run({"kind": "construct", "portfolio": portfolio,
                           "instances": [np.asarray(x).tolist() for x in instances]}, sandbox)  # fmt: skip
        out: list[list[int] | None] = []
        for x, b in zip(instances, built, strict=True):
            tour = b.get("tour") if isinstance(b, dict) else None
            ok = isinstance(tour, list) and sorted(tour) == list(range(len(x)))
            out.append([int(c) for c in tour] if ok and tour is not None else None)
        return out

    def _run(self, request: dict[str, Any], sandbox: Any | None) -> list[dict[str, Any]]:
        from optiforge.sandboxes import get_sandbox
        from optiforge.sandboxes.payload import package_files

        sandbox = sandbox or get_sandbox("local")
        files: dict[str, str | bytes] = {}
        files |= package_files("optiforge.errors", "optiforge.solvers.nco")
        files["request.json"] = json.dumps(request)
        files["run.py"] = _RUNNER
        python = str(getattr(sandbox, "python", None) or "python3")
        res = sandbox.run([python, "run.py"], files=files, timeout_s=self.timeout_s,
                          memory_mb=2048, env={"OMP_NUM_THREADS": "1"}, collect=["out.json"])  # fmt: skip
        if res.timed_out or res.returncode != 0 or "out.json" not in res.files:
            why = "timed out" if res.timed_out else f"exit {res.returncode}: {res.stderr[-400:]}"
            raise RuntimeError(f"program run failed: {why}")
        out = res.files["out.json"]
        return list(json.loads(out if isinstance(out, str) else out.decode()))

    def evaluate(self, candidate: Any, sandbox: Any | None = None) -> Score:
        """Build every test tour with the portfolio in the sandbox; score the mean gap."""
        pf = candidate if isinstance(candidate, dict) else json.loads(str(candidate))
        programs = pf.get("programs") if isinstance(pf, dict) else None
        W = np.asarray(pf.get("router") or [], dtype=float) if isinstance(pf, dict) else None
        if not programs or W is None or W.shape != (len(programs), len(_features())):
            return Score(value=math.inf, passed=False, details={
                "reason": f"a portfolio needs programs and a {len(programs or {})} x "
                          f"{len(_features())} router"})  # fmt: skip
        from optiforge.solvers.nco.policy import load_teacher, teacher_step_probs
        from optiforge.solvers.nco.programs import features, tour_state
        from optiforge.solvers.nco.tsp import tour_length

        try:  # the sandbox gets the instances and the portfolio: never a teacher tour
            built = self._run({"kind": "construct", "portfolio": pf,
                               "instances": self.instances.tolist()}, sandbox)  # fmt: skip
        except RuntimeError as e:
            return Score(value=math.inf, passed=False, details={"reason": str(e)[:500]})
        bad = next((b for b in built if "error" in b), None)
        if bad is not None:
            return Score(value=math.inf, passed=False, details={"reason": bad["error"]})
        names = list(programs)
        why = next((r for r in (_check_built(b, self.n, names) for b in built) if r), None)
        if why:
            return Score(value=math.inf, passed=False, details={"reason": why})
        model = load_teacher()
        beta = pf.get("beta") or {}
        gaps, tgaps, stage_w = [], [], {s: np.zeros(len(programs)) for s in STAGES}
        agree, router_ok, steps = 0, 0, 0
        for x, b, ref, tt in zip(
            self.instances, built, self.reference, self.teacher_tours, strict=True
        ):
            tour = [int(c) for c in b["tour"]]
            length = tour_length(x, tour)
            gaps.append(100 * (length / ref - 1))
            tgaps.append(100 * (length / tour_length(x, tt) - 1))
            # the teacher's choice at every state of the portfolio's own tour, here
            wanted = teacher_step_probs(model, x, tour).argmax(-1)
            d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1)).tolist()
            for t in range(self.n - 1):
                w = _softmax(W @ np.asarray(features(tour_state(x, d, tour[: t + 1], self.n))))
                stage_w[STAGES[min(2, 3 * t // (self.n - 1))]] += w
                z = {
                    k: np.asarray([np.nan if v is None else v for v in b["z"][k][t]]) for k in names
                }
                best = names[int(np.argmax(w))]
                agree += int(tour[t + 1] == wanted[t])
                router_ok += int(
                    np.argmax(_masked_softmax(beta.get(best, 1.0) * z[best])) == wanted[t]
                )
                steps += 1
        metrics = {"gap_pct": float(np.mean(gaps)), "gap_to_teacher_pct": float(np.mean(tgaps)),
                   "agreement": agree / steps, "router_accuracy": router_ok / steps,
                   "portfolio_size": float(len(programs)),
                   "program_lines": float(sum(len(s.strip().splitlines()) for s in programs.values()))}  # fmt: skip
        stages = {s: {k: round(float(v[i] / max(v.sum(), 1e-12)), 4) for i, k in enumerate(names)}
                  for s, v in stage_w.items()}  # fmt: skip
        return Score(value=metrics["gap_pct"], passed=True, metrics=metrics,
                     details={"stages": stages})  # fmt: skip


def _check_built(built: Any, n: int, names: list[str]) -> str | None:
    """Why a sandbox's ``{"tour", "z"}`` for an ``n``-city instance is malformed, or None."""
    tour = built.get("tour") if isinstance(built, dict) else None
    if not isinstance(tour, list) or sorted(tour) != list(range(n)) or tour[0] != 0:
        return "not a tour (a permutation of the cities from city 0)"
    z = built.get("z")
    if not isinstance(z, dict) or set(z) != set(names):
        return "no scores for every program along the tour"
    for k in names:
        rows = z[k]
        if not isinstance(rows, list) or len(rows) != n - 1 or any(
            not isinstance(r, list) or len(r) != n
            or any(v is not None and not isinstance(v, int | float) for v in r) for r in rows
        ):  # fmt: skip
            return f"program {k}'s scores along the tour are not {n - 1} rows of {n} numbers"
    return None


def _features() -> tuple[str, ...]:
    from optiforge.solvers.nco.programs import FEATURES

    return FEATURES


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def _masked_softmax(z: np.ndarray) -> np.ndarray:
    out = np.zeros_like(z, dtype=float)
    ok = np.isfinite(z)
    out[ok] = _softmax(z[ok])
    return out


def _teacher_greedy(xs: np.ndarray) -> list[list[int]]:
    import torch

    from optiforge.solvers.nco.policy import load_teacher

    model = load_teacher()
    with torch.no_grad():
        tours, _ = model.rollout(
            torch.tensor(np.asarray(xs), dtype=torch.float32), greedy=True, starts=1
        )
    return [[int(c) for c in t[0]] for t in tours]


_SPECS = [  # name, split, n, distribution, seed; TSP-100 has 8 instances (its reference
    # costs about 2 s an instance)
    ("tsp20", "dev", 20, "uniform", 1),
    ("tsp20-heldout", "heldout", 20, "uniform", 2),
    ("tsp50", "heldout", 50, "uniform", 3),
    ("tsp100", "heldout", 100, "uniform", 6),
    ("tsp20-clustered", "heldout", 20, "clustered", 4),
    ("tsp50-clustered", "heldout", 50, "clustered", 5),
]


class NCOBenchmark(SuiteHooks):
    """The ``nco`` suite (see the module doc)."""

    name = "nco"
    description = "Distill a neural TSP policy into a program portfolio with a router (EPB)"
    splits = ("dev", "heldout")

    def tasks(self, split: str = "dev") -> list[NCOTask]:
        self.check_split(split)
        return [NCOTask(name=a, split=s, n=n, distribution=d, seed=seed, count=16 if n < 100 else 8)
                for a, s, n, d, seed in _SPECS if s == split]  # fmt: skip

    def suite_metrics(self, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Per method: every metric's mean and 95% interval over seeds, and the stage
        analysis: the router's mean weight per heuristic family (a program's leading
        heuristic) in the early, middle and late thirds of the tour."""
        from optiforge.evals.stats import metrics_over_seeds

        out: dict[str, Any] = metrics_over_seeds(rows)
        stages: dict[str, dict[str, dict[str, list[float]]]] = {}
        for r in rows:
            ver = r.get("verification") or {}
            method = str(r.get("method"))
            for stage, weights in ((ver.get("details") or {}).get("stages") or {}).items():
                fam: dict[str, float] = {}
                for prog, w in weights.items():
                    fam[family(prog)] = fam.get(family(prog), 0.0) + float(w)
                for f, w in fam.items():
                    stages.setdefault(method, {}).setdefault(stage, {}).setdefault(f, []).append(w)
        if not out:
            return None
        for method in out:
            runs = max(
                (len(v) for st in stages.get(method, {}).values() for v in st.values()), default=1
            )
            out[method]["stages"] = {st: {f: sum(v) / runs for f, v in fams.items()}
                                     for st, fams in stages.get(method, {}).items()}  # fmt: skip
        return out

    def report_sections(self, summary: dict[str, Any]) -> list[str]:
        sm = summary.get("suite_metrics") or {}
        if not sm:
            return []
        keys = [
            "gap_pct",
            "gap_to_teacher_pct",
            "agreement",
            "router_accuracy",
            "portfolio_size",
            "program_lines",
        ]
        from optiforge.evals.stats import metrics_table

        lines = ["## Distillation", "", "Mean over tasks ± the 95% t-interval over seeds.", "",
                 *metrics_table(sm, keys)]  # fmt: skip
        lines += ["", "Stage analysis: the router's mean weight per heuristic family "
                  "(see stages.png).", "", "| method | stage | weights |", "|---|---|---|"]  # fmt: skip
        for method, m in sm.items():
            for stage in STAGES:
                fams = (m.get("stages") or {}).get(stage) or {}
                top = ", ".join(
                    f"{f} {w:.2f}" for f, w in sorted(fams.items(), key=lambda x: -x[1])
                )
                lines.append(f"| {method} | {stage} | {top or '-'} |")
        return ["\n".join(lines), "![stages](stages.png)"]

    def report_plots(
        self, summary: dict[str, Any], rows: list[dict[str, Any]], out: Path
    ) -> list[Path]:
        """``stages.png``: per method, the router's weight per heuristic family by stage."""
        sm = summary.get("suite_metrics") or {}
        methods = [m for m, v in sm.items() if v.get("stages")]
        if not methods:
            return []
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fams = sorted({f for m in methods for st in sm[m]["stages"].values() for f in st})
        fig, axes = plt.subplots(1, len(methods), figsize=(3.2 * len(methods), 3.2), squeeze=False)
        for ax, method in zip(axes[0], methods, strict=True):
            bottom = np.zeros(len(STAGES))
            for f in fams:
                ys = np.array([sm[method]["stages"].get(st, {}).get(f, 0.0) for st in STAGES])
                ax.bar(STAGES, ys, bottom=bottom, label=f)
                bottom += ys
            ax.set_title(method, fontsize=9)
            ax.set_ylim(0, 1.05)
        axes[0][0].set_ylabel("router weight")
        axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
        fig.tight_layout()
        path = out / "stages.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]


def family(program: str) -> str:
    """A program's heuristic family: its leading heuristic (``0.75nearest-0.25insertion`` ->
    ``nearest``; an LLM-written one -> ``llm``)."""
    m = re.match(r"^[-+]?[\d.]*([A-Za-z_]+)", program)
    name = m.group(1) if m else program
    return "llm" if name.startswith("llm") else name

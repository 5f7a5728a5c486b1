"""``funcfit``: evolve a small Python function ``f(x)`` to match a target curve.

The smallest honest benchmark for the shared search loop: a candidate is Python source
defining ``f(x)`` (numpy available as ``np``); it runs in the sandbox on the task's
sample points and is scored by mean squared error against the target (lower is better).
The target is never shown to the candidate code: it sees only the inputs. Python's and
numpy's random generators are seeded the same for every run, so a program's score is a
function of the program (a search, its resume and its cassette replay see the same values,
and the harness's re-measurement equals what the search observed).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optiforge.errors import ConfigError
from optiforge.evals.protocol import Score, SuiteHooks

_RUNNER = r"""
import json, random, sys
import numpy as np
random.seed(0)  # a candidate that draws random numbers draws the same ones every time
np.random.seed(0)
ns = {"np": np, "math": __import__("math")}
src = open("candidate.py").read()
xs = np.array(json.load(open("inputs.json")), dtype=float)
try:
    exec(compile(src, "candidate.py", "exec"), ns)  # trusted: this runner runs in the sandbox
    f = ns["f"]
    ys = np.asarray(f(xs), dtype=float) * np.ones_like(xs)
    print(json.dumps({"ok": True, "y": ys.tolist()}))
except Exception as e:
    print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}))
"""

# name -> (expression of x, domain, split)
_TARGETS: dict[str, tuple[str, tuple[float, float], str]] = {
    "quadratic": ("3*x**2 - 2*x + 1", (-2.0, 2.0), "dev"),
    "sine": ("np.sin(2*x) + 0.5*x", (-3.0, 3.0), "dev"),
    "cubic": ("0.5*x**3 - x + 2", (-2.0, 2.0), "heldout"),
    "damped": ("np.exp(-0.3*x) * np.cos(x)", (0.0, 6.0), "heldout"),
}


@dataclass
class FuncFitTask:
    """Fit ``f`` to ``target`` on ``n_points`` evenly spaced inputs."""

    name: str
    split: str
    target: str
    domain: tuple[float, float]
    n_points: int = 41
    suite: str = "funcfit"
    metric: str = "mse"
    higher_is_better: bool = False
    timeout_s: float = 10.0
    budget: int | None = None
    """No budget of its own: the agent's default."""
    warm_modules: tuple[str, ...] = ("numpy", "json", "math", "random")
    """What the runner imports: ``LocalSandbox(warm=task.warm_modules)`` runs it warm
    (json and math too: each is ~0.7 ms to import in a fresh fork)."""
    description: str = field(init=False)

    def __post_init__(self) -> None:
        lo, hi = self.domain
        self.description = (
            f"Write a Python function f(x) (x is a numpy array; numpy is available as np) that "
            f"matches an unknown target curve on [{lo}, {hi}]; the score is the mean squared "
            f"error on {self.n_points} evenly spaced points (lower is better)."
        )

    @property
    def xs(self) -> np.ndarray:
        """`n_points` inputs."""
        return np.linspace(self.domain[0], self.domain[1], self.n_points)

    @property
    def ys(self) -> np.ndarray:
        """`n_points` target values."""
        x = self.xs  # noqa: F841 - used by eval below
        return np.asarray(eval(self.target, {"np": np, "x": x}), dtype=float)  # trusted: ours

    def check(self, candidate: Any, sandbox: Any) -> str:
        """Run ``f`` on five probe inputs in the sandbox: its outputs or its error (no score)."""
        code = candidate["code"] if isinstance(candidate, dict) else str(candidate)
        probe = np.linspace(self.domain[0], self.domain[1], 5)
        res = sandbox.run(
            [str(getattr(sandbox, "python", None) or "python3"), "run.py"],
            files={
                "run.py": _RUNNER,
                "candidate.py": code,
                "inputs.json": json.dumps(probe.tolist()),
            },
            timeout_s=self.timeout_s,
            memory_mb=1024,
        )
        if res.timed_out:
            return f"error: timed out after {self.timeout_s} s"
        try:
            out = json.loads(res.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return f"error: exit {res.returncode}: {res.stderr.strip()[-300:]}"
        if not out.get("ok"):
            return f"error: {out.get('error')}"
        ys = np.asarray(out["y"], dtype=float)
        if ys.shape != probe.shape or not np.all(np.isfinite(ys)):
            return "error: f(x) returned non-finite values or the wrong shape"
        pairs = ", ".join(f"f({x:.3g})={y:.4g}" for x, y in zip(probe, ys, strict=True))
        return f"ok: {pairs}"

    def evaluate(self, candidate: Any, sandbox: Any | None = None) -> Score:
        """Run the candidate's ``f`` in the sandbox and score it by MSE."""
        code = candidate["code"] if isinstance(candidate, dict) else str(candidate)
        if sandbox is None:
            from optiforge.sandboxes import get_sandbox

            sandbox = get_sandbox("local")
        # the sandbox's own configured interpreter, never whatever `python` leads PATH
        python = str(getattr(sandbox, "python", None) or "python3")
        res = sandbox.run(
            [python, "run.py"],
            files={
                "run.py": _RUNNER,
                "candidate.py": code,
                "inputs.json": json.dumps(self.xs.tolist()),
            },
            timeout_s=self.timeout_s,
            memory_mb=1024,
        )
        metrics = {"sandbox_s": float(res.duration_s)}
        if res.timed_out or res.returncode != 0:
            why = "timed out" if res.timed_out else f"exit {res.returncode}: {res.stderr[-300:]}"
            return Score(value=math.inf, passed=False, metrics=metrics, details={"reason": why})
        try:
            out = json.loads(res.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return Score(
                value=math.inf,
                passed=False,
                metrics=metrics,
                details={"reason": "candidate printed no result"},
            )
        if not out.get("ok"):
            return Score(
                value=math.inf,
                passed=False,
                metrics=metrics,
                details={"reason": out.get("error", "error")},
            )
        pred = np.asarray(out["y"], dtype=float)
        if pred.shape != self.xs.shape or not np.all(np.isfinite(pred)):
            return Score(
                value=math.inf,
                passed=False,
                metrics=metrics,
                details={"reason": "f(x) returned non-finite values or the wrong shape"},
            )
        mse = float(np.mean((pred - self.ys) ** 2))
        return Score(value=mse, passed=True, metrics=metrics)


class FuncFitBenchmark(SuiteHooks):
    """The ``funcfit`` suite."""

    name = "funcfit"
    splits = ("dev", "heldout")
    description = "Evolve f(x) to match a target curve (toy suite for the search loop)"

    def tasks(self, split: str = "dev") -> list[FuncFitTask]:
        if split not in self.splits:
            raise ConfigError(
                f"funcfit has no split {split!r} (choose from {', '.join(self.splits)})"
            )
        return [
            FuncFitTask(name=n, split=s, target=t, domain=d)
            for n, (t, d, s) in _TARGETS.items()
            if s == split
        ]

"""The ``hdbo`` benchmark: kernel candidates scored by LOO-CRPS, and BO runs scored by best value.

``Task.evaluate(candidate)`` takes a kernel candidate (a ``KernelSpec``, or kernel source
text; see ``optiforge.solvers.gp.validation``), validates it, fits it by marginal likelihood
on the task's kernel data (a seeded Sobol design of the noisy objective, y standardised)
and returns its LOO-CRPS (lower is better), computed by the harness from the kernel matrix
(``scoring``: kernel source runs only in sandboxes, as a Gram oracle that sees the inputs
and hyperparameters, never ``y``; the harness fits the hyperparameters; a number it
prints is never read). ``Task.run_bo`` runs BO with a kernel provider
within the task's evaluation budget; ``Task.score_trace`` re-evaluates the *noiseless*
objective at the trace's points itself (a reported best value is never trusted).

Protocols: ``ci`` (10 initial + 20 BO evaluations) and ``literature`` (20 + 250, qLogEI
here rather than qLogNEI). Splits: ``dev`` (literature embeddings: first k dims), ``test``
(same dimensions, other seeded embeddings/data), ``heldout`` (other dimensions, seeded
embeddings, other Lasso data and size).

What an agent is told: ``Task.name`` (``levy4_in_25``) is the stable public id users pass
on the CLI (``--bench hdbo/levy4_in_25``); it names the hidden function, so it never goes
into a prompt. Agents show an LLM ``agent_name`` (opaque, ``task-01``, by position in the
split) and ``description``, which says only the input dimension: no function, effective
dimensions or embedding. Those facts live in ``hidden`` (for the harness and the leak test).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from optiforge.errors import ConfigError, InvalidCandidate, InvalidTask, SolverError
from optiforge.evals.protocol import SPLITS, Score, SuiteHooks
from optiforge.evals.suites.hdbo.problems import HDBOProblem, embedded, lasso, rover
from optiforge.evals.suites.hdbo.scoring import (
    FAILED_VALUE,
    FOLD_RESTARTS,
    checked_gram,
    checked_heldout,
    gram_score,
    heldout_score,
    score_kernel_source,
)
from optiforge.solvers.bo import AcqConfig, BOLoop, KernelProvider, Trace, run_baseline
from optiforge.solvers.bo.loop import sobol, standardize
from optiforge.solvers.gp import ExactGP, KernelSpec, validate_kernel

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.sandboxes import Sandbox

_DT = torch.float64

PROTOCOLS: dict[str, tuple[int, int]] = {"ci": (10, 30), "literature": (20, 270)}
"""protocol -> (n_init, total evaluation budget)."""


@dataclass
class HDBOTask:
    """One hdbo problem configuration."""

    name: str
    split: str
    make_problem: Callable[[int], HDBOProblem]
    """seed -> problem (the seed drives observation noise only)."""
    n_init: int = 10
    budget: int = 30
    """Total evaluations (initial design included) of one run under the task's protocol."""
    n_kernel_data: int = 40
    max_hyperparameters: int = 256
    suite: str = "hdbo"
    metric: str = "best_value"
    """What a run on this task is judged by: the best noiseless objective value found."""
    higher_is_better: bool = False
    description: str = ""
    """What an agent may be told: the input dimension only (see the module docstring)."""
    agent_name: str = ""
    """Opaque name for prompts (``task-01``); ``name`` is the CLI id and reveals the function."""
    hidden: dict[str, Any] = field(default_factory=dict)
    """Facts an agent must not be told: function, effective dims, active dims, embedding."""

    def problem(self, seed: int = 0) -> HDBOProblem:
        """The objective (noisy ``__call__``, noiseless ``evaluate_true``)."""
        return self.make_problem(seed)

    @property
    def dim(self) -> int:
        return self.problem(0).dim

    def kernel_data(self, seed: int = 0) -> tuple[Tensor, Tensor]:
        """`n x D` Sobol inputs in the unit cube and `n` standardised noisy observations."""
        p = self.problem(seed)
        X = sobol(self.n_kernel_data, p.dim, seed)
        return X, standardize(p(X))

    # --- kernel candidates --------------------------------------------------------------

    def evaluate(self, candidate: Any, sandbox: Sandbox | None = None, *, seed: int = 0) -> Score:
        """Score a BO run or a kernel.

        A ``Trace`` or ``{"X": [[...]], ...}`` (a finished BO run) is judged by the task's
        metric, the best noiseless value at its points (``score_trace``). A kernel candidate
        (``KernelSpec``, source text or ``{"source": str}``) gets its LOO-CRPS on the task's
        kernel data (``score_kernel``; lower is better).
        """
        if isinstance(candidate, Trace):
            return self.score_trace(candidate)
        if isinstance(candidate, dict) and "X" in candidate:
            X = torch.as_tensor(candidate["X"], dtype=_DT)
            y = torch.as_tensor(candidate.get("y", [0.0] * len(candidate["X"])), dtype=_DT)
            return self.score_trace(Trace(name=str(candidate.get("name", "run")), seed=0, X=X, y=y))
        X, y = self.kernel_data(seed)
        return self.score_kernel(candidate, X, y, sandbox, seed=seed)

    def score_kernel(
        self,
        candidate: Any,
        X: Tensor,
        y: Tensor,
        sandbox: Sandbox | None = None,
        *,
        seed: int = 0,
        n_restarts: int = 2,
        n_fingerprint: int = 16,
        heldout: list[list[int]] | None = None,
        tracer: Any | None = None,
    ) -> Score:
        """LOO-CRPS of a kernel fitted on (``X`` `n x D` unit cube, ``y`` `n` standardised).

        ``heldout`` (test-index sets, e.g. ``scoring.kfold_splits``): the value is instead the
        mean held-out CRPS, each set scored with hyperparameters fitted on the other points
        only (``scoring.heldout_score``; the LOO-CRPS goes to ``metrics["loo_crps"]``).

        ``details["fingerprint"]`` is the fitted kernel's normalised Gram matrix on the first
        ``n_fingerprint`` inputs (functional deduplication: see ``solvers.gp.validation``).
        Kernel source runs only inside sandboxes (``scoring.oracle_sandbox()`` when none is
        given), as a Gram oracle on inputs only; its hyperparameters are fitted and the
        LOO-CRPS computed here (``scoring.score_kernel_source``); library kernels go
        through the same ``gram_score``. ``tracer``: gets the sandbox runs of the sandbox
        made here (when ``sandbox`` is None).
        """
        if isinstance(candidate, dict) and "source" in candidate:
            candidate = candidate["source"]
        if isinstance(candidate, str):
            return score_kernel_source(
                candidate,
                X,
                y,
                sandbox,
                seed=seed,
                n_restarts=n_restarts,
                n_fingerprint=n_fingerprint,
                max_hyperparameters=self.max_hyperparameters,
                heldout=heldout,
                tracer=tracer,
            )
        if not isinstance(candidate, KernelSpec):
            raise InvalidCandidate(
                f"hdbo candidates are KernelSpec or kernel source, got {type(candidate).__name__}"
            )
        # A KernelSpec was built in this process from trusted library code.
        rep = validate_kernel(
            candidate, X.shape[1], max_hyperparameters=self.max_hyperparameters, seed=seed
        )
        if not rep.ok:
            return Score(value=FAILED_VALUE, passed=False, details={"reason": rep.reason})
        t0 = time.perf_counter()
        n = X.shape[0]
        sets = checked_heldout(heldout, n) if heldout is not None else []
        grams: list[Tensor] = []
        try:
            for train in [None, *sets]:
                keep = torch.ones(n, dtype=torch.bool)
                if train is not None:  # fit without the held-out points
                    keep[torch.tensor(train, dtype=torch.long)] = False
                starts = n_restarts if train is None else FOLD_RESTARTS
                gp = ExactGP(candidate, n_restarts=starts, seed=seed).fit(X[keep], y[keep])
                assert gp.params is not None
                with torch.no_grad():
                    grams.append(checked_gram(candidate.fn(X, X, gp.params.kernel).to(_DT), n))
        except SolverError as e:
            return Score(value=FAILED_VALUE, passed=False, details={"reason": f"fit failed: {e}"})
        except InvalidCandidate as e:
            return Score(value=FAILED_VALUE, passed=False, details={"reason": str(e)})
        K = grams[0]
        score = gram_score(
            K,
            y,
            n_hyperparameters=rep.n_hyperparameters,
            seed=seed,
            n_restarts=n_restarts,
            n_fingerprint=n_fingerprint,
        )
        if heldout is not None:
            score = heldout_score(score, grams[1:], y, sets, seed=seed, n_restarts=n_restarts)
        score.metrics["fit_s"] = time.perf_counter() - t0
        score.details.update(expression=candidate.expression, warnings=rep.warnings)
        return score

    # --- BO runs ------------------------------------------------------------------------

    def run_bo(
        self,
        kernel_provider: KernelProvider,
        *,
        seed: int = 0,
        budget: int | None = None,
        refresh_every: int = 1,
        acq_config: AcqConfig | None = None,
        name: str = "discovered",
    ) -> Trace:
        """BO on this task's objective with ``kernel_provider`` (refreshed every ``refresh_every`` rounds)."""
        return BOLoop(
            self.problem(seed),
            budget=budget or self.budget,
            n_init=self.n_init,
            kernel_provider=kernel_provider,
            refresh_every=refresh_every,
            seed=seed,
            acq_config=acq_config,
            name=name,
        ).run()

    def score_trace(self, trace: Trace, *, budget: int | None = None) -> Score:
        """Best *noiseless* value at the trace's points, re-evaluated here; fails over budget."""
        cap = budget or self.budget
        p = self.problem(0)
        X = torch.as_tensor(trace.X, dtype=_DT)
        if X.ndim != 2 or X.shape[1] != p.dim or X.shape[0] == 0:
            return Score(
                value=FAILED_VALUE,
                passed=False,
                details={"reason": f"trace X has shape {tuple(X.shape)}"},
            )
        if X.shape[0] > cap:
            return Score(
                value=FAILED_VALUE,
                passed=False,
                details={"reason": f"{X.shape[0]} evaluations > budget {cap}"},
            )
        try:
            y = p.evaluate_true(X)
        except InvalidTask as e:
            return Score(value=FAILED_VALUE, passed=False, details={"reason": str(e)})
        best = float(y.min())
        metrics = {
            "best_value": best,
            "reported_best": trace.best_value,
            "n_evals": float(X.shape[0]),
        }
        if p.optimum is not None:
            metrics["regret"] = best - p.optimum
        return Score(
            value=best,
            passed=True,
            metrics=metrics,
            details={"trace": torch.cummin(y, 0).values.tolist(), "name": trace.name},
        )

    def run_baselines(
        self, names: Sequence[str], seeds: Sequence[int] = (0,), **kw: Any
    ) -> dict[str, list[Score]]:
        """Run each baseline for each seed on this task and score each trace (same budget)."""
        out: dict[str, list[Score]] = {}
        for n in names:
            out[n] = [
                self.score_trace(
                    run_baseline(n, self.problem(s), self.budget, s, n_init=self.n_init, **kw)
                )
                for s in seeds
            ]
        return out


def _tasks(split: str, n_init: int, budget: int) -> list[HDBOTask]:
    def emb(fn: str, k: int, D: int, e: int | None) -> Callable[[int], HDBOProblem]:
        return lambda s: embedded(fn, k, D, embedding_seed=e, seed=s)

    # (function, k, D, embedding seed) per split; None = literature "first k dims".
    synth: dict[str, list[tuple[str, int, int, int | None]]] = {
        "dev": [
            ("levy", 4, 25, None),
            ("hartmann", 6, 25, None),
            ("branin", 2, 100, None),
            ("ackley", 20, 20, None),
            ("rosenbrock", 20, 20, None),
            ("styblinski_tang", 20, 20, None),
        ],
        "test": [
            ("levy", 4, 25, 11),
            ("hartmann", 6, 25, 12),
            ("branin", 2, 100, 13),
            ("ackley", 20, 20, 14),
            ("rosenbrock", 20, 20, 15),
            ("styblinski_tang", 20, 20, 16),
        ],
        "heldout": [
            ("levy", 4, 100, 21),
            ("hartmann", 6, 100, 22),
            ("branin", 2, 100, 23),
            ("ackley", 50, 50, 24),
            ("rosenbrock", 50, 50, 25),
            ("styblinski_tang", 50, 50, 26),
        ],
    }
    lasso_cfg = {"dev": (60, 0), "test": (60, 1), "heldout": (300, 2)}
    tasks: list[HDBOTask] = []
    for fn, k, D, e in synth[split]:
        mk = emb(fn, k, D, e)
        p = mk(0)
        tasks.append(
            HDBOTask(
                name=p.name,
                split=split,
                make_problem=mk,
                n_init=n_init,
                budget=budget,
                description=_DESCRIPTION.format(D=D),
                hidden={
                    "function": fn,
                    "effective_dims": k,
                    "active_dims": list(p.active_dims),
                    "embedding_seed": e,
                },
            )
        )
    tasks.append(
        HDBOTask(
            name="rover60",
            split=split,
            make_problem=lambda s: rover(seed=s),
            n_init=n_init,
            budget=budget,
            description=_DESCRIPTION.format(D=60),
            hidden={"function": "rover", "effective_dims": 60, "obstacles": 113},
        )
    )
    d, ds = lasso_cfg[split]

    def mk_lasso(s: int, d: int = d, ds: int = ds) -> HDBOProblem:
        return lasso(d, data_seed=ds, seed=s)

    tasks.append(
        HDBOTask(
            name=f"lasso{d}_s{ds}",
            split=split,
            make_problem=mk_lasso,
            n_init=n_init,
            budget=budget,
            description=_DESCRIPTION.format(D=d),
            hidden={"function": "lasso", "effective_dims": d, "data_seed": ds},
        )
    )
    for i, t in enumerate(tasks):
        t.agent_name = f"task-{i + 1:02d}"
    return tasks


_DESCRIPTION = "Minimise an expensive black-box function of {D} inputs scaled to [0, 1]."
"""The one description every hdbo task gets: the input dimension and nothing else."""


class HDBOBenchmark(SuiteHooks):
    """High-dimensional BO suite (synthetic embedded functions, rover, synthetic LassoBench)."""

    name = "hdbo"
    splits = SPLITS
    description = (
        "High-dimensional BO: embedded Levy/Hartmann/Branin, Ackley/Rosenbrock/Styblinski-Tang, "
        "60-d rover, synthetic LassoBench; best value after the budget"
    )

    def __init__(self, protocol: str = "ci") -> None:
        if protocol not in PROTOCOLS:
            raise ConfigError(f"unknown hdbo protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
        self.protocol = protocol

    def tasks(self, split: str = "dev") -> list[HDBOTask]:
        """All tasks of ``split``."""
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
        n_init, budget = PROTOCOLS[self.protocol]
        return _tasks(split, n_init, budget)

"""``protein``: rank candidate variants of a protein for a property, offline.

Each task is a hidden fitness landscape (``landscape.py``: synthetic, seeded, with tunable
epistasis; thermostability-like or solubility-like), a wild type with a predicted
secondary structure and burial profile (public, noisy), a held-in pool of variants whose
fitness an agent may *measure* (``measure``, within its budget of measurements: the
rollouts), and a test pool it never sees. A candidate is a strategy of expertise blocks
(``optiforge.solvers.protein.strategy``); ``evaluate`` runs it in the sandbox on the test
pool, ranks the pool and scores the ranking against the hidden fitness with the metrics
of ``metrics.py`` (pass@5, MRR, MAP, NDCG@5, NDCG@30, recall@30, Spearman; NDCG@5 is
the task's value). Reports add
each metric's mean and 95% interval over seeds per method, and, separately, the
physicochemical proxies (instability index, GRAVY; Biopython) of each strategy's top 5
against the wild type's.

dev: four landscapes (two per property, epistasis 0.3 and 0.8); heldout: four others
(other seeds, lengths and epistasis 0.5 and 1.2).

Heldout landscapes are **drawn**: the generator and the task table are public (a
strategy's block code could carry them), so each heldout task mixes a secret
(``secrets.token_bytes``, drawn when the task is built: once per result row) into its
seed. The draw reaches no sandbox and no description; it is written to the score's
details (``landscape_draw``) once evaluation is over, and ``heldout_task(name, draw)``
rebuilds that exact landscape. Heldout numbers therefore vary per draw: every row (seed)
is a fresh landscape, and the mean and interval over seeds average over the draws.
Dev landscapes stay fixed. No PyPI package ships GB1 or TrpB
fitness tables (see ``landscape.py``), so none is included.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from optiforge.errors import ConfigError
from optiforge.evals.protocol import Score, SuiteHooks
from optiforge.evals.suites.protein.landscape import Landscape
from optiforge.evals.suites.protein.metrics import ranking_metrics

_RUNNER = "from optiforge.solvers.protein.strategy import run_request\nrun_request()\n"
CHUNK = 24
"""Strategies scored per sandbox run (its output is capped at 1 MiB: one strategy's
scores on 300 variants are about 20 kB)."""
POOL = 600
"""Variants per landscape: the first half held in (measurable), the second the test pool."""


@dataclass
class ProteinTask:
    """One landscape (see the module doc)."""

    name: str
    split: str
    landscape: Landscape = field(repr=False)
    budget: int = 120
    """Measurements (oracle calls) one run may spend on held-in variants."""
    draw: str | None = field(default=None, repr=False)
    """Hex secret mixed into a heldout landscape's seed (None: a fixed dev landscape)."""
    suite: str = "protein"
    metric: str = "ndcg@5"
    higher_is_better: bool = True
    timeout_s: float = 60.0

    @property
    def description(self) -> str:
        ls = self.landscape
        return (f"Rank variants of a {ls.length}-residue protein (wild type {ls.wt}) by "
                f"predicted {ls.property}. Predicted secondary structure (DSSP-style letters "
                f"H, E, C): {ls.pred_ss}. Each variant carries 1-3 substitutions. Measurements "
                f"of held-in variants are budgeted ({self.budget}); the ranking is judged on "
                "variants never measured.")  # fmt: skip

    @property
    def context(self) -> dict[str, Any]:
        """What a strategy sees besides the variant (public: predictions, not the truth)."""
        ls = self.landscape
        return {"wt": ls.wt, "burial": ls.pred_burial, "ss": ls.pred_ss, "property": ls.property}

    @cached_property
    def _pools(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        pool = self.landscape.pool(POOL)
        half = POOL // 2
        test = [{**v, "id": i} for i, v in enumerate(pool[half:])]
        return pool[:half], test

    @property
    def heldin(self) -> list[dict[str, Any]]:
        """The variants an agent may measure (ids 0..n-1)."""
        return self._pools[0]

    def measure(self, ids: list[int]) -> list[float]:
        """The measured fitness of held-in variants ``ids`` (higher is better; the wild type
        is about 0). The agent counts these against its budget."""
        pool = self.heldin
        bad = [i for i in ids if not 0 <= int(i) < len(pool)]
        if bad:
            raise ConfigError(f"no held-in variant {bad[0]} (ids 0..{len(pool) - 1})")
        return [self.landscape.fitness(pool[int(i)]["sequence"]) for i in ids]

    def score_strategies(
        self, strategies: list[dict[str, Any]], sandbox: Any | None = None, *, pool: str = "heldin"
    ) -> list[dict[str, Any]]:
        """Run ``strategies`` in the sandbox on a pool: per strategy ``{"scores", "blocks",
        "errors"}`` in pool order (``pool``: ``heldin``; the harness alone uses ``test``)."""
        from optiforge.sandboxes import get_sandbox
        from optiforge.sandboxes.payload import package_files

        variants = self.heldin if pool == "heldin" else self._pools[1]
        sandbox = sandbox or get_sandbox("local")
        if len(strategies) > CHUNK:  # a run's output is capped: a few strategies per run
            return [out for k in range(0, len(strategies), CHUNK)
                    for out in self.score_strategies(strategies[k:k + CHUNK], sandbox, pool=pool)]  # fmt: skip
        files: dict[str, str | bytes] = {}
        files |= package_files("optiforge.errors", "optiforge.solvers.protein")
        files["request.json"] = json.dumps({"strategies": strategies, "ctx": self.context,
                                            "pool": variants})  # fmt: skip
        files["run.py"] = _RUNNER
        python = str(getattr(sandbox, "python", None) or "python3")
        res = sandbox.run([python, "run.py"], files=files, timeout_s=self.timeout_s, memory_mb=1024)
        if res.timed_out or res.returncode != 0:
            why = "timed out" if res.timed_out else f"exit {res.returncode}: {res.stderr[-400:]}"
            raise RuntimeError(f"strategy run failed: {why}")
        return list(json.loads(res.stdout.strip().splitlines()[-1]))

    def evaluate(self, candidate: Any, sandbox: Any | None = None) -> Score:
        """Rank the test pool with the strategy (in the sandbox); score the ranking."""
        strategy = candidate if isinstance(candidate, dict) else json.loads(str(candidate))
        if not isinstance(strategy, dict) or not strategy.get("blocks"):
            return Score(value=0.0, passed=False, details={"reason": "a strategy needs blocks"})
        try:
            out = self.score_strategies([strategy], sandbox, pool="test")[0]
        except (RuntimeError, ValueError) as e:
            return Score(value=0.0, passed=False, details={"reason": str(e)[:500]})
        if out["errors"]:
            name, why = next(iter(out["errors"].items()))
            return Score(value=0.0, passed=False, details={"reason": f"block {name}: {why}"})
        test = self._pools[1]
        truth = [self.landscape.fitness(v["sequence"]) for v in test]
        scores = out["scores"]
        ranking = sorted(range(len(test)), key=lambda i: (-scores[i], i))
        metrics = ranking_metrics(ranking, truth, scores=scores)
        metrics |= _proxies([test[i]["sequence"] for i in ranking[:5]], self.landscape.wt)
        details: dict[str, Any] = {"top5": [test[i]["mutations"] for i in ranking[:5]]}
        if self.draw is not None:  # evaluation is over: the draw may be recorded now
            details["landscape_draw"] = self.draw
        return Score(value=metrics["ndcg@5"], passed=True, metrics=metrics, details=details)


def _proxies(top: list[str], wt: str) -> dict[str, float]:
    """Mean instability index and GRAVY of the top variants, minus the wild type's."""
    from optiforge.solvers.protein.proxies import proxies

    base = proxies(wt)
    ps = [proxies(s) for s in top]
    return {f"proxy_{k}_delta": sum(p[k] for p in ps) / len(ps) - base[k]
            for k in ("instability_index", "gravy")}  # fmt: skip


_SPECS = [  # name, split, property, seed, length, epistasis
    ("thermostability-a", "dev", "thermostability", 101, 40, 0.3),
    ("thermostability-b", "dev", "thermostability", 102, 48, 0.8),
    ("solubility-a", "dev", "solubility", 201, 40, 0.3),
    ("solubility-b", "dev", "solubility", 202, 44, 0.8),
    ("thermostability-c", "heldout", "thermostability", 303, 52, 0.5),
    ("thermostability-d", "heldout", "thermostability", 304, 36, 1.2),
    ("solubility-c", "heldout", "solubility", 403, 50, 0.5),
    ("solubility-d", "heldout", "solubility", 404, 38, 1.2),
]


def drawn_seed(seed: int, draw: str) -> int:
    """The generator seed of a heldout landscape: its public seed mixed with a secret."""
    digest = hashlib.sha256(seed.to_bytes(8, "big") + bytes.fromhex(draw)).digest()
    return int.from_bytes(digest[:8], "big")


def _task(spec: tuple[str, str, str, int, int, float], draw: str | None) -> ProteinTask:
    name, split, prop, seed, length, eps = spec
    if split == "heldout" and draw is None:
        draw = secrets.token_bytes(16).hex()
    real = seed if draw is None else drawn_seed(seed, draw)
    return ProteinTask(
        name=name, split=split, landscape=Landscape(name, prop, real, length, eps), draw=draw
    )


def heldout_task(name: str, draw: str) -> ProteinTask:
    """The heldout task ``name`` with the landscape of ``draw`` (a row's recorded
    ``landscape_draw``): reproduce a heldout result after the run."""
    spec = next((s for s in _SPECS if s[0] == name and s[1] == "heldout"), None)
    if spec is None:
        known = ", ".join(s[0] for s in _SPECS if s[1] == "heldout")
        raise ConfigError(f"no heldout protein task {name!r} (heldout: {known})")
    try:
        bytes.fromhex(draw)
    except ValueError:
        raise ConfigError(f"a landscape draw is hex, not {draw!r}") from None
    return _task(spec, draw)


class ProteinBenchmark(SuiteHooks):
    """The ``protein`` suite (see the module doc)."""

    name = "protein"
    description = "Rank protein variants for thermostability- or solubility-like fitness (synthetic landscapes with epistasis)"
    splits = ("dev", "heldout")

    def tasks(self, split: str = "dev") -> list[ProteinTask]:
        self.check_split(split)
        return [_task(spec, None) for spec in _SPECS if spec[1] == split]

    def notes(self, split: str, settings: Any = None) -> list[str]:
        if split != "heldout":
            return []
        return ["Heldout landscapes are drawn per row from a secret (the generator is public): "
                "numbers vary per draw, and the mean and interval over seeds average over draws. "
                "Each row's verification details record its landscape_draw; "
                "optiforge.evals.suites.protein.heldout_task(name, draw) rebuilds it."]  # fmt: skip

    def suite_metrics(self, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Per method: every ranking metric's mean and 95% interval over seeds (each seed's
        mean over tasks), and the proxies of the top 5 (reported apart from fitness)."""
        from optiforge.evals.stats import metrics_over_seeds

        out = metrics_over_seeds(rows)
        return out or None

    def report_sections(self, summary: dict[str, Any]) -> list[str]:
        sm = summary.get("suite_metrics") or {}
        if not sm:
            return []
        keys = ["pass@5", "mrr", "map", "ndcg@5", "ndcg@30", "recall@30", "spearman"]
        lines = ["## Ranking metrics", "",
                 "Mean over tasks, ± the 95% t-interval over seeds (metrics: the suite docs).", "",
                 "| method | " + " | ".join(keys) + " | top-5 instability Δ | top-5 GRAVY Δ |",
                 "|---" * (len(keys) + 3) + "|"]  # fmt: skip

        def cell(d: dict[str, Any] | None) -> str:
            if not d:
                return "-"
            return f"{d['mean']:.3f}" + ("" if d.get("ci95") is None else f" ± {d['ci95']:.3f}")

        for method, m in sm.items():
            cells = [cell(m.get(k)) for k in keys]
            cells += [
                cell(m.get("proxy_instability_index_delta")),
                cell(m.get("proxy_gravy_delta")),
            ]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        return ["\n".join(lines)]

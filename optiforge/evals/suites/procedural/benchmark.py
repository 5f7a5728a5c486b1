"""``procedural``: build tools from examples, then use them (SMITH), with exact verifiers.

A task is an episode over some task families (``families.py``: 9 training and 4 held-out
procedural families, and 2 out-of-domain ones: TabMWP-style price tables and scene-graph
counts). For each family the agent sees a **build task**: ``K_EXAMPLES`` example
questions with their answers (never the family's name or its description), and writes a
tool (``{"name", "description", "parameters", "code"}``: see ``rewards.py``). It may check
a tool on validation instances of its own (``validate``: the three reward axes, and the
first failing instance). Then come the **use tasks**: ``N_USE`` new questions per family,
shuffled, without answers; for each the agent emits up to ``PASS_K`` function calls
against its pool of tools.

``evaluate`` re-measures everything in the sandbox, on instances the agent never saw:
every tool is validated on ``N_CHECK`` fresh generator instances per family (all
levels), and every call is run and checked by the strict verifier. The value is pass@1
macro-accuracy over the episode's families (the first call per question); metrics add
pass@k, the build pass rate (tools passing all three axes on the harness's instances),
the reuse rate (questions whose first call goes through a pool tool), the pool size and
each axis's mean over build and over use rollouts.

Splits: ``dev`` (the 9 training families; the only ones a training script may use),
``heldout`` (the 4 held-out families, the price tables and the scene graphs: families no
training saw).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from optiforge.errors import ConfigError
from optiforge.evals.protocol import Score, SuiteHooks
from optiforge.evals.suites.procedural.families import FAMILIES, Family, instances
from optiforge.evals.suites.procedural.rewards import (
    build_rewards,
    run_calls,
    tool_batch,
    use_rewards,
)

K_EXAMPLES = 3
N_VALIDATE = 6
N_CHECK = 9
N_USE = 4
PASS_K = 3
AXES = ("schema", "code", "outcome")
# Instance streams: examples, the agent's validation, the harness's check, use questions.
_EXAMPLES, _VALIDATE, _CHECK, _USE = 0, 100_000, 200_000, 300_000


@dataclass
class ProceduralTask:
    """One episode (see the module doc)."""

    name: str
    split: str
    family_names: list[str] = field(repr=False)
    seed: int = 0
    suite: str = "procedural"
    metric: str = "accuracy"
    higher_is_better: bool = True
    budget: int | None = None
    """Tool validations the agent may spend (default: 3 per build task)."""
    timeout_s: float = 120.0

    def __post_init__(self) -> None:
        if self.budget is None:
            self.budget = 3 * len(self.family_names)

    @property
    def description(self) -> str:
        return (f"Build a Python tool for each of {len(self.family_names)} task families from "
                f"{K_EXAMPLES} solved examples each, then answer {N_USE} new questions per family "
                "by calling tools from the pool with JSON arguments; answers are checked exactly.")  # fmt: skip

    @property
    def families(self) -> list[Family]:
        return [FAMILIES[n] for n in self.family_names]

    @cached_property
    def build_tasks(self) -> list[dict[str, Any]]:
        """``[{"id", "examples": [{"question", "answer"}]}]``, one per family."""
        out = []
        for i, fam in enumerate(self.families):
            ex = instances(fam, _EXAMPLES + self.seed, K_EXAMPLES)
            out.append(
                {
                    "id": f"b{i}",
                    "examples": [{"question": e["question"], "answer": e["answer"]} for e in ex],
                }
            )
        return out

    @cached_property
    def _use(self) -> list[dict[str, Any]]:
        items = []
        for i, fam in enumerate(self.families):
            for j, inst in enumerate(instances(fam, _USE + self.seed, N_USE)):
                items.append(
                    {
                        "id": f"q{i}_{j}",
                        "family": i,
                        "question": inst["question"],
                        "answer": inst["answer"],
                    }
                )
        order = np.random.default_rng(self.seed).permutation(len(items))
        return [items[k] for k in order]

    @property
    def use_questions(self) -> list[dict[str, str]]:
        """``[{"id", "question"}]`` (answers hidden), families interleaved."""
        return [{"id": q["id"], "question": q["question"]} for q in self._use]

    def _family_of(self, build_id: Any) -> Family:
        ids = {b["id"]: i for i, b in enumerate(self.build_tasks)}
        if build_id not in ids:
            raise ConfigError(f"no build task {build_id!r} (build tasks: {', '.join(ids)})")
        return self.families[ids[build_id]]

    def validate(
        self, build_id: str, tool: Any, sandbox: Any | None = None, seed: int = 0
    ) -> dict[str, Any]:
        """The three axes of ``tool`` on ``N_VALIDATE`` validation instances of the build
        task's family (the agent's own: not the harness's check instances, not the use
        questions), with the first failing instance (its expected answer included)."""
        return self.check_tools([(self._family_of(build_id), tool)], _VALIDATE + 1000 * seed + self.seed, N_VALIDATE,
                                sandbox)[0]  # fmt: skip

    def with_seed(self, seed: int) -> ProceduralTask:
        """The same families with other examples and questions (e.g. a training script's
        episodes: seeds other than the suite's own)."""
        return ProceduralTask(name=f"{self.name}#{seed}", split=self.split, family_names=list(self.family_names),
                              seed=seed, budget=self.budget)  # fmt: skip

    def score_calls(self, calls: dict[str, dict[str, Any]], pool: list[dict[str, Any]],
                    sandbox: Any | None = None) -> dict[str, dict[str, Any]]:  # fmt: skip
        """The three use-rollout axes of one call per question id (a reward for training:
        the answers stay hidden), all calls in one sandbox run."""
        by_name = {t["name"]: t for t in pool if _callable(t)}
        answers = {q["id"]: q["answer"] for q in self._use}
        todo = [(qid, c) for qid, c in calls.items() if qid in answers]
        runnable = [(qid, c) for qid, c in todo if isinstance(c, dict) and c.get("name") in by_name
                    and isinstance(c.get("arguments"), dict)]  # fmt: skip
        recs = run_calls([{"code": by_name[c["name"]]["code"], "name": c["name"], "calls": [{"kwargs": c["arguments"]}]}
                          for _, c in runnable], sandbox, self.timeout_s)  # fmt: skip
        got = {qid: r[0] for (qid, _), r in zip(runnable, recs, strict=True)}
        out = {}
        for qid, c in todo:
            r = use_rewards(c, by_name, answers[qid], got.get(qid))
            out[qid] = {ax: r[ax] for ax in AXES}
        return out

    def check_tools(self, pairs: list[tuple[Family, Any]], stream: int, count: int,
                    sandbox: Any | None = None) -> list[dict[str, Any]]:  # fmt: skip
        """Build rewards of each ``(family, tool)`` on ``count`` instances of ``stream``,
        all tools in one sandbox run."""
        from optiforge.evals.suites.procedural.rewards import schema_check

        insts = [instances(fam, stream, count) for fam, _ in pairs]
        runnable = [i for i, (_, tool) in enumerate(pairs) if _callable(tool)]
        records = run_calls(
            [tool_batch(pairs[i][1], insts[i]) for i in runnable], sandbox, self.timeout_s
        )
        by_index = dict(zip(runnable, records, strict=True))
        out = []
        for i, (_, tool) in enumerate(pairs):
            out.append(build_rewards(tool, insts[i], by_index.get(i)))
            if i not in by_index:
                out[-1]["schema_error"] = schema_check(tool)[1] or "not runnable"
        return out

    def evaluate(self, candidate: Any, sandbox: Any | None = None) -> Score:
        """Re-measure a candidate ``{"tools": [{..., "build": id | None}], "calls":
        {question id: [call, ...]}}`` (see the module doc)."""
        if isinstance(candidate, str):
            try:
                candidate = json.loads(candidate)
            except json.JSONDecodeError:
                candidate = None
        if not isinstance(candidate, dict) or not isinstance(candidate.get("tools", []), list) \
                or not isinstance(candidate.get("calls", {}), dict):  # fmt: skip
            return Score(
                value=0.0,
                passed=False,
                details={"reason": 'a candidate is {"tools": [...], "calls": {...}}'},
            )
        tools = [t for t in candidate.get("tools", []) if isinstance(t, dict)]
        pool = {t["name"]: t for t in tools if _callable(t)}
        built = [(t.get("build"), t) for t in tools if t.get("build") is not None]
        pairs, ids = [], []
        for bid_any, t in built:
            bid = str(bid_any)
            try:
                pairs.append((self._family_of(bid), t))
                ids.append(bid)
            except ConfigError:
                continue
        checks = self.check_tools(pairs, _CHECK + self.seed, N_CHECK, sandbox)
        best: dict[str, dict[str, Any]] = {}
        for bid, chk in zip(ids, checks, strict=True):  # a build task's best tool counts
            if bid not in best or chk["outcome"] > best[bid]["outcome"]:
                best[bid] = chk
        # use: every call of every question, one sandbox run
        calls = candidate.get("calls", {})
        flat: list[tuple[int, int, Any]] = []
        for qi, q in enumerate(self._use):
            for ki, call in enumerate((calls.get(q["id"]) or [])[:PASS_K]):
                flat.append((qi, ki, call))
        runnable = [(qi, ki, c) for qi, ki, c in flat
                    if isinstance(c, dict) and c.get("name") in pool and isinstance(c.get("arguments"), dict)]  # fmt: skip
        batches = [{"code": pool[c["name"]]["code"], "name": c["name"], "calls": [{"kwargs": c["arguments"]}]}
                   for _, _, c in runnable]  # fmt: skip
        records = {
            (qi, ki): r[0]
            for (qi, ki, _), r in zip(
                runnable, run_calls(batches, sandbox, self.timeout_s), strict=True
            )
        }
        per_q: dict[int, list[dict[str, Any]]] = {}
        for qi, ki, call in flat:
            per_q.setdefault(qi, []).append(
                use_rewards(call, pool, self._use[qi]["answer"], records.get((qi, ki)))
            )
        fam_first: dict[int, list[float]] = {}
        fam_any: dict[int, list[float]] = {}
        reuse = 0
        for qi, q in enumerate(self._use):
            rs = per_q.get(qi, [])
            fam_first.setdefault(q["family"], []).append(rs[0]["outcome"] if rs else 0.0)
            fam_any.setdefault(q["family"], []).append(max((r["outcome"] for r in rs), default=0.0))
            reuse += int(bool(rs) and rs[0]["schema_error"] != "no function call"
                         and not str(rs[0]["schema_error"]).startswith("no tool"))  # fmt: skip
        none = {"schema": 0.0, "code": 0.0, "outcome": 0.0}
        use_all = [per_q[qi][0] if per_q.get(qi) else none for qi in range(len(self._use))]
        n_fam = len(self.families)
        acc = sum(float(np.mean(fam_first.get(i, [0.0]))) for i in range(n_fam)) / n_fam
        metrics = {
            "accuracy": acc,
            f"pass@{PASS_K}": sum(float(np.mean(fam_any.get(i, [0.0]))) for i in range(n_fam))
            / n_fam,
            "build_pass_rate": sum(1 for c in best.values() if c["passed"]) / n_fam,
            "reuse_rate": reuse / max(len(self._use), 1),
            "pool_size": float(len(pool)),
            "calls_per_question": len(flat) / max(len(self._use), 1),
        }
        for ax in AXES:
            metrics[f"build_{ax}"] = sum(c[ax] for c in best.values()) / n_fam
            metrics[f"use_{ax}"] = float(np.mean([r[ax] for r in use_all])) if use_all else 0.0
        per_family = {self.families[i].name: {
            "accuracy": float(np.mean(fam_first.get(i, [0.0]))),
            "built": bool(best.get(f"b{i}", {}).get("passed", False))} for i in range(n_fam)}  # fmt: skip
        rollouts = [{"question": q["id"], "call": ki, **{ax: r[ax] for ax in AXES}}
                    for qi, q in enumerate(self._use) for ki, r in enumerate(per_q.get(qi, []))]  # fmt: skip
        builds = [
            {"build": bid, **{ax: c[ax] for ax in AXES}, "passed": c["passed"]}
            for bid, c in best.items()
        ]
        return Score(value=acc, passed=True, metrics=metrics,
                     details={"families": per_family, "use_rollouts": rollouts, "build_rollouts": builds})  # fmt: skip


def _callable(tool: Any) -> bool:
    """Whether a tool can be run at all (a name and code strings); the schema axis judges
    the rest."""
    return isinstance(tool, dict) and isinstance(tool.get("name"), str) and isinstance(tool.get("code"), str) \
        and tool["name"].isidentifier()  # fmt: skip


_SPLITS = {
    "dev": [("train-families", "train")],
    "heldout": [("heldout-families", "heldout"), ("table-questions", "table_question"),
                ("scene-graphs", "scene_graph_count")],
}  # fmt: skip


class ProceduralBenchmark(SuiteHooks):
    """The ``procedural`` suite (see the module doc)."""

    name = "procedural"
    description = (
        "Build tools from examples and use them by function calling (SMITH), exact verifiers"
    )
    splits = ("dev", "heldout")

    def suite_metrics(self, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Per method: every metric's mean and 95% interval over seeds (each seed's mean
        over the split's tasks)."""
        from optiforge.evals.stats import metrics_over_seeds

        return metrics_over_seeds(rows) or None

    def report_sections(self, summary: dict[str, Any]) -> list[str]:
        from optiforge.evals.stats import metrics_table

        sm = summary.get("suite_metrics") or {}
        if not sm:
            return []
        return ["## Build and use", "", "Mean over tasks ± the 95% t-interval over seeds; the axes are the "
                "means over build rollouts (the best tool per build task, on the harness's instances) and "
                "over use rollouts (the first call per question).", "",
                *metrics_table(sm, ["accuracy", f"pass@{PASS_K}", "build_pass_rate", "reuse_rate", "pool_size"]),
                "", *metrics_table(sm, [f"{kind}_{ax}" for kind in ("build", "use") for ax in AXES])]  # fmt: skip

    def tasks(self, split: str = "dev") -> list[ProceduralTask]:
        from optiforge.evals.suites.procedural.families import by_domain

        self.check_split(split)
        out = []
        for name, what in _SPLITS[split]:
            fams = [f.name for f in by_domain(what)] if what in ("train", "heldout") else [what]
            out.append(ProceduralTask(name=name, split=split, family_names=fams))
        return out


__all__ = ["ProceduralBenchmark", "ProceduralTask"]

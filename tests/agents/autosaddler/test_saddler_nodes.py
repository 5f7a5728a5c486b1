"""AutoSaddler's graph nodes called directly, on a tiny target: a harness with one knob
(``steps``) whose episodes pass exactly when the task's need fits in it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.graph import END
from langgraph.runtime import Runtime

from optiforge.agents.autosaddler import SPEC, SaddlerConfig, nodes
from optiforge.agents.autosaddler.problem import Target
from optiforge.agents.kit.context import AgentContext
from optiforge.agents.kit.harness import Patch
from optiforge.evals.protocol import Score


@dataclass
class KnobHarness:
    steps: int = 1

    @property
    def version(self) -> str:
        return f"steps{self.steps}"

    def files(self) -> dict[str, str]:
        return {"steps": str(self.steps)}

    def apply(self, patch: Patch) -> KnobHarness:
        return KnobHarness(int(patch.value))


@dataclass
class NeedTask:
    name: str
    need: int
    suite: str = "toy"
    split: str = "dev"
    metric: str = "passed"
    higher_is_better: bool = True
    description: str = "needs steps"
    budget: int | None = None

    def evaluate(self, candidate: Any, sandbox: Any = None) -> Score:
        return Score(value=0.0, passed=False)


def _more_steps(h: KnobHarness) -> Patch | None:
    return Patch(target="steps", value=h.steps + 1, why="it ran out of steps")


@dataclass
class KnobTarget:
    name: str = "knob"
    categories: dict[str, str] = field(default_factory=lambda: {"step_limit": "ran out"})
    library: dict[str, list[Any]] = field(default_factory=lambda: {"step_limit": [_more_steps]})
    parts_doc: str = "- steps (int)"
    runs: list[tuple[str, str, int]] = field(default_factory=list)

    def base(self) -> KnobHarness:
        return KnobHarness()

    def load(self, files: dict[str, str]) -> KnobHarness:
        return KnobHarness(int(files["steps"]))

    def tasks(self, split: str) -> list[Any]:
        return [NeedTask(f"t{i}", need=1 + i % 2) for i in range(4)]

    def run(self, harness: Any, task: Any, seed: int) -> dict[str, Any]:
        self.runs.append((harness.version, task.name, seed))
        ok = harness.steps >= task.need
        return {"task": task.name, "seed": seed, "passed": ok, "stop": "done" if ok else "limit",
                "steps": harness.steps, "llm_calls": 0, "tokens": 0}  # fmt: skip

    def diagnose(self, ep: dict[str, Any], mode: str) -> dict[str, Any]:
        return {"category": "step_limit", "evidence": ep["stop"]}

    def render(self, ep: dict[str, Any], mode: str) -> str:
        return str(ep)


def _ctx(target: KnobTarget, **cfg: Any) -> nodes.Ctx:
    config = SaddlerConfig(batch=2, runs=1, val_tasks=2, val_runs=1, workers=1, **cfg)
    assert isinstance(target, Target) and isinstance(target, SPEC.task_type)
    return AgentContext(task=target, config=config, seed=3)


def test_start_splits_the_dev_tasks_and_runs_the_base_harness_on_validation() -> None:
    target = KnobTarget()
    state = nodes.start({}, Runtime(context=_ctx(target)))
    assert sorted(state["train"] + state["val"]) == ["t0", "t1", "t2", "t3"]
    assert len(state["val"]) == 2 and state["iteration"] == 0
    assert {r[0] for r in target.runs} == {"steps1"}  # only the base harness ran
    assert [(t, s) for _, t, s in target.runs] == [(v, nodes.VAL_SEED) for v in state["val"]]
    assert state["files"] == state["base_files"] == {"steps": "1"}


def test_a_round_gates_the_rule_patch_and_the_loop_stops_after_its_iterations() -> None:
    target = KnobTarget()
    ctx = _ctx(target, iterations=1)
    state: dict[str, Any] = dict(nodes.start({}, Runtime(context=ctx)))
    # a batch whose tasks need 2 steps, a validation set one of whose tasks does; no
    # validation results yet (the round measures the current harness itself)
    state.update(train=["t1", "t3"], val=["t0", "t1"], val_cache={}, val_causes={})
    seen: list[dict[str, Any]] = []
    ctx.memo(nodes.ON_ROUND, lambda: seen.append)
    state.update(nodes.iterate(state, Runtime(context=ctx)))  # type: ignore[arg-type]
    (rec,) = state["history"]
    assert seen == [rec] and rec["proposer"] == "rules" and rec["batch_pass"] == 0
    assert rec["diagnoses"] == {"step_limit": 2}
    assert rec["patches"][0]["target"] == "steps" and rec["patches"][0]["value"] == 2
    assert rec["accepted"] and rec["gate"]["wins"] == 1 and rec["gate"]["losses"] == 0
    assert state["files"] == {"steps": "2"} and state["tried"] == []
    assert nodes.more(state, Runtime(context=ctx)) == END  # type: ignore[arg-type]
    out = nodes.outcome(state, ctx)
    assert out.n_evaluations == 1 and out.extra["accepted"] == 1
    assert out.extra["history"] == [rec] and out.best_candidate == {"steps": "2"}

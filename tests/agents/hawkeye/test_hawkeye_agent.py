"""Hawkeye agent: materialize checks, autotuner proposals, offline eval end-to-end, scripted LLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from _kernels import GOOD_SOFTMAX, TORCH_SOFTMAX

from optiforge.agents.hawkeye import SPEC
from optiforge.agents.hawkeye.problem import KernelProblem
from optiforge.agents.hawkeye.proposers import AutotuneProposer, LLMKernelProposer
from optiforge.agents.kit import Evaluated, Proposal, RunContext, SearchConfig, run_search
from optiforge.config import RunSettings
from optiforge.errors import InvalidCandidate
from optiforge.evals.suites.kernelarena import KernelArenaBenchmark
from optiforge.harness.runner import run_eval
from optiforge.kernels.templates import read_params
from optiforge.testing import ScriptedLLM

BAD_SOFTMAX = TORCH_SOFTMAX


def _task(name: str, split: str = "dev"):  # type: ignore[no-untyped-def]
    return next(t for t in KernelArenaBenchmark().tasks(split) if t.name == name)


def test_spec_shape() -> None:
    assert SPEC.name == "hawkeye" and SPEC.default_benchmark == "kernelarena"
    assert list(SPEC.baselines) == ["reference", "autotune"]


def test_materialize_rejects_cheats_and_records_applied_strategies() -> None:
    problem = KernelProblem(_task("torch_softmax"), "interpreter")
    ctx = RunContext()
    with pytest.raises(InvalidCandidate, match="calls torch.softmax"):
        problem.materialize(Proposal(payload={"code": BAD_SOFTMAX}), ctx)
    with pytest.raises(InvalidCandidate, match="syntax error"):
        problem.materialize(Proposal(payload={"code": "def launch(:"}), ctx)
    payload = problem.materialize(
        Proposal(payload={"code": GOOD_SOFTMAX, "strategy": "shared_memory_staging"}), ctx
    )
    assert (
        "shared_memory_staging" in payload["applied"]
        and payload["strategy"] == "shared_memory_staging"
    )


def test_roofline_facts() -> None:
    mm = KernelProblem(_task("torch_matmul"), "sm90")
    assert mm.facts.bound == "compute" and mm.roofline["intensity"] > mm.roofline["ridge"]
    ew = KernelProblem(_task("t2t_add"), "sm80")
    assert ew.facts.bound == "memory" and ew.roofline["intensity"] < 1.0


def test_autotuner_proposes_untried_valid_neighbours() -> None:
    task = _task("t2t_matmul")
    problem = KernelProblem(task, "interpreter")
    tried = Evaluated(id="s", key="s", passed=True, value=1.0,
                      payload={"strategy": "tiling_autotune", "params": read_params(task.seed_code)})  # fmt: skip
    props = AutotuneProposer().propose_from_history(problem, [tried], [], 4, 1, RunContext(seed=3))
    params = [p.payload["params"] for p in props]
    assert len(props) == 4 and len({json.dumps(p, sort_keys=True) for p in params}) == 4
    seed = read_params(task.seed_code)
    assert seed not in params
    for p in props:
        assert read_params(p.payload["code"]) == p.payload["params"]
        problem.materialize(p, RunContext())  # every proposal passes the static checks
    # Roofline prior: the first neighbour moves one parameter toward the matmul preference.
    changed = {k for k, v in params[0].items() if seed[k] != v}
    assert len(changed) == 1


@pytest.mark.slow
def test_offline_eval_end_to_end_on_heldout(tmp_path: Path) -> None:
    settings = RunSettings(memory="none", budget=2)
    summary = run_eval("hawkeye", "kernelarena", settings, tmp_path / "ev", split="heldout", seeds=1,
                       baselines=[], tasks=["t2t_relu"])  # fmt: skip
    rows = [
        json.loads(line) for line in (tmp_path / "ev" / "results.jsonl").read_text().splitlines()
    ]
    agent = next(r for r in rows if r["method"] == "hawkeye")
    assert agent["verified"] and agent["verification"]["metrics"]["conditional_correctness"] == 1.0
    assert agent["extra"]["proposer"] == "autotune" and agent["n_evaluations"] == 2
    if not torch.cuda.is_available():  # on CPU the value is the cost model's, and says so
        assert agent["best_score"] >= 1.0 - 1e-9 and agent["metric"] == "cost_speedup"
        assert "cost model" in agent["extra"]["performance"]
        assert summary["tasks"]["t2t_relu"]["methods"]["hawkeye"]["mean"] >= 1.0 - 1e-9
        assert any("cost-model speedup" in n for n in summary["notes"])


def test_scripted_llm_bad_kernel_rejected_good_kernel_accepted(tmp_path: Path) -> None:
    reply = "Here is the kernel:\n```python\n{}```\n"
    llm = ScriptedLLM(outputs=[reply.format(BAD_SOFTMAX), reply.format(GOOD_SOFTMAX)])
    problem = KernelProblem(_task("torch_softmax"), "interpreter")
    # run_dir is required: run_search without one hits a langgraph error (durability with no checkpointer).
    from optiforge.memory import Store

    store = Store(f"sqlite:///{tmp_path / 'memory.db'}")
    ctx = RunContext(llm=llm, seed=0, run_dir=tmp_path / "run", memory=store, agent="hawkeye")
    result = run_search(problem, LLMKernelProposer(strategies_per_task=2), ctx,
                        SearchConfig(max_evaluations=2, proposals_per_round=1, max_rounds=3))  # fmt: skip
    seed, bad, good = result.history
    assert seed.passed and seed.origin == "seed"
    assert bad.error is not None and "calls torch.softmax" in bad.error
    assert good.passed and good.value > 0 and good.origin == "llm"
    assert "shared_memory_staging" in good.payload["applied"]
    # The second prompt carries the first attempt's failure reason and a strategy example.
    second = llm.calls[1][-1]["content"]
    assert "calls torch.softmax" in second and "@triton.jit" in second and "Roofline" in second
    assert result.lessons and any("failed" in lesson for lesson in result.lessons)
    # Lessons reached memory as Experience records (through the loop's reflect hook).
    lessons = [e.lesson for e in store.experiences(agent="hawkeye")]
    assert any("calls torch.softmax" in lesson for lesson in lessons)
    store.close()

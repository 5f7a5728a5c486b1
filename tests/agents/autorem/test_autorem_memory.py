"""Must-show: a failure is reflected into memory and a later instance retrieves it;
entries built with one model transfer to another through memory export/import."""

from __future__ import annotations

import json
from pathlib import Path

from autorem_helpers import fenced, instance, sloppy_model, task

from optiforge.agents.autorem import SPEC, AutoREMConfig
from optiforge.agents.autorem.adapt import adapt
from optiforge.agents.autorem.experience import EntryTrigger, ExperienceEntry, entry_from_experience
from optiforge.agents.autorem.proposers import counterpart_program
from optiforge.agents.kit import RunContext
from optiforge.evals.suites.autoro import AutoROBenchmark
from optiforge.llm import LiteLLM
from optiforge.memory import Store
from optiforge.runs import ListTracer
from optiforge.sandboxes import get_sandbox
from optiforge.testing import FunctionLLM

RULE = "Add rho * cp.norm1(P.T @ x) to the left side of every box-uncertain row."


class _OneSplit(AutoROBenchmark):
    """A benchmark whose split holds exactly the given tasks (no generation cost)."""

    def __init__(self, tasks: list) -> None:
        super().__init__(n_per_split=0)
        self._tasks = tasks

    def tasks(self, split: str = "dev") -> list:
        return list(self._tasks)


def test_failure_is_reflected_and_retrieved_over_http(openai_server, lexical_store) -> None:
    first, later = task("dev", 0, 1), task("dev", 5, 1)  # two different box instances
    assert first.instance.set_types == ["box"] and later.instance.set_types == ["box"]
    entry = ExperienceEntry(
        trigger=EntryTrigger(set_types=["box"], description="box-uncertain <= rows"),
        error_pattern="not robust-feasible: the rho ||P^T x||_1 term was missing",
        corrective_rule=RULE,
        example="lhs = a @ x + rho * cp.norm1(P.T @ x)",
    )
    openai_server.script(
        [
            fenced(counterpart_program(first.instance.problem, robust=False)),  # missing norm term
            fenced(counterpart_program(first.instance.problem)),  # repair after the verdict
            entry.model_dump_json(),  # reflection (structured output)
            fenced(counterpart_program(later.instance.problem)),
        ]
    )
    llm = LiteLLM("openai/test-model", api_base=openai_server.url, api_key="sk-test", timeout_s=30)
    tracer = ListTracer()
    ctx = RunContext(
        llm=llm, sandbox=get_sandbox("local"), memory=lexical_store, tracer=tracer, agent="autorem"
    )
    report = adapt(_OneSplit([first]), "dev", ctx, AutoREMConfig(reflector="llm"))
    assert (report.n_instances, report.n_solved, report.n_failures, report.n_entries_written) == (
        1,
        1,
        1,
        1,
    )
    assert report.llm_calls == 3
    # the repair prompt carried the verifier's reason; the reflection saw no answer
    repair_user = openai_server.requests[1]["messages"][-1]["content"]
    assert "not robust-feasible: row 0" in repair_user
    reflection = json.dumps(openai_server.requests[2]["messages"])
    assert "not robust-feasible" in reflection
    ref = first.instance.reference_objective
    assert f"{ref:.9g}" not in reflection and f"{ref:.6g}" not in reflection  # no answer leaked
    assert f"{ref:.9g}" not in repair_user
    stored = lexical_store.experiences(agent="autorem")
    assert len(stored) == 1 and entry_from_experience(stored[0]) == entry
    cands = lexical_store.candidates(agent="autorem")
    assert [c.status for c in cands] == ["rejected", "accepted"]
    assert cands[1].parent_ids == [cands[0].id]
    assert len(tracer.of("autorem_attempt")) == 2

    out = SPEC.build(later, AutoREMConfig(), None).execute(ctx)
    prompt = openai_server.requests[3]["messages"][1]["content"]
    assert RULE in prompt and "Lessons from earlier failures" in prompt
    assert out.extra["retrieved"] == 1 and out.extra["retrieved_ids"] == [stored[0].id]
    assert (
        out.extra["solved"] is True and out.extra["attempts"] == 1 and out.extra["llm_calls"] == 1
    )
    assert later.evaluate(out.best_candidate, get_sandbox("local")).passed


def test_memory_built_with_model_a_helps_model_b_after_export_import(
    tmp_path: Path, lexical_store
) -> None:
    train, fresh = task("dev", 0, 1), task("dev", 10, 1)
    model_a = FunctionLLM(sloppy_model, model="sim/model-a")
    ctx_a = RunContext(
        llm=model_a, sandbox=get_sandbox("local"), memory=lexical_store, agent="autorem"
    )
    report = adapt(_OneSplit([train]), "dev", ctx_a, AutoREMConfig(reflector="rules"))
    assert report.n_failures == 1 and report.n_entries_written >= 1
    dump = tmp_path / "memory.jsonl"
    assert lexical_store.export_jsonl(dump)["experience"] == report.n_entries_written

    other = Store(f"sqlite:///{tmp_path / 'other.db'}", embedder=None)
    try:
        assert other.import_jsonl(dump)["experience"] == report.n_entries_written
        model_b = FunctionLLM(sloppy_model, model="sim/model-b")
        ctx_b = RunContext(llm=model_b, sandbox=get_sandbox("local"), memory=other, agent="autorem")
        out = SPEC.build(fresh, AutoREMConfig(), None).execute(ctx_b)
        assert out.extra["retrieved"] >= 1 and set(out.extra["retrieved_ids"]) <= set(
            report.entry_ids
        )
        assert (
            out.extra["solved"] is True and out.extra["attempts"] == 1
        )  # first try, thanks to A's lesson
        prompt = model_b.calls[0][1]["content"]
        assert "lam + mu" not in prompt or "budget" in fresh.instance.set_types
        assert "rho * ||P^T x||_1" in prompt  # the box rule distilled from model A's failure
        models = {
            json.loads(e.trajectory_summary)["model"] for e in other.experiences(agent="autorem")
        }
        assert models == {"sim/model-a"}
    finally:
        other.close()
    assert instance("dev", 10, 1).id != instance("dev", 0, 1).id

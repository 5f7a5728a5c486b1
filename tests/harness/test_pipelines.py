"""Pipelines: the YAML format, a two-agent pipeline offline and with a scripted LLM,
conditional edges, the one ledger/log/memory, kill -9 mid-pipeline and resume, the CLI."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from _resume import kill_at_block, logging_model, read_prompts

from optiforge.agents.agent_cbo.testing import true_graph_llm
from optiforge.config import RunSettings
from optiforge.errors import ConfigError
from optiforge.evals.registry import resolve_task
from optiforge.harness.pipelines import load_pipeline, parse_pipeline, run_pipeline
from optiforge.harness.pipelines.run import meets
from optiforge.runs import iter_events
from optiforge.testing import FunctionLLM

ROOT = Path(__file__).resolve().parents[2]

TWO_AGENTS = {
    "name": "two-agents",
    "description": "evolve, then agent-CBO; a failed evolve run is diagnosed",
    "nodes": [
        {"id": "fit", "agent": "evolve", "task": "funcfit/sine@dev", "budget": 7,
         "set": {"agent.search.proposals_per_round": 2},
         "next": [{"when": "failed", "to": "why"}, {"to": "cbo"}]},
        {"id": "cbo", "agent": "agent-cbo", "task": "cbo/toy_graph@dev", "budget": 8,
         "set": {"agent.llm_every": 2}, "next": "end"},
        {"id": "why", "step": "diagnose", "input": "fit"},
    ],
}  # fmt: skip


def _write(tmp: Path, data: dict[str, Any]) -> Path:
    p = tmp / f"{data['name']}.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


# ----------------------------------------------------------------------------- the format


def test_bundled_pipelines_validate() -> None:
    files = sorted((ROOT / "configs" / "pipelines").glob("*.yaml"))
    assert len(files) >= 2
    for f in files:
        spec = load_pipeline(f)
        assert spec.name == f.stem


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, "colour: Extra inputs are not permitted"),
        ({"nodes": [{"id": "a", "agent": "nope", "task": "funcfit/sine"}]}, "unknown agent"),
        ({"nodes": [{"id": "a", "agent": "evolve", "task": "funcfit/nope"}]}, "no task 'nope'"),
        ({"nodes": [{"id": "a", "agent": "evolve", "task": "cbo/toy_graph"}]}, "evolve runs on"),
        ({"nodes": [{"id": "a", "agent": "evolve", "task": "funcfit/sine", "next": "b"}]},
         "next 'b' is not a node id"),
        ({"nodes": [{"id": "a", "step": "diagnose"}]}, "first step node needs an 'input'"),
        ({"nodes": [{"id": "a", "step": "fix", "input": "a"}]}, "no step 'fix'"),
        ({"nodes": [{"id": "a", "agent": "evolve"}]}, "needs a 'task'"),
        ({"nodes": [{"id": "a", "agent": "evolve", "task": "funcfit/sine",
                     "set": {"seed": "${b.artifact.x}"}}]}, "${b...} is not a node id"),
        ({"nodes": [{"id": "a", "agent": "evolve", "task": "funcfit/sine"},
                    {"id": "a", "agent": "evolve", "task": "funcfit/sine"}]}, "unique"),
        # a baseline is checked against the task family's own (the formulator reads two)
        ({"nodes": [{"id": "a", "agent": "formulator", "task": "train/digits-mlp", "method": "human"}]},
         "formulator has no baseline 'human' (baselines: adamw, tuned)"),
    ],
)  # fmt: skip
def test_bad_pipelines_fail_with_one_clear_line(change: dict[str, Any], message: str) -> None:
    data = {"name": "p", "description": "d", "nodes": TWO_AGENTS["nodes"][:1], **change}
    with pytest.raises(ConfigError) as err:
        parse_pipeline(data)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_node_may_run_its_task_familys_baseline() -> None:
    for task, method in (("train/digits-mlp", "tuned"), ("bbowp/svm-tumours", "human")):
        node = {"id": "a", "agent": "formulator", "task": task, "method": method}
        spec = parse_pipeline({"name": "p", "description": "d", "nodes": [node]})
        assert spec.nodes[0].method == method


def test_edge_conditions() -> None:
    ok = {"kind": "agent", "status": "finished", "best_score": 1.0, "baseline_score": 2.0,
          "higher_is_better": False}  # fmt: skip
    assert meets("succeeded", ok) and not meets("failed", ok) and meets("beat_baseline", ok)
    assert meets("missed_baseline", {**ok, "higher_is_better": True})
    bad = {"kind": "agent", "status": "failed", "best_score": None}
    assert meets("failed", bad) and meets("missed_baseline", bad) and meets("always", bad)


# ----------------------------------------------------------------------------- runs


def test_two_agents_offline_one_log_one_ledger_one_memory(tmp_path: Path) -> None:
    spec = parse_pipeline(TWO_AGENTS)
    out = tmp_path / "run"
    summary = run_pipeline(spec, RunSettings(), out)
    assert summary["status"] == "finished", summary["status_reason"]
    assert summary["path"] == ["fit", "cbo"]  # fit succeeded: no diagnosis
    fit, cbo = summary["nodes"]["fit"], summary["nodes"]["cbo"]
    assert fit["n_evaluations"] == 7 and fit["best_score"] is not None
    assert cbo["best_score"] is not None and cbo["status"] == "finished"
    # typed artifacts, each pointing at the node's best candidate
    arts = summary["artifacts"]
    assert arts["fit"]["kind"] == "program" and (out / arts["fit"]["path"]).is_file()
    assert arts["cbo"]["kind"] == "causal-model"
    # every node is a complete run directory, and its events are in the one log, tagged
    for node in ("fit", "cbo"):
        assert (
            json.loads((out / "nodes" / node / "summary.json").read_text())["status"] == "finished"
        )
    events = list(iter_events(out))
    assert {e.get("node") for e in events if e["kind"] == "pipeline_node"} == {"fit", "cbo"}
    assert any(e["kind"] == "cbo_trial" and e.get("node") == "cbo" for e in events)
    assert any(e["kind"] == "sandbox_run" and e.get("node") == "fit" for e in events)
    kinds = [e["kind"] for e in iter_events(out) if e["kind"] == "pipeline_node"]
    assert len(kinds) == 2
    # one memory: both agents wrote to the pipeline's memory.db
    assert summary["memory"] == f"sqlite:///{out / 'memory.db'}"
    from optiforge.memory import Store

    with Store(summary["memory"], embedder=None) as store:
        agents = {c.agent for c in store.candidates(limit=1000)}
    assert "evolve" in agents
    assert "| fit | evolve | funcfit/sine@dev | finished |" in (out / "summary.md").read_text()


def test_a_failed_node_takes_the_failure_edge_and_the_pipeline_fails(tmp_path: Path) -> None:
    spec = parse_pipeline(TWO_AGENTS)

    def broken(messages: Any, tools: Any, schema: Any) -> str:
        return "I cannot write code."  # no program: every LLM proposal is invalid

    summary = run_pipeline(spec, RunSettings(model="scripted"), tmp_path / "run",
                           llm=FunctionLLM(broken))  # fmt: skip
    assert summary["path"] == ["fit", "why"]
    assert summary["nodes"]["fit"]["status"] == "failed"
    assert summary["status"] == "failed" and "fit" in summary["status_reason"]
    diag = summary["artifacts"]["why"]
    assert diag["kind"] == "diagnosis" and diag["of"] == "fit"
    assert diag["dominant"] == "format" and diag["failed"] >= 1
    assert (tmp_path / "run" / "nodes" / "why" / "diagnosis.md").is_file()


def test_references_pass_one_nodes_artifact_into_the_next(tmp_path: Path) -> None:
    data = {
        "name": "refs",
        "description": "the second node's seed comes from the first's result",
        "nodes": [
            {"id": "a", "agent": "evolve", "task": "funcfit/sine@dev", "budget": 4},
            {"id": "b", "agent": "evolve", "task": "funcfit/quadratic@dev", "budget": 4,
             "set": {"seed": "${a.result.n_evaluations}"}},
        ],
    }  # fmt: skip
    summary = run_pipeline(parse_pipeline(data), RunSettings(), tmp_path / "run")
    manifest = json.loads((tmp_path / "run" / "nodes" / "b" / "manifest.json").read_text())
    assert manifest["seed"] == 4 and manifest["config"]["node"] == "b"
    assert summary["status"] == "finished"


# ----------------------------------------------------------------------------- kill -9


def _reply(messages: list[dict[str, Any]]) -> str:
    h = int(hashlib.sha256(messages[-1]["content"].encode()).hexdigest()[:8], 16)
    a, b = (h % 997) / 100 - 5, (h // 997 % 991) / 100 - 5
    return f"```python\ndef f(x):\n    return {a:.2f} * x + {b:.2f}\n```"


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> Any:
    """The two-agent pipeline with a scripted LLM (evolve programs; agent-CBO's beliefs from
    the true graph) that logs every prompt; ``block_at``: hang inside that call."""
    belief = true_graph_llm(resolve_task("cbo/toy_graph@dev"))

    def reply(messages: list[dict[str, Any]], schema: Any = None) -> Any:
        return belief.fn(messages, None, schema) if schema is not None else _reply(messages)

    logged = logging_model(prompts, block_at, lambda m: "")

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
        logged(messages, tools, schema)  # logs (and blocks at block_at)
        return reply(messages, schema)

    llm = FunctionLLM(model)
    llm.ordered_replies = True  # type: ignore[attr-defined]
    return run_pipeline(parse_pipeline(TWO_AGENTS), RunSettings(model="scripted"), run_dir,
                        llm=llm, resume=resume)  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a hang guard, not a measure: loaded machines are slow
def test_kill_mid_pipeline_and_resume_identically(tmp_path: Path) -> None:
    straight_prompts = tmp_path / "b" / "prompts.jsonl"
    (tmp_path / "b").mkdir()
    straight = solve(tmp_path / "b" / "run", straight_prompts, block_at=None, resume=False)
    calls = read_prompts(straight_prompts)
    n_fit = straight["nodes"]["fit"]["llm_calls"]
    assert n_fit > 0 and len(calls) > n_fit + 2  # agent-CBO asked the LLM too
    block_at = n_fit + 2  # inside the second agent
    killed, prompts = tmp_path / "a" / "run", tmp_path / "a" / "prompts.jsonl"
    killed.parent.mkdir()
    kill_at_block(__file__, killed, prompts, block_at)
    assert (killed / "nodes" / "fit" / "summary.json").is_file()  # the first node had finished
    assert not (killed / "nodes" / "cbo" / "summary.json").exists()
    prompts.unlink()
    resumed = solve(killed, prompts, block_at=None, resume=True)
    after = read_prompts(prompts)
    # the first node is not run again; the second resumes from its own checkpoint
    assert after and after == calls[len(calls) - len(after) :]
    assert len(after) < len(calls) - n_fit
    keys = ("status", "best_score", "baseline_score", "n_evaluations")
    for node in ("fit", "cbo"):
        assert {k: resumed["nodes"][node][k] for k in keys} == {
            k: straight["nodes"][node][k] for k in keys
        }
    assert resumed["path"] == straight["path"]
    # the one ledger counts the calls finished before the kill too (the killed call was
    # asked again after the resume: nothing else was)
    assert resumed["totals"]["llm_calls"] == (block_at - 1) + len(after)
    assert resumed["totals"]["llm_calls"] == straight["totals"]["llm_calls"] == len(calls)


# ----------------------------------------------------------------------------- the CLI


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "optiforge.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=1500)  # fmt: skip


def test_cli_runs_lists_and_resumes_a_pipeline(tmp_path: Path) -> None:
    one = {k: v for k, v in TWO_AGENTS["nodes"][0].items() if k != "next"}
    f = _write(tmp_path, {**TWO_AGENTS, "nodes": [one]})
    r = _cli("pipeline", "run", str(f), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "node fit" in r.stderr and "| fit | evolve |" in r.stdout
    again = _cli("pipeline", "run", "--resume", str(tmp_path / "run"), cwd=tmp_path)
    assert again.returncode == 0 and "| fit | evolve |" in again.stdout
    listed = _cli("list", "pipelines", cwd=ROOT)
    assert "kd-transfer" in listed.stdout and "diagnose" in listed.stdout
    bad = _cli("pipeline", "run", "nope", cwd=tmp_path)
    assert bad.returncode != 0 and "no pipeline file or bundled pipeline 'nope'" in bad.stderr


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a hang guard, not a measure: loaded machines are slow
def test_a_pipeline_runs_its_evaluations_through_ray(tmp_path: Path) -> None:
    """``--executor ray``: one local Ray for the whole pipeline; every node's evaluations run
    (each in its own sandbox) in Ray worker processes."""
    import os

    ray = pytest.importorskip("ray")
    spec = parse_pipeline({"name": "on-ray", "description": "d", "nodes": [
        {"id": "fit", "agent": "evolve", "task": "funcfit/sine@dev", "budget": 6},
        {"id": "again", "agent": "evolve", "task": "funcfit/quadratic@dev", "budget": 6}]})  # fmt: skip
    out = tmp_path / "run"
    summary = run_pipeline(spec, RunSettings(executor="ray", workers=2), out)
    assert summary["status"] == "finished"
    for node in ("fit", "again"):
        pids = {
            e.get("pid") for e in iter_events(out / "nodes" / node) if e["kind"] == "sandbox_run"
        }
        assert pids and os.getpid() not in pids  # written by Ray workers, not this process
        # ... and the pipeline's one log has them too, tagged with the node
        tagged = {
            e.get("pid")
            for e in iter_events(out)
            if e["kind"] == "sandbox_run" and e.get("node") == node
        }
        assert pids <= tagged
    assert not ray.is_initialized()  # the pipeline's Ray is shut down with it


def test_memory_flows_from_one_agent_to_another(tmp_path: Path) -> None:
    """A diagnosis written by one node is recalled into a later agent's LLM prompts (and
    the recalled ids are in the log); a node never recalls its own run's lessons."""
    data = {
        "name": "retry",
        "description": "evolve, diagnose its failures, evolve again with the lesson",
        "nodes": [
            {"id": "fit", "agent": "evolve", "task": "funcfit/sine@dev", "budget": 4},
            {"id": "why", "step": "diagnose"},
            {"id": "retry", "agent": "evolve", "task": "funcfit/sine@dev", "budget": 4},
        ],
    }  # fmt: skip
    prompts: list[str] = []

    def model(messages: Any, tools: Any, schema: Any) -> str:
        text = messages[-1]["content"]
        prompts.append(text)
        if "Lessons from earlier runs (memory)" in text:
            return "```python\ndef f(x):\n    return 0.5 * x\n```"
        return "no code"  # the first node's proposals are all invalid

    out = tmp_path / "run"
    summary = run_pipeline(parse_pipeline(data), RunSettings(model="scripted"), out,
                           llm=FunctionLLM(model))  # fmt: skip
    assert summary["path"] == ["fit", "why", "retry"]
    assert summary["nodes"]["fit"]["status"] == "failed"
    assert summary["nodes"]["retry"]["status"] == "finished"
    recalls = {e["node"]: e for e in iter_events(out) if e["kind"] == "memory_recall"}
    assert recalls["retry"]["ids"] and recalls["retry"]["agents"] == ["diagnose"]
    assert "fit" not in recalls or recalls["fit"]["ids"] == []
    lesson = [p for p in prompts if "Lessons from earlier runs (memory)" in p]
    block = lesson[0].split("Lessons from earlier runs (memory):")[1]
    assert "(diagnose) evolve:" in block and "format" in block
    assert "sine" not in block  # a lesson never names the task (the name gives the curve away)


def test_memory_none_recalls_nothing(tmp_path: Path) -> None:
    data = {"name": "n", "description": "d", "memory": "none", "nodes": [
        {"id": "a", "agent": "evolve", "task": "funcfit/sine@dev", "budget": 3},
        {"id": "b", "agent": "evolve", "task": "funcfit/sine@dev", "budget": 3}]}  # fmt: skip
    summary = run_pipeline(parse_pipeline(data), RunSettings(), tmp_path / "run")
    assert summary["memory"] is None and not (tmp_path / "run" / "memory.db").exists()
    assert not [e for e in iter_events(tmp_path / "run") if e["kind"] == "memory_recall"]


def test_the_readme_example_is_a_valid_pipeline() -> None:
    text = (ROOT / "README.md").read_text()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    spec = parse_pipeline(yaml.safe_load(block), where="README")
    assert [n.id for n in spec.nodes] == ["fit", "why", "retry"]


# ----------------------------------------------------------------------------- bundled

FAST_KD = {"agent.refresh_every": 4, "agent.kernel_evals_per_refresh": 5,
           "agent.proposals_per_round": 1, "agent.acq_restarts": 1, "agent.acq_raw_samples": 16,
           "agent.max_code_reasks": 0}  # fmt: skip


def _small(path: Path) -> Any:
    """A bundled pipeline with small budgets (the same nodes, edges and references)."""
    spec = load_pipeline(path)
    nodes = []
    for n in spec.nodes:
        if n.agent == "kernel-discovery":
            n = n.model_copy(update={"budget": 12, "set": {**FAST_KD, **n.set}})
        elif n.agent is not None:
            n = n.model_copy(update={"budget": 6})
        if n.method:  # a baseline of Kernel Discovery: the hdbo protocol's small budget
            n = n.model_copy(update={"budget": 14, "set": {}})
        nodes.append(n)
    return spec.model_copy(update={"nodes": nodes})


def _scripted(prompts: list[str]) -> FunctionLLM:
    """Answers every agent's prompts: a kernel form (schema), a kernel or a program (code)."""

    def reply(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        text = str(messages[-1]["content"])
        prompts.append(text)
        if schema is not None and schema.__name__ == "KernelForm":
            return json.dumps({"name": "rq", "form": "(1 + r^2/2)^-1", "rationale": "tails"})
        if schema is not None and schema.__name__ == "Formulation":
            return json.dumps({"method": "turbo", "rationale": "100 inputs, a trust region"})
        if schema is not None and schema.__name__ == "LLMLesson":
            return json.dumps({"lesson": "start from the kernel that fitted the last task"})
        if schema is not None:
            return json.dumps(
                {"root_cause": "drafts do not run", "harness_changes": ["test first"]}
            )
        return "```python\ndef f(x):\n    return 0.5 * x\n```"

    return FunctionLLM(reply)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a hang guard, not a measure: loaded machines are slow
@pytest.mark.parametrize("name", ["kd-transfer", "diagnose", "formulate-optimize"])
@pytest.mark.parametrize("model", ["offline", "scripted"])
def test_bundled_pipelines_run_on_a_small_budget(tmp_path: Path, name: str, model: str) -> None:
    spec = _small(ROOT / "configs" / "pipelines" / f"{name}.yaml")
    prompts: list[str] = []
    llm = _scripted(prompts) if model == "scripted" else None
    out = tmp_path / "run"
    summary = run_pipeline(spec, RunSettings(model=model), out, llm=llm)
    assert summary["path"] == [n.id for n in spec.nodes]
    assert all(summary["nodes"][n.id]["status"] != "failed" or n.agent for n in spec.nodes)
    if name == "formulate-optimize":  # the formulation's method is what the optimizer ran
        form = summary["artifacts"]["formulate"]
        assert form["kind"] == "formulation" and form["by"] == ("llm" if llm else "rule")
        assert summary["nodes"]["optimize"]["method"] == form["method"]
        assert form["method"] == ("turbo" if llm else "vanilla_bo")
    if name == "kd-transfer":
        lesson = summary["artifacts"]["lesson"]
        assert lesson["kind"] == "lesson" and lesson["memory_id"]
        recalls = [
            e
            for e in iter_events(out)
            if e["kind"] == "memory_recall" and e.get("node") == "transfer"
        ]
        assert recalls and all(lesson["memory_id"] in e["ids"] for e in recalls)  # reused
        if model == "scripted":
            shown = [p for p in prompts if "Lessons from earlier runs (memory)" in p]
            assert shown and "(reflect) start from the kernel" in shown[0]
            assert "levy" not in shown[0].lower()


# ----------------------------------------------------------------------------- bbowp


@pytest.mark.slow
def test_formulate_optimize_report_on_a_word_problem(tmp_path: Path) -> None:
    """formulator (a scripted LLM's TPE formulation) -> optimize (random search on that
    space, a smaller budget) -> report: the override ran in the sandbox on the formulated
    space, and the report covers both nodes."""
    good = {"variables": [
        {"name": "shell_plates", "kind": "int", "low": 10, "high": 25},
        {"name": "head_plates", "kind": "int", "low": 5, "high": 15},
        {"name": "radius", "kind": "float", "low": 40, "high": 60},
        {"name": "length", "kind": "float", "low": 150, "high": 240}], "method": "tpe"}  # fmt: skip
    spec = parse_pipeline({"name": "p", "description": "d", "nodes": [
        {"id": "formulate", "agent": "formulator", "task": "bbowp/pressure-vessel@dev"},
        {"id": "optimize", "step": "optimize", "input": "formulate",
         "set": {"method": "random", "budget": 10}},
        {"id": "report", "step": "report"}]})  # fmt: skip
    llm = FunctionLLM(lambda messages, tools, schema: json.dumps(good))
    summary = run_pipeline(spec, RunSettings(model="scripted"), tmp_path / "run", llm=llm)
    assert summary["status"] == "finished", summary
    rec = json.loads((tmp_path / "run" / "nodes" / "optimize" / "optimization.json").read_text())
    assert rec["method"] == "random" and rec["budget"] == 10 and len(rec["evaluations"]) == 10
    for e in rec["evaluations"]:  # every configuration is in the formulated space
        assert 40 <= e["config"]["radius"] <= 60 and 10 <= e["config"]["shell_plates"] <= 25
    art = summary["artifacts"]["optimize"]
    assert art["kind"] == "optimization" and art["score"] == rec["best_value"]
    assert summary["nodes"]["optimize"]["best_score"] == rec["best_value"]
    report = (tmp_path / "run" / "nodes" / "report" / "report.md").read_text()
    assert "| formulate | bbowp/pressure-vessel | tpe |" in report
    assert "| optimize | bbowp/pressure-vessel | random |" in report
    assert (tmp_path / "run" / "nodes" / "report" / "convergence.png").is_file()


def test_step_options_are_checked() -> None:
    nodes = [{"id": "formulate", "agent": "formulator", "task": "bbowp/pressure-vessel@dev"},
             {"id": "optimize", "step": "optimize", "set": {"colour": 1}}]  # fmt: skip
    with pytest.raises(ConfigError, match="step optimize takes no option 'colour'"):
        parse_pipeline({"name": "p", "description": "d", "nodes": nodes})

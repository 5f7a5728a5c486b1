"""Typed artifact hand-offs between pipeline nodes (``harness/pipelines/handoff.py``) and
the ``design-card`` pipeline: each hand-off changes what the downstream node runs with,
and a reference to a node that handed on nothing fails the reader in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.tools import ToolsConfig, build_registry
from optiforge.config import RunSettings
from optiforge.errors import ConfigError, SandboxError
from optiforge.harness.pipelines import find_pipeline, load_pipeline, parse_pipeline, run_pipeline
from optiforge.harness.pipelines.handoff import check_extra
from optiforge.testing import FunctionLLM

ROOT = Path(__file__).resolve().parents[2]


def test_design_card_is_bundled_and_composes_four_paper_agents() -> None:
    spec = load_pipeline(find_pipeline("design-card"))
    agents = {n.agent for n in spec.nodes if n.agent} | {
        "autosaddler" for n in spec.nodes if n.step == "tune"
    }
    paper = {"kernel-discovery", "formulator", "smith", "autorem", "autosaddler"}
    assert len(agents & paper) >= 4
    # every paper agent node but the last hands on to a later node by reference
    text = (ROOT / "configs/pipelines/design-card.yaml").read_text()
    for ref in ("${discover.artifact", "${tools.artifact", "${tune.artifact"):
        assert ref in text


def test_malformed_artifacts_fail_in_one_line() -> None:
    assert check_extra("tool-pool", {"pool": ["a"], "built": 1}, "t")["pool"] == ["a"]
    with pytest.raises(ConfigError, match=r"^node 'tools' handed on a malformed tool-pool") as e:
        check_extra("tool-pool", {"built": 0}, "tools")
    assert "\n" not in str(e.value)
    kd = check_extra("gp-kernel", {"final_kernel": "RBF_ARD + Linear", "refreshes": [
        {"kernel": {"expression": "RBF_ARD + Linear"}}]}, "d")  # fmt: skip
    assert kd["final_expression"] == "RBF_ARD + Linear"
    # LLM code is no expression another optimizer can build: None, not its name
    llm = check_extra("gp-kernel", {"final_kernel": "my kernel: k = ...", "refreshes": [
        {"kernel": {"source": "def kernel(...)"}}]}, "d")  # fmt: skip
    assert llm["final_expression"] is None


def test_a_missing_upstream_artifact_fails_the_reader_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SMITH's node fails (no artifact): AutoREM's node, which references its pool, fails
    with one line naming the missing artifact, and never starts its agent."""
    import optiforge.harness.runner as runner

    ran: list[str] = []

    def fake_run_task(agent: str, *a: Any, **kw: Any) -> Any:
        ran.append(agent)
        raise SandboxError("no sandbox here\nsecond line of the cause")

    monkeypatch.setattr(runner, "run_task", fake_run_task)
    spec = parse_pipeline({
        "name": "missing", "description": "a reference to a failed node",
        "nodes": [
            {"id": "tools", "agent": "smith", "task": "procedural/train-families@dev",
             "next": "reformulate"},
            {"id": "reformulate", "agent": "autorem", "task": "autoro/autoro-test-d2-0001-s1000@test",
             "set": {"agent.tools.pool_names": "${tools.artifact.extra.pool}"}},
        ],
    })  # fmt: skip
    out = run_pipeline(spec, RunSettings(), tmp_path / "run")
    node = out["nodes"]["reformulate"]
    assert ran == ["smith"]  # the reader never ran its agent
    assert node["status"] == "failed" and "\n" not in node["status_reason"]
    assert (
        "${tools.artifact.extra.pool}: node 'tools' handed on no artifact (failed:"
        in (node["status_reason"])
    )


def test_a_tune_step_needs_an_autorem_input(tmp_path: Path) -> None:
    spec = parse_pipeline({
        "name": "tune-evolve", "description": "tune reads an autorem node",
        "nodes": [
            {"id": "fit", "agent": "evolve", "task": "funcfit/sine@dev", "budget": 2},
            {"id": "tune", "step": "tune", "input": "fit"},
        ],
    })  # fmt: skip
    out = run_pipeline(spec, RunSettings(), tmp_path / "run")
    reason = out["nodes"]["tune"]["status_reason"]
    assert out["nodes"]["tune"]["status"] == "failed" and "\n" not in reason
    assert "tunes an autorem node's harness; input 'fit' is evolve" in reason


def _tool_store(tmp_path: Path) -> Any:
    from optiforge import memory

    store = memory.Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=None)
    for name in ("hypot", "shout"):
        store.add_tool(memory.Tool(name=name, description=name, code=f"def {name}(x):\n    return x\n",
                                   json_schema={"type": "object", "properties": {"x": {"type": "number"}}}))  # fmt: skip
    return store


def test_pool_names_offer_exactly_the_handed_on_tools(tmp_path: Path) -> None:
    """``tools.pool_names`` (a SMITH node's pool) narrows the memory's tools to those, and a
    name the memory lacks is a one-line error, not a silently smaller pool."""
    from optiforge.sandboxes import get_sandbox

    store = _tool_store(tmp_path)
    llm = FunctionLLM(lambda messages, **kw: "{}")
    ctx = RunContext(llm=llm, sandbox=get_sandbox("local"), memory=store)
    every = build_registry(ctx, ToolsConfig())
    assert every is not None and sorted(every.names) == ["hypot", "shout"]
    named = build_registry(ctx, ToolsConfig(pool_names=["shout"]))
    assert named is not None and named.names == ["shout"]
    with pytest.raises(ConfigError, match=r"tools.pool_names: nope not in the run's memory$"):
        build_registry(ctx, ToolsConfig(pool_names=["shout", "nope"]))
    no_memory = RunContext(llm=llm, sandbox=get_sandbox("local"), memory=None)
    with pytest.raises(ConfigError, match="need tools.pool, the run's memory"):
        build_registry(no_memory, ToolsConfig(pool_names=["shout"]))


def _small(spec_data: dict[str, Any]) -> dict[str, Any]:
    """The bundled design card with the smallest budgets that still hand everything on."""
    nodes = {n["id"]: n for n in spec_data["nodes"]}
    nodes["discover"]["budget"] = 12
    nodes["discover"]["set"] = {"agent.refresh_every": 5, "agent.kernel_evals_per_refresh": 3}
    nodes["optimize"]["set"]["budget"] = 6
    nodes["tools"]["budget"] = 3
    nodes["reformulate"]["set"]["agent.max_attempts"] = 2
    return spec_data


@pytest.mark.slow
def test_design_card_hands_every_artifact_on_offline(tmp_path: Path) -> None:
    """Offline, small budgets: every downstream node runs with its upstream's artifact."""
    import yaml

    data = _small(yaml.safe_load((ROOT / "configs/pipelines/design-card.yaml").read_text()))
    out = run_pipeline(parse_pipeline(data), RunSettings(), tmp_path / "run")
    arts, nodes = out["artifacts"], out["nodes"]
    assert out["status"] == "finished", out["status_reason"]
    run = tmp_path / "run"

    def agent_set(node: str) -> dict[str, Any]:
        m = json.loads((run / nodes[node]["dir"] / "manifest.json").read_text())
        return dict(m["config"]["settings"]["agent"])

    # Kernel Discovery's kernel and the formulator's space -> the optimize step's formulation
    opt = json.loads((run / nodes["optimize"]["dir"] / "optimization.json").read_text())
    expr = arts["discover"]["extra"]["final_expression"]
    assert expr and opt["kernel"] == opt["formulation"]["kernel"]
    from optiforge.solvers.gp import grammar

    assert opt["kernel"] == grammar.canonical(expr)
    assert opt["formulation"]["space"] == arts["formulate"]["extra"]["formulation"]["space"]
    # SMITH's pool -> AutoREM's tool pool (both AutoREM nodes)
    pool = arts["tools"]["extra"]["pool"]
    assert pool and agent_set("reformulate")["tools"]["pool_names"] == pool
    assert agent_set("retry")["tools"]["pool_names"] == pool
    # AutoREM's own config -> AutoSaddler's base harness -> the retry node's config
    harness = arts["tune"]["extra"]
    assert harness["base"]["max_attempts"] == 2  # the reformulate node's, not AutoREM's default 3
    retry = agent_set("retry")
    assert retry["max_attempts"] == harness["values"]["max_attempts"]
    assert retry["tools"]["use"] == harness["values"]["tools_use"]
    assert retry["timeout_s"] == harness["values"]["timeout_s"]

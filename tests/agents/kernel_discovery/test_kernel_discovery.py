"""Kernel Discovery: grammar, offline run through the runner, two-stage LLM path over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from optiforge.agents.kernel_discovery.problem import functional_clusters
from optiforge.config import RunSettings
from optiforge.errors import InvalidCandidate
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.solvers.gp import grammar

GOOD_KERNEL = """
NAME = "rq-times-exp"
HYPERPARAMETERS = {"lengthscale": {"shape": "ard", "init": 1.0, "bounds": [0.01, 100.0]},
                   "alpha": {"shape": "scalar", "init": 1.0, "bounds": [0.01, 100.0]}}
def kernel(x1, x2, params):
    a = x1 / params["lengthscale"]
    b = x2 / params["lengthscale"]
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return (1.0 + d2 / (2.0 * params["alpha"])) ** (-params["alpha"])
"""

NOT_PSD_KERNEL = """
NAME = "negative"
HYPERPARAMETERS = {"lengthscale": {"shape": "scalar", "init": 1.0, "bounds": [0.01, 100.0]}}
def kernel(x1, x2, params):
    d2 = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)
    return -torch.exp(-0.5 * d2 / params["lengthscale"] ** 2)
"""


def test_grammar_parse_canonical_and_build() -> None:
    assert grammar.canonical("Periodic * RBF + Linear") == grammar.canonical(
        "Linear + RBF * Periodic"
    )
    assert grammar.parse("(RBF + Linear) * Periodic") == [
        ("RBF", "Periodic"),
        ("Linear", "Periodic"),
    ]
    spec = grammar.build_kernel("RBF_ARD + Periodic")
    assert (
        spec.n_hyperparameters(5) == 1 + 5 + 1 + 1 + 1
    )  # two variances, ARD ls, periodic ls + period
    x = torch.rand(6, 5, dtype=torch.float64)
    K = spec(x, x, {k: v for k, v in spec.initial_params(5).items()})
    assert K.shape == (6, 6) and torch.allclose(K, K.T)
    with pytest.raises(InvalidCandidate, match="unknown base kernel"):
        grammar.build_kernel("RBF + Wiggly")
    with pytest.raises(InvalidCandidate, match="only base-kernel names"):
        grammar.parse("RBF - Linear")


def test_mutations_stay_in_the_grammar_and_bounded() -> None:
    rng = np.random.default_rng(0)
    expr = "RBF_ARD"
    seen = set()
    for _ in range(200):
        expr = grammar.mutate(expr, rng, grammar.ALL_BASES, max_complexity=3)
        assert grammar.complexity(expr) <= 3
        grammar.build_kernel(expr)
        seen.add(expr)
    assert len(seen) > 20
    x = grammar.crossover("RBF * Linear", "Periodic + RQ", rng, max_complexity=3)
    assert grammar.complexity(x) <= 3


def test_functional_duplicates_found_by_fingerprint() -> None:
    task = resolve_task("hdbo/levy4_in_25@dev")
    X, y = task.kernel_data(0)
    X, y = X[:16], y[:16]
    scores = {
        e: task.score_kernel(grammar.build_kernel(e), X, y)
        for e in ("RBF_ARD", "RBF_ARD * RBF_ARD", "Periodic")
    }
    from optiforge.agents.kit import Evaluated

    evs = [
        Evaluated(
            id=e, key=e, payload={"expression": e}, passed=True, value=s.value, details=s.details
        )
        for e, s in scores.items()
    ]
    clusters = functional_clusters(evs, tol=2e-2)
    # RBF * RBF is RBF with rescaled lengthscales: the same function once fitted.
    assert sorted(len(c) for c in clusters) == [1, 2]


@pytest.mark.slow
def test_offline_run_through_the_runner(tmp_path: Path) -> None:
    task = resolve_task("hdbo/levy4_in_25@dev")
    settings = RunSettings(
        budget=16,
        memory=f"sqlite:///{tmp_path / 'mem.db'}",
        agent={"refresh_every": 3, "kernel_evals_per_refresh": 4},
    )
    summary = run_task("kernel-discovery", task, settings, tmp_path / "run")
    assert summary.metric == "best_value" and summary.n_evaluations == 16
    assert summary.verified and summary.best_score == pytest.approx(
        summary.verification["metrics"]["best_value"]
    )
    assert summary.baseline_name == "gp_rbf_ard" and summary.baseline_score is not None
    extra = summary.extra
    assert extra["proposer"] == "compositional" and len(extra["refreshes"]) == 2  # rounds 0 and 3
    for r in extra["refreshes"]:
        # RBF-ARD is always scored: the choice is at least as good, or a kept incumbent
        assert r["rbf_ard_loo_crps"] is not None and (
            r["best_loo_crps"] <= r["rbf_ard_loo_crps"] + 1e-12 or r["kept_incumbent"]
        )
    assert set(extra["final_loo_crps"]) == {
        "RBF_ARD",
        "discovered",
        "discovered_kernel",
        "discovered_expression",
        "RBF_ARD_heldout",
        "discovered_heldout",
        "RBF_ARD_forward",
        "discovered_forward",
        "forward_points",
    }
    assert "functional_duplicates" in extra["kernel_evaluations"]
    kinds = [
        json.loads(x)["kind"] for x in (tmp_path / "run" / "events.jsonl").read_text().splitlines()
    ]
    assert kinds.count("kernel_refresh") == 2
    from optiforge.memory import Store

    store = Store(settings.memory, embedder=None)
    assert any(e.agent == "kernel-discovery" for e in store.experiences())
    assert len(store.candidates(agent="kernel-discovery")) >= 8
    store.close()


@pytest.mark.slow
def test_two_stage_llm_path_reasks_and_rejects(openai_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    form = json.dumps(
        {"name": "rq-exp", "form": "k = (1 + r^2/(2a))^-a", "rationale": "heavier tails"}
    )
    bad_form = json.dumps({"name": "neg", "form": "k = -exp(-r^2/2)", "rationale": "test"})
    openai_server.script(
        [
            # refresh 0, proposal 1: a form, then a reply without code (re-asked), then valid code
            form,
            "I think this kernel is great.",
            f"```python\n{GOOD_KERNEL}```",
            # refresh 0, proposal 2: a non-PSD kernel, re-asked twice, still not PSD -> evaluation rejects it
            bad_form,
            f"```python\n{NOT_PSD_KERNEL}```",
            f"```python\n{NOT_PSD_KERNEL}```",
            f"```python\n{NOT_PSD_KERNEL}```",
        ]
    )
    from optiforge.agents.kernel_discovery import SPEC

    task = resolve_task("hdbo/levy4_in_25@dev")
    settings = RunSettings(
        model="openai/test-model",
        api_base=openai_server.url,
        budget=11,
        memory="none",
        agent={
            "refresh_every": 5,
            "kernel_evals_per_refresh": 3,
            "proposals_per_round": 2,
            "seed_kernels": ["RBF_ARD"],
        },
    )
    from optiforge.llm import LiteLLM

    llm = LiteLLM(
        "openai/test-model", api_base=openai_server.url, api_key="sk-test", backoff_base_s=0.01
    )
    summary = run_task(SPEC, task, settings, tmp_path / "run", llm=llm, with_baseline=False)
    assert openai_server.count == 7
    # the second code request carried the re-ask with the reason
    reask = openai_server.requests[2]["messages"][-1]["content"]
    assert "rejected" in reask and "def kernel" in reask
    events = [json.loads(x) for x in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    rejected = [e for e in events if e["kind"] == "kernel_code_rejected"]
    assert any("not PSD" in e["reason"] for e in rejected)
    evals = [e for e in events if e["kind"] == "evaluation"]
    assert any(e["passed"] is False and "not PSD" in (e["error"] or "") for e in evals)
    assert any(
        e["passed"] for e in evals if e["id"].startswith("refresh0.r1")
    )  # the good LLM kernel
    assert summary.llm_calls == 7 and summary.extra["proposer"] == "llm"


@pytest.mark.slow
def test_a_failed_llm_call_costs_one_proposal_not_the_refresh(tmp_path: Path) -> None:
    from typing import Any

    from optiforge.agents.kernel_discovery import SPEC
    from optiforge.errors import LLMError
    from optiforge.testing import FunctionLLM

    form = json.dumps(
        {"name": "rq-exp", "form": "k = (1 + r^2/(2a))^-a", "rationale": "heavier tails"}
    )
    calls: list[int] = []

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        calls.append(1)
        if len(calls) == 1:  # the first proposal's form call fails outright
            raise LLMError("provider returned 500 after retries")
        if "Implement this GP kernel" in str(messages[0]["content"]):
            return f"```python\n{GOOD_KERNEL}```"
        return form

    settings = RunSettings(model="scripted", budget=11, memory="none",
                           agent={"refresh_every": 20, "kernel_evals_per_refresh": 3, "proposals_per_round": 2,
                                  "seed_kernels": ["RBF_ARD"]})  # fmt: skip
    summary = run_task(SPEC, resolve_task("hdbo/levy4_in_25@dev"), settings, tmp_path / "run",
                       llm=FunctionLLM(model), with_baseline=False)  # fmt: skip
    events = [json.loads(x) for x in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    invalid = [
        e for e in events if e["kind"] == "candidate_invalid" and e["id"].startswith("refresh0.r1")
    ]
    assert any("LLM call failed: LLMError" in e["reason"] for e in invalid)
    scored = [e for e in events if e["kind"] == "evaluation" and e["id"].startswith("refresh0.r1")]
    assert any(
        e["passed"] for e in scored
    )  # the other proposal's kernel was scored in the same refresh
    assert summary.status == "finished"

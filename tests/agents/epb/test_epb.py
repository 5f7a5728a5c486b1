"""EPB offline and with a scripted LLM: blocks I and II on the shipped teacher."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.runs import iter_events
from optiforge.testing import FunctionLLM

TASK = "nco/tsp20@dev"
SMALL = {"train_tours": 12, "val_tours": 6, "router_steps": 120}


def _run(tmp_path: Path, budget: int, llm: Any = None) -> dict[str, Any]:
    settings = RunSettings(budget=budget, agent=SMALL, model="scripted" if llm else "offline")
    return run_task("epb", resolve_task(TASK), settings, tmp_path, llm=llm, with_baseline=False)


def test_offline_blocks_lower_the_divergence_and_keep_programs_readable(tmp_path: Path) -> None:
    s = _run(tmp_path / "r", budget=4)
    assert s["status"] == "finished", s["status_reason"]
    history = s["extra"]["history"]
    block1 = [h for h in history if h["block"] == "I"]
    assert len(block1) == 4 and any("accepted" in h for h in block1)
    accepted = [h for h in block1 if "accepted" in h]
    assert all(h["val_after"] < h["val_before"] for h in accepted)  # judged on held-out states
    assert any(h["block"] == "II" for h in history)  # boost and prune after round 4
    candidate = s["extra"]["portfolio"]
    assert 1 <= len(candidate) <= 8
    # a blend is one flat weighted sum over the seed heuristics, not nested code
    assert s["verification"]["metrics"]["program_lines"] < 40 * len(candidate)


def test_the_llm_rewrites_the_blamed_program_from_textual_feedback(tmp_path: Path) -> None:
    prompts: list[str] = []
    code = ("```python\ndef scores(state):\n    d, c = state['dist'], state['current']\n"
            "    return [-d[c][j] - 0.2 * d[j][state['first']] for j in range(state['n'])]\n```")  # fmt: skip

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        prompts.append(messages[-1]["content"])
        return code

    s = _run(tmp_path / "l", budget=2, llm=FunctionLLM(model))
    assert prompts and "diverges most from the teacher" in prompts[0]
    assert "ranks the teacher's chosen city" in prompts[0]
    assert "by the loss gradient it carries" in prompts[0]
    assert "- step " in prompts[0] and "the teacher goes to city" in prompts[0]  # concrete states
    events = [e for e in iter_events(tmp_path / "l") if e["kind"] == "epb_round"]
    assert events and all(e["candidates"] >= 1 for e in events)
    assert s["status"] in ("finished", "failed")


def test_a_model_that_writes_no_program_fails_the_run(tmp_path: Path) -> None:
    s = _run(tmp_path / "f", budget=2, llm=FunctionLLM(lambda m, t, s: "no code"))
    assert s["status"] == "failed" and "no LLM program edit was accepted" in s["status_reason"]


def test_blame_is_the_loss_gradient_along_the_simplex() -> None:
    """``blame`` sums to 0 per state, and moving router mass towards a program with positive
    blame raises the loss (checked against autograd on the real mixture)."""
    import numpy as np
    import torch

    from optiforge.agents.epb.problem import blame, loss

    rng = np.random.default_rng(0)
    K, S, n = 3, 5, 6
    z = rng.normal(size=(K, S, n))
    z[:, :, 0] = np.nan  # a visited city
    teacher = rng.dirichlet(np.ones(n - 1), size=S)
    data = {"z": z, "features": rng.normal(size=(S, 2)), "names": ["a", "b", "c"],
            "teacher": np.concatenate([np.zeros((S, 1)), teacher], 1)}  # fmt: skip
    fit = {"names": ["a", "b", "c"], "router": rng.normal(size=(K, 2)).tolist(),
           "beta": {"a": 1.0, "b": 2.0, "c": 0.5}}  # fmt: skip
    b = blame(data, fit)
    np.testing.assert_allclose(b.sum(1), 0.0, atol=1e-5)
    # the gradient of the loss w.r.t. the router logits is exactly the blame (softmax Jacobian)
    W = torch.tensor(fit["router"], dtype=torch.float32)
    f = torch.tensor(data["features"], dtype=torch.float32)
    logits = (f @ W.T).requires_grad_(True)
    zt = torch.tensor(np.nan_to_num(z), dtype=torch.float32)
    mask = torch.tensor(np.isnan(z[0]))
    beta = torch.tensor([1.0, 2.0, 0.5])
    d = torch.softmax((beta[:, None, None] * zt).masked_fill(mask[None], float("-inf")), -1)
    q = (torch.softmax(logits, -1).T[..., None] * d).sum(0)
    ce = -(torch.tensor(data["teacher"], dtype=torch.float32) * torch.log(q.clamp_min(1e-9))).sum(
        -1
    )
    ce.sum().backward()
    assert logits.grad is not None
    np.testing.assert_allclose(logits.grad.numpy(), b, atol=1e-5)
    np.testing.assert_allclose(
        ce.detach().numpy(), loss(data, W, torch.log(beta)).numpy(), atol=1e-5
    )


def test_the_tour_guard_rejects_edits_that_lengthen_tours(tmp_path: Path) -> None:
    """Every accepted edit kept or shortened the mean practice tour, the guard's verdicts
    are recorded per round, and with the guard off nothing is rejected by it."""
    s = _run(tmp_path / "g", budget=3)
    block1 = [h for h in s["extra"]["history"] if h["block"] == "I"]
    assert all("guard_rejected" in h and "tour_before" in h for h in block1)
    for h in block1:
        if "accepted" in h:
            assert h["tour_after"] <= h["tour_before"] + 1e-9
    off = run_task("epb", resolve_task(TASK), RunSettings(budget=3, agent={**SMALL, "tour_guard": False}),
                   tmp_path / "off", with_baseline=False)  # fmt: skip
    assert all(h["guard_rejected"] == 0 for h in off["extra"]["history"] if h["block"] == "I")

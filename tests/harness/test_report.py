"""``optiforge report``: the HTML page of a real run, an interrupted run and an eval (offline)."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from optiforge.config import RunSettings
from optiforge.evals.plots import band, use_log_scale
from optiforge.evals.registry import resolve_task
from optiforge.harness import report
from optiforge.harness.report import compare, render_report, write_markdown
from optiforge.harness.runner import run_eval, run_task

SETTINGS = RunSettings(budget=5, memory="none")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "run"
    run_task("evolve", resolve_task("funcfit/quadratic@dev"), SETTINGS, out)
    return out


@pytest.fixture(scope="module")
def eval_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "eval"
    run_eval(
        "evolve", "funcfit", RunSettings(budget=4, memory="none"), out,
        seeds=2, tasks=["quadratic"], baselines=["seed"],
    )  # fmt: skip
    return out


def _rows(run: Path) -> list[dict]:
    return [json.loads(ln) for ln in (run / "evaluations.jsonl").read_text().splitlines()]


def _section(page: str, anchor: str) -> str:
    start = page.index(f'id="{anchor}"')
    nxt = page.find("<h2", start)
    return page[start : nxt if nxt > 0 else len(page)]


def test_run_report_shows_status_best_code_lineage_evaluations_and_plot(run_dir: Path) -> None:
    page = render_report(run_dir).read_text()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert '<span class="status finished">finished</span>' in page
    assert summary["status_reason"] in page
    # task, method, config
    assert "evolve on funcfit/quadratic@dev" in page
    config = _section(page, "config")
    assert "<dt>budget</dt><dd>5</dd>" in config and "<dt>memory</dt><dd>none</dd>" in config
    # headline: the re-measured best, the claim, the baseline, and why they differ
    # the headline names the metric and its direction
    assert "mse, re-measured (lower is better)" in page and "agent's claim" in page
    assert "bookkeeping is off" not in page  # the claim is the best the agent observed
    assert "The harness re-measures" in page
    assert report._fmt(summary["baseline_score"], 6) in page
    # the best candidate's code, escaped
    code = (run_dir / "best" / "candidate.py").read_text()
    assert html.escape(code.strip()) in page
    # the lineage tree names every evaluation and marks the best's ancestry
    rows = _rows(run_dir)
    tree = _section(page, "lineage")
    for r in rows:
        assert r["id"] in tree
    ancestry = [r["id"] for r in json.loads((run_dir / "best" / "lineage.json").read_text())]
    assert "★ best" in tree
    nodes = tree[tree.index('<ul class="tree top">') :]
    assert nodes.count("node onpath") == len(ancestry)
    # one table row per evaluation
    table = _section(page, "evaluations")
    assert len(re.findall(r"<tr[ >]", table)) == len(rows) + 1  # + header
    assert "All 5 evaluations" in table
    # the plot, inlined; offline: no LLM calls
    assert re.search(
        r'<img alt="convergence" src="data:image/png;base64,[A-Za-z0-9+/=]{500,}', page
    )
    assert "No LLM calls" in page


def test_evaluation_table_is_capped(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "MAX_EVAL_ROWS", 2)
    table = _section(render_report(run_dir).read_text(), "evaluations")
    assert "The first 2 of 5 evaluations" in table
    assert len(re.findall(r"<tr[ >]", table)) == 3


def test_interrupted_run_is_reported_as_not_re_measured(tmp_path: Path) -> None:
    out = tmp_path / "run"
    seen = []

    def stop_after_two_rounds(info: dict) -> None:
        seen.append(info)
        if len(seen) >= 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_task(
            "evolve", resolve_task("funcfit/quadratic@dev"), RunSettings(budget=6, memory="none"),
            out, progress=stop_after_two_rounds,
        )  # fmt: skip
    assert not (out / "summary.json").exists()
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    page = render_report(out).read_text()
    assert '<span class="status interrupted">interrupted</span>' in page
    assert "not re-measured" in page and "This run did not finish" in page
    # the best it observed is still shown, with its code and its place in the tree
    rows = [r for r in _rows(out) if r.get("passed")]
    best = min(rows, key=lambda r: r["value"])
    assert html.escape(best["payload"]["code"].strip()) in page
    assert "★ best" in _section(page, "lineage")
    assert "data:image/png;base64," in page


def test_llm_calls_table_and_transcripts_from_the_cassette(run_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    call = {"kind": "llm_call", "model": "openai/x", "tokens_in": 120, "tokens_out": 30,
            "cost_usd": 0.0012, "cost_known": True, "latency_s": 0.8, "cached": False,
            "replayed": False, "attempts": 1, "ok": True}  # fmt: skip
    with (run / "events.jsonl").open("a") as fh:
        fh.write(json.dumps({**call, "request_key": "k1"}) + "\n")
        fh.write(json.dumps({**call, "request_key": "k2", "ok": False, "error": "timeout"}) + "\n")
    page = render_report(run).read_text()
    llm = _section(page, "llm")
    assert "2 calls" in llm and "1 failed" in llm and "no: timeout" in llm
    assert "Prompts and replies were not recorded" in llm  # events carry no text
    # with a cassette (--record), each call shows its request and reply
    cassette = tmp_path / "cassette.jsonl"
    cassette.write_text(
        json.dumps({"key": "k1", "model": "openai/x",
                    "messages": [{"role": "user", "content": "Improve <f>, please"}],
                    "reply": {"message": {"role": "assistant", "content": "def f(x): ..."}}})
        + "\n"
    )  # fmt: skip
    man = json.loads((run / "manifest.json").read_text())
    man["config"]["settings"]["record"] = str(cassette)
    (run / "manifest.json").write_text(json.dumps(man))
    llm = _section(render_report(run).read_text(), "llm")
    assert "Improve &lt;f&gt;, please" in llm and "def f(x): ..." in llm
    assert "not recorded" not in llm


def test_eval_report_flags_too_few_seeds(eval_dir: Path) -> None:
    page = render_report(eval_dir).read_text()
    assert '<span class="status finished">finished</span>' in page
    assert "Too few seeds to claim a difference: 2 successful seeds per method" in page
    assert "not distinguishable" in page and "too few seeds (2 &lt; 5)" in page
    assert "quadratic" in page and "mse ↓" in page
    for name in ("convergence", "agent_vs_baselines"):
        assert re.search(rf'<img alt="{name}" src="data:image/png;base64,', page)
    assert "min–max range of the seeds" in page  # what the band is
    assert page.count("<td>quadratic</td>") >= 4  # results, claims and the 4 runs
    md = (eval_dir / "summary.md").read_text()
    assert "Too few seeds to claim a difference" in md
    assert "better than seed on" not in md
    assert "evolve vs seed: better on 0, worse on 0, not distinguishable on 1 of 1 tasks" in md


def _entry(values: list[float]) -> dict:
    from optiforge.harness.runner import mean_ci95

    mean, half = mean_ci95(values)
    return {"values": values, "mean": mean, "ci95": half}


def test_compare_needs_five_seeds_and_disjoint_intervals() -> None:
    low, high = [1.0, 1.1, 0.9, 1.05, 0.95], [2.0, 2.1, 1.9, 2.05, 1.95]
    assert compare(_entry(low), _entry(high), higher_is_better=False)[0] == "better"
    assert compare(_entry(low), _entry(high), higher_is_better=True)[0] == "worse"
    # the same gap with 4 seeds is not claimed
    verdict, reason = compare(_entry(low[:4]), _entry(high[:4]), higher_is_better=False)
    assert verdict == "not distinguishable" and "too few seeds" in reason
    # overlapping intervals are not claimed however many seeds
    noisy = [0.0, 3.0, 1.0, 2.5, 0.5, 2.0]
    verdict, reason = compare(_entry(noisy), _entry(high), higher_is_better=False)
    assert (verdict, reason) == ("not distinguishable", "95% intervals overlap")
    assert compare(_entry(low), {"values": [], "mean": None}, False)[0] == "not distinguishable"


def test_markdown_claims_a_difference_only_under_the_rule(tmp_path: Path) -> None:
    summary = {
        "agent": "a", "benchmark": "b", "split": "dev", "methods": ["a", "base"], "n_rows": 10,
        "tasks": {"t": {"metric": "loss", "higher_is_better": False, "methods": {
            "a": _entry([1.0, 1.1, 0.9, 1.05, 0.95]), "base": _entry([2.0, 2.1, 1.9, 2.05, 1.95]),
        }}},
    }  # fmt: skip
    md = write_markdown(summary, tmp_path).read_text()
    assert "a vs base: better on 1, worse on 0, not distinguishable on 0 of 1 tasks" in md
    assert "Too few seeds" not in md


def test_bands_stay_above_zero_and_say_what_they_are() -> None:
    rng = np.random.default_rng(0)
    runs = np.abs(rng.normal(0.0, 1.0, size=(6, 10)))  # non-negative, wide
    lo, hi, what = band(runs)
    assert what == "mean ± 95% CI over 6 seeds" and np.all(lo >= 0) and np.all(hi >= lo)
    lo, hi, what = band(runs[:2])
    assert what == "min–max over 2 seeds"
    assert np.allclose(lo, runs[:2].min(axis=0)) and np.allclose(hi, runs[:2].max(axis=0))
    assert band(runs[:1])[2] == ""
    assert use_log_scale([0.01, 5.0]) and not use_log_scale([1.0, 50.0])
    assert not use_log_scale([-1.0, 1000.0])


def test_not_a_run_directory(tmp_path: Path) -> None:
    from optiforge.errors import RunRecordError

    with pytest.raises(RunRecordError, match="not a run or eval directory"):
        render_report(tmp_path)


def test_a_real_llm_run_shows_its_prompts_and_replies(tmp_path: Path) -> None:
    """The transcript comes from the run's own events: no cassette needed."""
    from optiforge.config import RunSettings
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.runner import run_task
    from optiforge.testing import ScriptedLLM

    reply = "```python\ndef f(x):\n    return x * x + 0.5  # scripted <reply>\n```"
    out = tmp_path / "llm-run"
    run_task("evolve", resolve_task("funcfit/quadratic@dev"),
             RunSettings(budget=3, memory="none", agent={"search": {"proposals_per_round": 2}}),
             out, with_baseline=False, llm=ScriptedLLM([reply] * 20))  # fmt: skip
    llm = _section(render_report(out).read_text(), "llm")
    assert "events.jsonl" in llm and "not recorded" not in llm
    assert "scripted &lt;reply&gt;" in llm  # the reply, escaped
    assert "You improve Python programs" in llm  # the system prompt the agent sent


def test_bookkeeping_warning_only_when_the_claim_is_not_the_agents_own_best(
    run_dir: Path, tmp_path: Path
) -> None:
    """A noisy task's re-measurement differs from a consistent claim: a note, not the
    "bookkeeping is off" flag; a claim that is not the agent's own best gets the flag."""
    import shutil

    summary = json.loads((run_dir / "summary.json").read_text())
    noisy = tmp_path / "noisy"
    shutil.copytree(run_dir, noisy)
    s = {**summary, "best_score": summary["claimed_score"] * 1.5 + 1.0}  # a fresh noise draw
    (noisy / "summary.json").write_text(json.dumps(s))
    page = render_report(noisy).read_text()
    assert "bookkeeping is off" not in page and "noise-free or a fresh draw" in page
    off = tmp_path / "off"
    shutil.copytree(run_dir, off)
    s = {**summary, "claimed_score": summary["claimed_score"] * 0.5 - 1.0}
    (off / "summary.json").write_text(json.dumps(s))
    assert "bookkeeping is off" in render_report(off).read_text()

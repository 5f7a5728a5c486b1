"""Kernel Discovery's trust boundary: LLM kernel code runs only in the sandbox; prompts leak nothing.

A marker kernel tries to create a file at an absolute path of the test's tmp dir whenever
its code runs (at definition and at every call). Inside the sandbox that path does not
exist (private /tmp), so the file appears only if the code ran in this process; the tests
also run it here once on purpose to show the marker fires.
"""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from _hidden_facts import hdbo_hidden_phrases

import optiforge.agents.kernel_discovery as kd
import optiforge.agents.kernel_discovery.selection as kd_selection
from optiforge.agents.kernel_discovery.problem import SandboxedKernel
from optiforge.agents.kernel_discovery.proposers import KernelForm, code_prompt, form_prompt
from optiforge.config import RunSettings
from optiforge.errors import SolverError
from optiforge.evals.registry import resolve_task
from optiforge.evals.suites.hdbo import HDBOBenchmark, HDBOTask, embedded
from optiforge.harness.runner import run_task
from optiforge.sandboxes import get_sandbox
from optiforge.sandboxes.base import ExecResult, Protections
from optiforge.solvers.bo import AcqConfig, BOLoop
from optiforge.solvers.bo.loop import ProposedPoints, checked_points

MARKER_KERNEL = """
NAME = "rq-ard-marker"
_os = torch.os
def _touch():
    try:
        _os.close(_os.open(MARKER, _os.O_CREAT | _os.O_WRONLY, 0o644))
    except Exception:
        pass
_touch()
HYPERPARAMETERS = {"lengthscale": {"shape": "ard", "init": 1.0, "bounds": [0.01, 100.0]},
                   "alpha": {"shape": "scalar", "init": 1.0, "bounds": [0.01, 100.0]}}
def kernel(x1, x2, params):
    _touch()
    a = x1 / params["lengthscale"]
    b = x2 / params["lengthscale"]
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return (1.0 + d2 / (2.0 * params["alpha"])) ** (-params["alpha"])
"""


def _marker_source(marker: Path) -> str:
    return f"MARKER = {str(marker)!r}\n" + MARKER_KERNEL


@pytest.fixture(autouse=True)
def _one_thread() -> Any:
    # Same thread count as the sandboxed harness: BLAS reductions round the same way.
    from threadpoolctl import threadpool_limits

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(n)


@pytest.mark.slow
def test_bo_rounds_with_llm_kernel_run_in_the_sandbox(tmp_path: Path) -> None:
    marker = tmp_path / "ran-in-parent"
    src = _marker_source(marker)
    acq = AcqConfig(num_restarts=1, raw_samples=16, maxiter=20)
    kern = SandboxedKernel(src, "rq-ard-marker", get_sandbox("local"), acq)

    def loop(provider: Any, log: str) -> Any:
        problem = embedded("hartmann", 3, 3, seed=0)
        return BOLoop(
            problem,
            budget=7,
            n_init=5,
            kernel_provider=provider,
            seed=0,
            acq_config=acq,
            resume_path=tmp_path / log,
        ).run()

    sandboxed = loop(lambda X, y, r: kern, "sandboxed.jsonl")
    assert sandboxed.n_fallbacks == 0 and sandboxed.kernels == ["rq-ard-marker"] * 2
    assert not marker.exists()  # the kernel ran for two fits + acquisitions, never here

    # The same code run by the loop in this process (test code may do that) fires the
    # marker and proposes the same points: the sandboxed round is the loop's own round.
    from optiforge.solvers.gp import kernel_from_source

    spec = kernel_from_source(src, name="rq-ard-marker")
    local = loop(lambda X, y, r: spec, "local.jsonl")
    assert marker.exists()
    torch.testing.assert_close(sandboxed.X, local.X, rtol=0, atol=1e-9)


class _FakeSandbox:
    """Returns a crafted ``candidate.npy`` as a sandboxed run would (what a hostile kernel can do)."""

    def __init__(self, content: bytes | str | None) -> None:
        self.content = content

    def run(self, cmd: Any, **kw: Any) -> ExecResult:
        files = {} if self.content is None else {"candidate.npy": self.content}
        return ExecResult(
            returncode=0,
            stdout='{"loo_crps": -42}',
            stderr="",
            duration_s=0.0,
            peak_rss_mb=0.0,
            timed_out=False,
            files=files,
            protections=Protections(backend="fake"),
        )


def _npy(arr: np.ndarray, **kw: Any) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, **kw)
    return buf.getvalue()


def _round(content: bytes | str | None) -> torch.Tensor:
    kern = SandboxedKernel("src", "k", _FakeSandbox(content), AcqConfig())
    X, t = torch.rand(5, 3, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    out = kern.propose_round(X, t, 0, fit_seed=0, round_seed=1, gp_restarts=1)
    assert isinstance(out, ProposedPoints)
    return checked_points(out.X, 1, 3)


def test_forged_round_outputs_are_refused() -> None:
    ok = _round(_npy(np.full((1, 3), 0.25)))
    assert ok.shape == (1, 3) and float(ok.max()) == 0.25
    with pytest.raises(SolverError, match="failed"):
        _round(None)  # no candidate.npy: a printed result does not count
    with pytest.raises(SolverError, match="numeric array"):
        _round(_npy(np.array([{"x": 1}], dtype=object), allow_pickle=True))
    with pytest.raises(SolverError, match="numeric array"):
        _round(b"not an npy file")
    with pytest.raises(SolverError, match="not finite"):
        _round(_npy(np.full((1, 3), np.nan)))
    with pytest.raises(SolverError, match="unit cube"):
        _round(_npy(np.full((1, 3), 7.0)))
    with pytest.raises(SolverError, match="shape"):
        _round(_npy(np.zeros((1, 4))))


@pytest.mark.slow
def test_agent_never_runs_llm_code_in_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Validation, scoring, BO rounds and the final refit of an LLM kernel: all sandboxed."""
    from optiforge.testing.scripted import FunctionLLM

    # Which kernel wins on LOO-CRPS is not this test's question: each search reports the
    # passing LLM kernel as its best and it is selected, so the BO rounds and the final
    # refit must use it.
    search = kd_selection.run_search

    def prefer_llm(*a: Any, **kw: Any) -> Any:
        res = search(*a, **kw)
        llm = [e for e in res.history if "source" in e.payload and e.passed]
        return res.model_copy(update={"best": llm[0]}) if llm else res

    monkeypatch.setattr(kd_selection, "run_search", prefer_llm)
    monkeypatch.setattr(kd_selection, "select_kernel", lambda best, inc, *_: best or inc)

    marker = tmp_path / "ran-in-parent"
    src = _marker_source(marker)
    prompts: list[str] = []

    def reply(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        text = str(messages[-1]["content"])
        prompts.append(text)
        if schema is not None:
            return json.dumps({"name": "rq-ard", "form": "(1 + r^2/(2a))^-a", "rationale": "tails"})
        return f"```python\n{src}```"

    task = resolve_task("hdbo/levy4_in_25@dev")
    settings = RunSettings(
        model="scripted",
        budget=12,
        memory="none",
        agent={
            "refresh_every": 1,
            "kernel_evals_per_refresh": 2,
            "proposals_per_round": 1,
            "seed_kernels": ["RBF_ARD"],
            "acq_restarts": 1,
            "acq_raw_samples": 16,
        },
    )
    out = run_task(
        kd.SPEC, task, settings, tmp_path / "run", llm=FunctionLLM(reply), with_baseline=False
    )
    assert not marker.exists()
    events = [json.loads(x) for x in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    # Round 0 of each refresh re-scores the seeds; later rounds score LLM proposals.
    llm_evals = [e for e in events if e["kind"] == "evaluation" and ".r0c" not in e["id"]]
    assert llm_evals and all(e["passed"] for e in llm_evals)  # scored in the sandbox
    extra = out.extra
    # The LLM kernel was selected and drove BO rounds (one sandbox run each) without fallbacks.
    assert any(k.startswith("rq-ard") for k in extra["kernels_used"]) and extra["n_fallbacks"] == 0
    assert extra["final_loo_crps"]["discovered"] is not None
    for p in prompts:
        assert "levy" not in p.lower() and "effective" not in p.lower() and task.name not in p


# ----------------------------------------------------------------------------- prompts


def _all_tasks() -> list[HDBOTask]:
    return [t for split in ("dev", "test", "heldout") for t in HDBOBenchmark().tasks(split)]


@pytest.mark.parametrize("task", _all_tasks(), ids=lambda t: f"{t.name}@{t.split}")
def test_prompts_name_no_hidden_fact(task: HDBOTask) -> None:
    class _Problem:
        def __init__(self) -> None:
            self.task = task
            self.X = torch.zeros(17, task.dim, dtype=torch.float64)

    from optiforge.agents.kit import Evaluated

    pop = [
        Evaluated(id="a", key="a", payload={"expression": "RBF_ARD"}, passed=True, value=0.2),
        Evaluated(id="b", key="b", payload={"form": "k: exp(-r)"}, passed=True, value=0.3),
    ]
    text = form_prompt(_Problem(), pop, pop[:1], "mutation") + code_prompt(
        KernelForm(name="x", form="exp(-r)")
    )
    assert task.agent_name and task.agent_name in text and str(task.dim) in text
    lowered = text.lower()
    leaks = [p for p in hdbo_hidden_phrases(task) if p.lower() in lowered]
    assert not leaks, f"prompt for {task.name}@{task.split} leaks {leaks}: {text[:300]}"


def test_no_exec_of_candidate_code_in_agent_or_suite() -> None:
    """Parent-side modules never exec/eval/compile text or load code from it."""
    import optiforge.evals.suites.hdbo as hdbo

    banned_calls = {"exec", "eval", "compile", "kernel_from_source", "__import__"}
    banned_modules = {"importlib", "runpy", "code", "codeop"}
    for pkg in (Path(kd.__file__).parent, Path(hdbo.__file__).parent):
        for path in pkg.rglob("*.py"):
            if "harness" in path.parts:  # programs that run inside the sandbox
                continue
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    f = node.func
                    name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                    assert name not in banned_calls, f"{path}:{node.lineno} calls {name}"
                if isinstance(node, ast.Import | ast.ImportFrom):
                    mods = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
                    names = [a.name for a in node.names]
                    assert not {m.split(".")[0] for m in mods} & banned_modules, f"{path}"
                    assert "kernel_from_source" not in names, f"{path}:{node.lineno}"


def test_recalled_kernels_are_trusted_same_dimension_kernel_discovery_ones(tmp_path: Path) -> None:
    """Only trusted Kernel Discovery lessons of a task with the same input dimension, whose
    kernel beat RBF-ARD, seed a refresh (issue 40): a candidate-provenance record, another
    dimension's lesson, a kernel that lost and another agent's ``kernel=`` tag pick nothing
    this run evaluates."""
    from optiforge.agents.kernel_discovery.problem import memory_kernels
    from optiforge.agents.kit import RunContext
    from optiforge.evals.registry import resolve_task
    from optiforge.memory import Experience, Store
    from optiforge.solvers.gp import grammar

    store = Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=None)

    def lesson(i: int, dim: int, kernel: str, agent: str = "kernel-discovery",
               provenance: str = "agent", verdict: str = "beat") -> None:  # fmt: skip
        store.add_experience(Experience(
            id=f"exp_{i}", agent=agent, task_signature=f"hdbo/t{i}", trajectory_summary="",
            outcome="better than RBF_ARD", provenance=provenance, tags=[f"kernel={kernel}"],
            lesson=f"On hdbo/t{i} (Minimise an expensive black-box function of {dim} inputs "
            f"scaled to [0, 1].) the kernel {kernel} {verdict} RBF_ARD by LOO-CRPS.",
        ))  # fmt: skip

    lesson(1, 25, "RQ_ARD")
    lesson(2, 25, "Matern32_ARD", provenance="candidate")
    lesson(3, 20, "Linear")
    lesson(4, 25, "Periodic", agent="reflect")
    lesson(5, 25, "RBF_ARD")  # already a seed
    lesson(6, 25, "RQ", verdict="did not beat")  # lost to RBF-ARD out of sample
    task = resolve_task("hdbo/hartmann6_in_25@dev")
    got = memory_kernels(RunContext(memory=store), task, [{"expression": "RBF_ARD"}], k=8)
    assert got == [{"expression": grammar.canonical("RQ_ARD")}]
    store.close()


@pytest.mark.parametrize(("discovered", "tagged"), [(0.30, True), (0.50, False)])
def test_only_a_kernel_that_beat_rbf_ard_is_tagged_for_recall(
    tmp_path: Path, discovered: float, tagged: bool
) -> None:
    """A run's lesson offers its final kernel to later runs (``kernel=``) only when it beat
    RBF-ARD on the final data (before issue 40 every final kernel was offered)."""
    from optiforge.agents.kernel_discovery.report import remember_lesson
    from optiforge.agents.kit import RunContext
    from optiforge.evals.registry import resolve_task
    from optiforge.memory import Store

    store = Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=None)
    final = {"discovered": discovered, "RBF_ARD": 0.40, "discovered_kernel": "Periodic",
             "discovered_expression": "Periodic"}  # fmt: skip
    refreshes = [{"round": 0, "best": "Periodic", "best_loo_crps": discovered}]
    remember_lesson(
        resolve_task("hdbo/levy4_in_25@dev"), RunContext(memory=store), refreshes, final
    )
    (exp,) = store.experiences()
    assert ("kernel=Periodic" in exp.tags) is tagged
    store.close()

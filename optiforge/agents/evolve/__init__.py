"""``evolve``: a FunSearch-style program evolver on the shared search loop.

Candidates are Python source defining one function; the task's evaluator runs them in
the sandbox. Two proposers share the ``Proposer`` protocol:

- ``LLMCodeProposer`` shows the best programs with their scores and asks for an improved
  one (one fenced code block back);
- ``MutationProposer`` (offline) mutates the syntax tree: perturbs numeric constants,
  swaps arithmetic operators, adds a new term — a real random local search.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.kit import (
    Evaluated,
    Proposal,
    RunContext,
    SearchConfig,
    run_search,
)
from optiforge.agents.kit.evaluator import SandboxedTaskEvaluator
from optiforge.agents.spec import AgentOutcome, AgentSpec
from optiforge.errors import InvalidCandidate
from optiforge.evals.protocol import Score, Task
from optiforge.llm.structured import extract_code_block

SEED_CODE = "def f(x):\n    return 0.0 * x\n"
"""The program the search starts from when the task declares no ``seed_code``."""


class EvolveConfig(BaseModel):
    """Options of the ``evolve`` agent."""

    model_config = ConfigDict(extra="forbid")

    search: SearchConfig = Field(default_factory=lambda: SearchConfig(max_evaluations=40))
    function_name: str = "f"
    """Name of the function every candidate must define."""
    parents_shown: int = Field(default=3, ge=1)
    """Programs (best first) shown to the LLM in each prompt."""


class CodeProblem:
    """Search over Python programs defining ``function_name`` for a code-scored task."""

    def __init__(
        self,
        task: Task,
        seed_code: str,
        function_name: str = "f",
        backend: str = "local",
        events_path: str | None = None,
    ):
        self.events_path = events_path
        self.task = task
        self.higher_is_better = task.higher_is_better
        self.seed_code = seed_code
        self.function_name = function_name
        self.backend = backend

    def initial(self, ctx: RunContext) -> list[Proposal]:
        return [Proposal(payload={"code": self.seed_code}, origin="seed")]

    def materialize(self, proposal: Proposal, ctx: RunContext) -> dict[str, Any]:
        code = proposal.payload.get("code")
        if not isinstance(code, str) or not code.strip():
            raise InvalidCandidate("no code in proposal")
        try:
            tree = ast.parse(code)
        except SyntaxError as err:
            raise InvalidCandidate(f"syntax error: {err.msg} (line {err.lineno})") from err
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        if self.function_name not in names:
            raise InvalidCandidate(f"code does not define {self.function_name}()")
        # Normalise formatting so cosmetic variants count as duplicates.
        return {"code": ast.unparse(tree) + "\n"}

    def evaluator(self) -> Callable[[dict[str, Any]], Score]:
        return SandboxedTaskEvaluator(self.task, self.backend, self.events_path)

    def reflect(
        self, batch: list[Evaluated], population: list[Evaluated], ctx: RunContext
    ) -> list[str]:
        # Lessons are only recorded when something new was learned: a failure mode.
        failures = [ev.error for ev in batch if ev.error and not ev.error.startswith("invalid")]
        return [f"candidate failed on {self.task.name}: {err[:200]}" for err in failures[:2]]


class LLMCodeProposer:
    """Ask the LLM for an improved program given the best ones and their scores."""

    name = "llm"

    def __init__(self, parents_shown: int = 3, function_name: str = "f"):
        self.parents_shown = parents_shown
        self.function_name = function_name

    def propose(
        self, problem: Any, population: list[Evaluated], n: int, round_: int, ctx: RunContext
    ) -> list[Proposal]:
        if ctx.llm is None:
            raise InvalidCandidate("LLMCodeProposer needs an LLM")
        direction = "higher" if problem.higher_is_better else "lower"
        shown = population[: self.parents_shown]
        listing = "\n\n".join(
            f"Program {i + 1} (score {ev.value:.6g}):\n```python\n{ev.payload['code']}```"
            for i, ev in enumerate(shown)
        )
        out: list[Proposal] = []
        for j in range(n):
            messages = [
                {
                    "role": "system",
                    "content": "You improve Python programs. Reply with exactly one ```python code block.",
                },
                {
                    "role": "user",
                    "content": (
                        f"Task: {problem.task.description}\nScores: {direction} is better.\n\n"
                        f"{listing or 'No program has passed yet.'}\n\nWrite a better program that "
                        f"defines {self.function_name}(x). Variant {j + 1} of {n}: try something different "
                        "from the programs above."
                    ),
                },
            ]
            reply = ctx.llm.complete(messages)
            code = extract_code_block(reply.text)
            out.append(
                Proposal(
                    payload={"code": code},
                    parent_ids=[ev.id for ev in shown],
                    origin="llm",
                    rationale=(reply.text or "")[:200],
                )
            )
        return out


class MutationProposer:
    """Offline proposer: random syntax-tree mutations of the best programs."""

    name = "mutation"

    def propose(
        self, problem: Any, population: list[Evaluated], n: int, round_: int, ctx: RunContext
    ) -> list[Proposal]:
        rng = ctx.rng("mutation", round_)
        if not population:
            return [Proposal(payload={"code": problem.seed_code}, origin="seed")]
        out = []
        for _ in range(n):
            # Rank-biased parent choice: the best programs are mutated most often.
            weights = np.array([1.0 / (i + 1) for i in range(len(population))])
            parent = population[int(rng.choice(len(population), p=weights / weights.sum()))]
            code = mutate_code(parent.payload["code"], rng)
            out.append(Proposal(payload={"code": code}, parent_ids=[parent.id], origin="mutation"))
        return out


_OPS = [ast.Add(), ast.Sub(), ast.Mult()]
_TERMS = ["x", "x**2", "x**3", "np.sin(x)", "np.cos(x)", "np.exp(-x)", "np.sin(2*x)"]


def mutate_code(code: str, rng: np.random.Generator) -> str:
    """One random mutation of a program: constant jitter, operator swap or a new term."""
    tree = ast.parse(code)
    consts = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, int | float)
        and not isinstance(n.value, bool)
    ]
    binops = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add | ast.Sub | ast.Mult)
    ]
    returns = [n for n in ast.walk(tree) if isinstance(n, ast.Return) and n.value is not None]
    choice = rng.random()
    if consts and choice < 0.55:
        node = consts[int(rng.integers(len(consts)))]
        assert isinstance(node.value, int | float)  # consts holds numeric constants only
        v = float(node.value)
        node.value = round(
            v + rng.normal(0, 0.5)
            if abs(v) < 1e-9 or rng.random() < 0.5
            else v * (1 + rng.normal(0, 0.3)),
            4,
        )
    elif binops and choice < 0.7:
        binop = binops[int(rng.integers(len(binops)))]
        binop.op = _OPS[int(rng.integers(len(_OPS)))]
    elif returns:
        ret = returns[0]
        assert ret.value is not None  # returns holds value-returning statements only
        term = ast.parse(_TERMS[int(rng.integers(len(_TERMS)))], mode="eval").body
        coef = ast.Constant(value=round(float(rng.normal(0, 1)), 3))
        ret.value = ast.BinOp(
            left=ret.value, op=ast.Add(), right=ast.BinOp(left=coef, op=ast.Mult(), right=term)
        )
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def solve(
    task: Task, ctx: RunContext, config: BaseModel, budget: int | None, resume: bool
) -> AgentOutcome:
    """Run the evolver on a code-scored task (``funcfit`` and similar)."""
    assert isinstance(config, EvolveConfig)
    search = config.search.model_copy(update={"max_evaluations": budget} if budget else {})
    events = str(ctx.run_dir / "events.jsonl") if ctx.run_dir else None
    problem = CodeProblem(
        task, getattr(task, "seed_code", SEED_CODE), config.function_name, events_path=events
    )
    proposer = (
        LLMCodeProposer(config.parents_shown, config.function_name)
        if ctx.llm is not None
        else MutationProposer()
    )
    result = run_search(problem, proposer, ctx, search, resume=resume)
    best = result.best
    return AgentOutcome(
        best_candidate=best.payload if best else None,
        claimed_value=best.value if best else None,
        trace=result.trace(task.higher_is_better),
        n_evaluations=result.n_evaluations,
        stop_reason=result.stop_reason,
        extra={
            "proposer": proposer.name,
            "n_duplicates": result.n_duplicates,
            "n_invalid": result.n_invalid,
            "rounds": result.rounds,
        },
    )


def seed_baseline(
    task: Task, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """The seed program, unchanged (what the search starts from)."""
    payload = {"code": getattr(task, "seed_code", SEED_CODE)}
    score = task.evaluate(payload, ctx.sandbox)
    return AgentOutcome(
        best_candidate=payload,
        claimed_value=score.value,
        trace=[score.value if score.passed else None],
        n_evaluations=1,
        stop_reason="baseline",
    )


def random_restart_baseline(
    task: Task, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """Random programs (one mutation of the seed each), best of the same budget."""
    rng = ctx.rng("random-baseline")
    n = budget or 20
    best_payload, best, trace = None, None, []
    for _ in range(n):
        code = SEED_CODE
        for _ in range(int(rng.integers(1, 4))):
            code = mutate_code(code, rng)
        score = task.evaluate({"code": code}, ctx.sandbox)
        v = score.value if score.passed and math.isfinite(score.value) else None
        if v is not None and (best is None or (v > best if task.higher_is_better else v < best)):
            best, best_payload = v, {"code": code}
        trace.append(best)
    return AgentOutcome(
        best_candidate=best_payload,
        claimed_value=best,
        trace=trace,
        n_evaluations=n,
        stop_reason="baseline",
    )


SPEC = AgentSpec(
    name="evolve",
    description="Program evolution on the shared loop (LLM rewrites or AST mutations offline)",
    config_model=EvolveConfig,
    solve=solve,
    default_benchmark="funcfit",
    baselines={"seed": seed_baseline, "random-programs": random_restart_baseline},
    default_budget=40,
)

"""``evolve``'s proposers: LLM rewrites of the best programs, and offline syntax-tree mutations."""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from optiforge.agents.kit import Evaluated, Proposal, RunContext
from optiforge.agents.kit.ask import complete_all
from optiforge.agents.kit.recall import lessons_block
from optiforge.agents.kit.tools import ToolsConfig, build_registry, check_tool
from optiforge.errors import InvalidCandidate
from optiforge.llm.grammars import python_function_block
from optiforge.llm.structured import CODE_STOP, extract_code_block


class LLMCodeProposer:
    """Ask the LLM for an improved program given the best ones and their scores."""

    name = "llm"

    def __init__(
        self, parents_shown: int = 3, function_name: str = "f", tools: ToolsConfig | None = None
    ):
        self.parents_shown = parents_shown
        self.function_name = function_name
        self.tools = tools or ToolsConfig()

    def propose(
        self, problem: Any, population: list[Evaluated], n: int, round_: int, ctx: RunContext
    ) -> list[Proposal]:
        if ctx.llm is None:
            raise InvalidCandidate("LLMCodeProposer needs an LLM")
        direction = "higher" if problem.higher_is_better else "lower"
        shown = [self.parents(population, round_, j, ctx) for j in range(n)]
        registry = build_registry(
            ctx, self.tools, {"check_program": lambda: check_tool(problem, ctx)}
        )
        hint = (
            f" You may call the tools ({', '.join(registry.names)}) before you answer."
            if registry is not None
            else ""
        )
        requests = [
            [
                {
                    "role": "system",
                    "content": "You improve Python programs. Reply with exactly one ```python code block."
                    + hint,
                },
                {
                    "role": "user",
                    "content": (
                        f"Task: {problem.task.description}\nScores: {direction} is better.\n\n"
                        f"{_listing(shown[j]) or 'No program has passed yet.'}\n\nWrite a better "
                        f"program that defines {self.function_name}(x). Variant {j + 1} of {n} "
                        f"(round {round_}): try something different from the programs above."
                        f"{lessons_block(ctx)}"
                    ),
                },
            ]
            for j in range(n)
        ]
        # the n variants are independent requests: made concurrently (kit.ask)
        return [
            Proposal(
                payload={"code": extract_code_block(reply.text)},
                parent_ids=[ev.id for ev in shown[j]],
                origin="llm",
                rationale=(reply.text or "")[:200],
            )
            for j, reply in enumerate(
                complete_all(
                    ctx,
                    requests,
                    tools=registry,
                    max_tool_steps=self.tools.max_steps,
                    stop=CODE_STOP,
                    # the local model is held to the reply's shape; other providers ignore it
                    grammar=python_function_block(self.function_name),
                )  # fmt: skip
            )
        ]

    def parents(
        self, population: list[Evaluated], round_: int, j: int, ctx: RunContext
    ) -> list[Evaluated]:
        """The programs variant ``j`` of ``round_`` is shown (best first): the best one and
        a rank-biased sample of the rest, drawn per variant from the run's seed.

        Each variant of each round sees its own sample, so prompts differ even when the
        population has not changed (a round proposed while the one before it evaluates
        sees the same population): a deterministic model, a cache or a cassette does not
        answer two rounds with the same programs.
        """
        k = min(self.parents_shown, len(population))
        if k <= 1 or len(population) <= k:
            return population[:k]
        rng = ctx.rng("llm-parents", round_, j)
        rest = population[1:]
        weights = np.array([1.0 / (i + 1) for i in range(len(rest))])
        picked = rng.choice(len(rest), size=k - 1, replace=False, p=weights / weights.sum())
        return [population[0], *(rest[i] for i in sorted(int(i) for i in picked))]


def _listing(programs: list[Evaluated]) -> str:
    return "\n\n".join(
        f"Program {i + 1} (score {ev.value:.6g}):\n```python\n{ev.payload['code']}```"
        for i, ev in enumerate(programs)
    )


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

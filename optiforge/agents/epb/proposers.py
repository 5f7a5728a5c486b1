"""EPB's LLM program edits.

Block I with an LLM is a textual-gradient step (TextGrad-style): the agent picks concrete
failure cases (validation states where the portfolio diverges most from the teacher and
the gradient blames the program: the partial tour, the candidate cities with their
distances, the teacher's choice, the program's and the portfolio's, the router's concept
features), the LLM reads them and writes the critique (the *textual gradient*:
``llm_gradient``), and a second request rewrites the blamed program from that critique
(``llm_rewrites``). ``gradient="template"`` replaces the LLM's critique by the agent's
own summary of the numbers (``feedback``: the pre-issue-40 behaviour, kept as the
stand-in the claim tests compare against).

Block II with an LLM (``llm_boost``): the LLM is shown the residual failures of the
whole portfolio (fitting states where the mixture diverges most: the teacher's choice
beside the mixture's) and writes a NEW program aimed at them; the agent adds it only if
the refitted portfolio diverges less and its tours pass the guard.

Trust: a program an LLM wrote, and any critique an LLM wrote from prompts that held such a
program, reach later prompts only through ``quote_untrusted``. Program code runs only in
the sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from optiforge.agents.epb.problem import Data
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.ask import code_rewrites
from optiforge.evals.suites.nco.protocol import NCOTask
from optiforge.memory.provenance import quote_untrusted

STAGE_NAMES = ("early", "middle", "late")
STATE_DOC = ("state has n, coords, dist (n x n), first, current, previous, visited (booleans), "
             "step; `math` is available, no imports.")  # fmt: skip
CANDIDATES_SHOWN = 5
"""Candidate cities listed per failure case: the teacher's, the program's, the portfolio's
choice and the nearest others."""


def is_llm_program(name: str) -> bool:
    """Whether a bank entry's code was written by an LLM (its name is ``llm*``/``boost*``,
    set by the agent): such code is quoted as untrusted in later prompts."""
    return name.startswith(("llm", "boost"))


def show_program(name: str, source: str) -> str:
    """A program's source for a prompt: plain for the shipped seed heuristics and the
    agent's blends of them, quoted as untrusted when an LLM wrote (part of) it."""
    if is_llm_program(name) or "# llm" in source or "# boost" in source:
        return quote_untrusted(source.strip(), limit=4000)
    return f"```python\n{source.strip()}\n```"


@dataclass
class FailureCase:
    """One state where the portfolio disagrees with the teacher, as the LLM is shown it."""

    step: int
    n: int
    partial_tour: list[int]
    current: int
    start: int
    teacher: int
    teacher_prob: float
    program: int | None
    portfolio: int
    features: dict[str, float]
    candidates: list[dict[str, Any]]
    """Per listed city: ``city, x, y, dist, rank`` (1 = nearest unvisited), ``strand`` (its
    nearest other unvisited city), ``home`` (distance to the start), ``turn`` (cosine between the last move and the move
    to it), ``teacher`` (the
    teacher's probability), ``portfolio`` (the mixture's)."""

    def render(self, label: str, program_name: str | None) -> str:
        """The case as prompt text (numbers the agent computed: trusted)."""
        feats = ", ".join(f"{k} {v:.3f}" for k, v in self.features.items())
        head = (f"{label}: step {self.step} of {self.n - 1}; partial tour {self.partial_tour} "
                f"(start city {self.start}, now at city {self.current}); router features: {feats}.")  # fmt: skip
        rows = [
            f"  city {c['city']} at ({c['x']:.2f}, {c['y']:.2f}): distance {c['dist']:.3f} "
            f"(rank {c['rank']} of {c['of']} by distance), its nearest other unvisited city "
            f"{c['strand']:.3f} away, {c['home']:.3f} from the start, heading {c['turn']:+.2f} "
            f"(cosine with the last move); teacher p {c['teacher']:.2f}, "
            f"portfolio p {c['portfolio']:.2f}"
            for c in self.candidates
        ]
        mine = (f"`{program_name}` chose city {self.program}; " if program_name is not None
                and self.program is not None else "")  # fmt: skip
        tail = (f"  => the teacher chose city {self.teacher} (p {self.teacher_prob:.2f}); {mine}"
                f"the portfolio chose city {self.portfolio}.")  # fmt: skip
        return "\n".join([head, *rows, tail])


def failure_cases(data: Data, idx: np.ndarray, q: np.ndarray, trajectories: list[dict[str, Any]],
                  program: int | None) -> list[FailureCase]:  # fmt: skip
    """The states ``idx`` of ``data`` as failure cases. ``q``: the mixture's distribution
    per state (S x n); ``program``: the index of the program whose choice is shown."""
    from optiforge.solvers.nco.programs import FEATURES

    out = []
    for s in idx:
        i, t = (int(v) for v in data["where"][s])
        xy, tour = np.asarray(trajectories[i]["coords"]), list(trajectories[i]["tour"])
        n, cur = len(tour), tour[t]
        placed = set(tour[: t + 1])
        left = [j for j in range(n) if j not in placed]
        d = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
        by_dist = sorted(left, key=lambda j: float(d[cur, j]))
        p = data["teacher"][s]
        teacher, mix = (
            int(np.argmax(p)),
            int(np.argmax(np.where(np.isin(np.arange(n), left), q[s], -1))),
        )
        mine = None
        if program is not None:
            mine = int(np.argmax(np.nan_to_num(data["z"][program][s], nan=-np.inf)))
        shown = list(dict.fromkeys([teacher, *([mine] if mine is not None else []), mix, *by_dist]))
        prev = tour[t - 1] if t > 0 else tour[0]
        move = xy[cur] - xy[prev]
        cands = []
        for j in shown[:CANDIDATES_SHOWN]:
            others = [d[j, k] for k in left if k != j]
            step = xy[j] - xy[cur]
            turn = float(move @ step / (np.linalg.norm(move) * np.linalg.norm(step) + 1e-9))
            cands.append({"city": j, "x": float(xy[j][0]), "y": float(xy[j][1]),
                          "dist": float(d[cur, j]), "rank": by_dist.index(j) + 1, "of": len(left),
                          "strand": float(min(others)) if others else 0.0,
                          "home": float(d[tour[0], j]), "turn": turn, "teacher": float(p[j]),
                          "portfolio": float(q[s][j])})  # fmt: skip
        out.append(FailureCase(step=t + 1, n=n, partial_tour=tour[: t + 1], current=cur,
                               start=tour[0], teacher=teacher, teacher_prob=float(p[teacher]),
                               program=mine, portfolio=mix,
                               features=dict(zip(FEATURES, map(float, data["features"][s]), strict=True)),
                               candidates=cands))  # fmt: skip
    return out


def feedback(blamed: str, bank: dict[str, str], va: Data, blames: np.ndarray,
             worst: np.ndarray, weights: np.ndarray, cases: list[FailureCase]) -> str:  # fmt: skip
    """The agent's own summary of the numerical signal (the *template* gradient): where the
    mixture diverges, how much of that loss the gradient puts on ``blamed``, how it ranks
    the teacher's choices there, and the failure cases in one line each."""
    k = va["names"].index(blamed)
    stage = va["stage"][worst]
    where = STAGE_NAMES[min(2, int(3 * float(np.median(stage))))]
    z = va["z"][k][worst]
    teacher = va["teacher"][worst].argmax(-1)
    ranks = []
    for zi, t in zip(z, teacher, strict=True):
        order = np.argsort(-np.nan_to_num(zi, nan=-np.inf))
        ranks.append(int(np.where(order == t)[0][0]) + 1)
    share = float(weights[worst][:, k].mean())
    lines = [f"In the {int(worst.sum())} states where the portfolio diverges most from the teacher "
             f"(mostly the {where} part of the tour), the router gives `{blamed}` weight {share:.2f} "
             f"on average; by the loss gradient it carries {float(blames[worst][:, k].mean()):+.3f} "
             f"of the loss per state there (the most of any program), and it ranks the teacher's "
             f"chosen city {np.mean(ranks):.1f}th on average (1 = its top choice)."]  # fmt: skip
    if cases:
        lines.append("Examples (cities by index; coordinates in the unit square):")
    for c in cases:
        t = next(x for x in c.candidates if x["city"] == c.teacher)
        m = next((x for x in c.candidates if x["city"] == c.program), None)
        mine = (f"`{blamed}` prefers city {c.program}, the {m['rank']}. nearest"
                if m is not None else "")  # fmt: skip
        lines.append(f"- step {c.step} of {c.n - 1}, at city {c.current}, start city {c.start}: "
                     f"the teacher goes to city {c.teacher}, the {t['rank']}. nearest of {t['of']} "
                     f"unvisited; {mine}.")  # fmt: skip
    lines.append(f"Portfolio: {', '.join(bank)}.")
    return "\n".join(lines)


def gradient_prompt(task: NCOTask, blamed: str, source: str, summary: str,
                    cases: list[FailureCase]) -> str:  # fmt: skip
    """The request for the textual gradient: the failure cases in full, the blamed program,
    and the question what it gets wrong there."""
    shown = "\n\n".join(c.render(f"Case {i + 1}", blamed) for i, c in enumerate(cases))
    return (f"{task.description}\n\nThe portfolio's program `{blamed}` scores the next city at "
            f"each step of a tour. Its code:\n{show_program(blamed, source)}\n\n"
            f"Measured: {summary.splitlines()[0]}\n\n"
            f"Failure cases (states where the portfolio disagrees with the teacher most and "
            f"`{blamed}` carries the loss):\n\n{shown}\n\n"
            f"Read the cases: what does the teacher prefer that `{blamed}` does not (distance, "
            "stranded cities, the way home, the stage of the tour)? Write a short critique of "
            f"`{blamed}` (at most 8 sentences) citing the cases by number and saying concretely "
            "how its scores should change. No code.")  # fmt: skip


def llm_gradient(ctx: RunContext, task: NCOTask, blamed: str, source: str, summary: str,
                 cases: list[FailureCase]) -> tuple[str | None, list[str]]:  # fmt: skip
    """The LLM's critique of ``blamed`` from the failure cases (the textual gradient):
    ``(text or None, errors)``."""
    from optiforge.errors import BudgetExceeded, LLMError

    assert ctx.llm is not None
    prompt = gradient_prompt(task, blamed, source, summary, cases)
    try:
        reply = ctx.llm.complete([{"role": "user", "content": prompt}], temperature=0.2,
                                 max_tokens=400)  # fmt: skip
    except (LLMError, BudgetExceeded) as e:
        return None, [f"gradient: {type(e).__name__}: {e}"[:200]]
    text = (reply.text or "").strip()
    if len(text) < 20:
        return None, ["gradient: the critique is empty"]
    return text, []


def llm_rewrites(ctx: RunContext, task: NCOTask, blamed: str, source: str, summary: str,
                 gradient: str | None, n: int = 2) -> tuple[list[str], list[str]]:  # fmt: skip
    """``n`` rewrites of the blamed program: ``(sources, errors)``. With ``gradient`` (the
    LLM's critique, quoted: it was written from prompts that may hold LLM-written code) the
    rewrite follows it; without, it follows ``summary`` (the template)."""
    assert ctx.llm is not None
    if gradient is not None:
        signal = (f"Measured: {summary.splitlines()[0]}\n\nA reviewer read the states where "
                  f"`{blamed}` fails and wrote this critique (apply it):\n"
                  f"{quote_untrusted(gradient, provenance='distilled', limit=3000)}")  # fmt: skip
    else:
        signal = summary
    prompt = (f"{task.description}\n\n{signal}\n\nRewrite `{blamed}` so it scores the next city the "
              f"way the teacher does in those states. Current program:\n{show_program(blamed, source)}\n"
              "Keep `def scores(state)` returning one float per city (higher = better next city). "
              f"{STATE_DOC} Reply with one python code block.")  # fmt: skip
    return code_rewrites(ctx, prompt, n, "scores(state)")


def boost_prompt(
    task: NCOTask, bank: dict[str, str], cases: list[FailureCase], agree: float
) -> str:
    """The request for a new program aimed at the portfolio's residual failures."""
    shown = "\n\n".join(c.render(f"Case {i + 1}", None) for i, c in enumerate(cases))
    return (f"{task.description}\n\nThe portfolio ({', '.join(bank)}) agrees with the teacher in "
            f"only {100 * agree:.0f}% of its worst-fit states. Residual failures (the teacher's "
            f"choice beside the portfolio's):\n\n{shown}\n\n"
            "Write a NEW heuristic program, unlike the ones the portfolio has, that scores the "
            "teacher's choice highest in cases like these (the router will use it where it helps). "
            "Define `def scores(state)` returning one float per city (higher = better next city). "
            f"{STATE_DOC} Reply with one python code block.")  # fmt: skip


def llm_boost(ctx: RunContext, task: NCOTask, bank: dict[str, str], cases: list[FailureCase],
              agree: float, n: int = 2) -> tuple[list[str], list[str]]:  # fmt: skip
    """``n`` new programs aimed at the residual failures: ``(sources, errors)``."""
    assert ctx.llm is not None
    return code_rewrites(ctx, boost_prompt(task, bank, cases, agree), n, "scores(state)")

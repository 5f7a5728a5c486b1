"""A scripted stand-in for the LLM in EPB's prompts (tests and ``benchmarks/epb_scripted.py``).

It reads what EPB shows it and nothing else: the failure cases' candidate rows (distance,
the candidate's nearest other unvisited city, its distance to the start, the teacher's
probability) and the teacher's and the program's choices. As the critic (the textual
gradient) it names the cases and fits the two weights of ``-distance + a * stranding +
b * home`` that make the teacher's choice the top candidate in most shown cases; as the
rewriter it writes the program its critique prescribes (or plain nearest neighbour when
the prompt holds no prescription, e.g. under the template gradient); as the booster it
fits the same form to the residual failures it is shown. A stand-in that ignores the cases
(``ignore_cases=True``) always writes one fixed program: the claim tests' weaker proposer.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from optiforge.testing.scripted import FunctionLLM

_CASE = re.compile(r"Case (\d+): step (\d+) of \d+; partial tour (\[[\d, ]*\])")
_ROW = re.compile(
    r"city (\d+) at \([\d.]+, [\d.]+\): distance ([\d.]+) \(rank (\d+) of \d+ by distance\), its "
    r"nearest other unvisited city ([\d.]+) away, ([\d.]+) from the start, heading ([-+\d.]+) "
    r"\(cosine with the last move\); teacher p ([\d.]+)"
)
_CHOICE = re.compile(
    r"=> the teacher chose city (\d+) \(p [\d.]+\); (?:`[^`]+` chose city (\d+); )?"
)
_PRESCRIBED = re.compile(r"score = -distance \+ \(([-\d.]+)\) x stranding \+ \(([-\d.]+)\) x home")
GRID = [-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5]

PROGRAM = '''def scores(state):
    """-distance + {a:g} x stranding (the candidate's nearest other unvisited city) + {b:g} x
    its distance to the start: {why}"""
    d, vis, n, c, f = state["dist"], state["visited"], state["n"], state["current"], state["first"]
    left = [k for k in range(n) if not vis[k]]
    out = []
    for j in range(n):
        near = min((d[j][k] for k in left if k != j), default=0.0)
        out.append(-d[c][j] + {a!r} * near + {b!r} * d[f][j])
    return out
'''

FIXED = '''def scores(state):
    """Prefer cities near the middle of the square (a case-blind guess)."""
    xy = state["coords"]
    return [-((x - 0.5) ** 2 + (y - 0.5) ** 2) for x, y in xy]
'''


@dataclass
class Case:
    """A failure case parsed back from a prompt."""

    number: int
    step: int
    partial: str
    teacher: int
    program: int | None
    rows: dict[int, tuple[float, float, float]] = field(default_factory=dict)
    """city -> (distance, stranding, home)."""


def parse_cases(prompt: str) -> list[Case]:
    """The failure cases an EPB prompt shows (its ``FailureCase.render`` text)."""
    out = []
    blocks = re.split(r"\n(?=Case \d+: )", prompt)
    for b in blocks:
        head, choice = _CASE.search(b), _CHOICE.search(b)
        if not head or not choice:
            continue
        rows = {int(m[1]): (float(m[2]), float(m[4]), float(m[5])) for m in _ROW.finditer(b)}
        out.append(Case(int(head[1]), int(head[2]), head[3], int(choice[1]),
                        int(choice[2]) if choice[2] else None, rows))  # fmt: skip
    return out


def fit_weights(cases: list[Case]) -> tuple[float, float, int]:
    """The ``(a, b)`` of ``-distance + a * stranding + b * home`` that ranks the teacher's
    choice first among the shown candidates in the most cases (ties: the smallest
    weights), and that count."""
    best = (-1, 0.0, 0.0, 0.0)
    for a, b in itertools.product(GRID, GRID):
        hits = 0
        for c in cases:
            if c.teacher not in c.rows:
                continue
            s = {j: -r[0] + a * r[1] + b * r[2] for j, r in c.rows.items()}
            hits += int(max(s, key=lambda j: s[j]) == c.teacher)
        key = (hits, -(abs(a) + abs(b)))
        if key > (best[0], best[3]):
            best = (hits, a, b, -(abs(a) + abs(b)))
    return best[1], best[2], best[0]


def reply(prompt: str, ignore_cases: bool = False, blind_boost: bool = False,
          rewrite: bool = True) -> str:  # fmt: skip
    """The scripted reply to one EPB prompt (``blind_boost``: only the booster ignores the
    cases; ``rewrite=False``: it answers rewrite requests without code, so only block II
    changes a portfolio)."""
    if not rewrite and "Rewrite `" in prompt:
        return "no rewrite"
    if blind_boost and "Write a NEW" in prompt:
        return f"```python\n{FIXED}```"
    if "Write a short critique" in prompt:
        cases = parse_cases(prompt)
        if ignore_cases or not cases:
            return "The program should follow the teacher more closely in these states."
        a, b, hits = fit_weights(cases)
        lines = []
        for c in cases:
            t = c.rows.get(c.teacher)
            p = c.rows.get(c.program) if c.program is not None else None
            lines.append(
                f"Case {c.number} (step {c.step}, partial tour {c.partial}): the teacher chose "
                f"city {c.teacher}"
                + (f" (distance {t[0]:.3f}, stranding {t[1]:.3f})" if t else "")
                + (f", the program chose city {c.program}" if c.program is not None else "")
                + (f" (distance {p[0]:.3f}, stranding {p[1]:.3f})" if p else "")
                + "."
            )
        lines.append(f"With these weights the teacher's choice ranks first in {hits} of "
                     f"{len(cases)} cases: score = -distance + ({a:g}) x stranding + ({b:g}) x home.")  # fmt: skip
        return "\n".join(lines)
    if ignore_cases and ("Rewrite `" in prompt or "Write a NEW" in prompt):
        return f"```python\n{FIXED}```"
    if "Rewrite `" in prompt:
        m = _PRESCRIBED.search(prompt)
        if m is None:  # no prescription in the prompt: plain nearest neighbour
            return "```python\n" + PROGRAM.format(a=0.0, b=0.0, why="no critique to follow") + "```"
        a, b = float(m[1]), float(m[2])
        return "```python\n" + PROGRAM.format(a=a, b=b, why="as the critique says") + "```"
    if "Write a NEW" in prompt:
        a, b, _ = fit_weights(parse_cases(prompt))
        return (
            "```python\n" + PROGRAM.format(a=a, b=b, why="fitted to the residual failures") + "```"
        )
    return "no answer"


def epb_llm(ignore_cases: bool = False, blind_boost: bool = False,
            rewrite: bool = True) -> FunctionLLM:  # fmt: skip
    """A ``FunctionLLM`` answering EPB's prompts with ``reply`` (its ``calls`` keep every
    prompt)."""

    def fn(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        return reply(str(messages[-1]["content"]), ignore_cases, blind_boost, rewrite)

    return FunctionLLM(fn, model="scripted-epb")

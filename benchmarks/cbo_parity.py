"""Issue 23's parity table: agent-CBO (offline) before vs after, beside known-graph CBO and
plain BO, within tolerance at budget on the ten literature SCMs and on heldout random DAGs.

Reads the ``rows.jsonl`` that ``benchmarks/cbo_priors.py`` writes: ``--before`` (one or
more folders) holds runs of the default agent and of the baselines (these do not depend
on the agent), ``--after`` those of a variant of the agent (``discovery-only``), and
``--wrong`` folders ``wrong-prior`` runs (printed with their folder's name). Budgets and
tolerances are the suite's own, the same for every arm.

    python benchmarks/cbo_priors.py --seeds 5 --arms known-graph,plain-bo,discovery-only \\
        --tasks <TEN>,random_dag_6_s1,random_dag_10_s1,random_dag_15_s1 --out DIR_BEFORE
    python benchmarks/cbo_parity.py --before DIR_BEFORE --after DIR_AFTER
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TEN = ("toy_graph", "complete_graph", "psa", "epidemiology", "extended_epidemiology",
       "synthetic2", "independent", "graph4nodes", "dropwave", "alpine2")  # fmt: skip
DAGS = ("random_dag_6_s1", "random_dag_10_s1", "random_dag_15_s1")
"""The suite's heldout random DAGs (seed 1 of the generator); no agent setting was tuned
on them."""


def _rows(path: Path) -> list[dict[str, Any]]:
    f = path / "rows.jsonl"
    return [json.loads(x) for x in f.read_text().splitlines()] if f.exists() else []


def counts(rows: list[dict[str, Any]], arm: str, tasks: tuple[str, ...], seeds: range
           ) -> tuple[int, int, list[str]]:  # fmt: skip
    """Within-tolerance runs, runs present, and the task/seed pairs within tolerance."""
    sel = [r for r in rows if r["arm"] == arm and r["task"] in tasks and r["seed"] in seeds]
    ok = sorted(f"{r['task']}/{r['seed']}" for r in sel if r["within"])
    return len(ok), len(sel), ok


def table(before: list[dict[str, Any]], after: list[dict[str, Any]],
          wrong: dict[str, list[dict[str, Any]]] | None = None,
          after_label: str = "agent variant") -> str:  # fmt: skip
    """Markdown: within tolerance per suite part, seeds 0-2 and 0-4, per arm."""
    arms = [("known-graph CBO", before, "known-graph"), ("plain BO", before, "plain-bo"),
            ("agent (default)", before, "discovery-only"),
            (after_label, after, "discovery-only")]  # fmt: skip
    lines = ["| part | seeds | " + " | ".join(a[0] for a in arms) + " |",
             "|---|---|" + "---|" * len(arms)]  # fmt: skip
    for part, tasks in (("ten literature SCMs", TEN), ("heldout random DAGs", DAGS)):
        for seeds in (range(3), range(5)):
            cells = []
            for _, rows, arm in arms:
                k, n, _ = counts(rows, arm, tasks, seeds)
                cells.append(f"{k}/{n}" if n else "-")
            lines.append(f"| {part} | 0-{seeds[-1]} | " + " | ".join(cells) + " |")
    lines += ["", "| task | " + " | ".join(a[0] for a in arms) + " |",
              "|---|" + "---|" * len(arms)]  # fmt: skip
    for task in (*TEN, *DAGS):
        cells = []
        for _, rows, arm in arms:
            k, n, _ = counts(rows, arm, (task,), range(5))
            cells.append(f"{k}/{n}" if n else "-")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    lines.append("")
    for label, rows in (wrong or {}).items():
        for r in sorted((r for r in rows if r["arm"] == "wrong-prior"),
                        key=lambda r: (r["task"], r["seed"])):  # fmt: skip
            lines.append(f"- wrong-prior {label}: {r['task']} seed {r['seed']}: regret "
                         f"{r['regret']:.3g}, within {r['within']}, accepted LLM edits "
                         f"{r['accepted_llm_edits']}, rejected {r['rejected_llm_edits']}")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, nargs="+", required=True)
    ap.add_argument("--after", type=Path, required=True)
    ap.add_argument("--after-label", default="agent variant")
    ap.add_argument("--wrong", type=Path, nargs="*", default=[])
    args = ap.parse_args()
    before, seen = [], set()
    for r in (r for d in args.before for r in _rows(d)):  # first row of a (task, arm, seed)
        if (key := (r["task"], r["arm"], r["seed"])) not in seen:
            seen.add(key)
            before.append(r)
    wrong = {d.name: _rows(d) for d in args.wrong}
    print(table(before, _rows(args.after), wrong, args.after_label))


if __name__ == "__main__":
    main()

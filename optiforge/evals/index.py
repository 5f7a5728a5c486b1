"""The suites' metadata as a file, so listing them imports no suite and builds no task.

``optiforge list tasks`` used to build every task of every suite to print its name (AutoRO
solves each instance with cvxpy: 10 s of CPU, 450 MiB) and ``list benchmarks`` imported
every suite (4.7 s). ``index.json`` next to this module holds what they print: per suite
its splits and description, per split each task's name, metric, direction and budget.

It is generated from the real registry (``python -m optiforge.evals.index``), and
``tests/evals/test_index.py`` builds the registry and compares, so a suite that changes
without regenerating the file fails the tests instead of listing stale names.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from optiforge.errors import ConfigError

INDEX = Path(__file__).with_name("index.json")


def build_index() -> dict[str, Any]:
    """The metadata of every built-in suite, from the suites themselves (slow: it builds
    every task)."""
    from optiforge.evals.registry import BUILTIN_BENCHMARKS, get_benchmark

    suites: dict[str, Any] = {}
    for name in BUILTIN_BENCHMARKS:
        bench = get_benchmark(name)
        tasks = {
            split: [
                {
                    "name": t.name,
                    "metric": t.metric,
                    "higher_is_better": bool(t.higher_is_better),
                    "budget": t.budget,
                }
                for t in bench.tasks(split)
            ]
            for split in bench.splits
        }
        suites[name] = {
            "splits": list(bench.splits),
            "description": getattr(bench, "description", ""),
            "tasks": tasks,
        }
    return {"suites": suites}


@cache
def load_index() -> dict[str, Any]:
    """The stored metadata (``index.json``)."""
    data: dict[str, Any] = json.loads(INDEX.read_text(encoding="utf-8"))
    return data


def suite_info(name: str) -> dict[str, Any]:
    """One suite's stored metadata; ConfigError naming the known suites otherwise."""
    suites = load_index()["suites"]
    if name not in suites:
        raise ConfigError(f"unknown benchmark {name!r} (known: {', '.join(sorted(suites))})")
    info: dict[str, Any] = suites[name]
    return info


def write_index(path: Path = INDEX) -> Path:
    """Regenerate ``index.json`` from the registry."""
    path.write_text(json.dumps(build_index(), indent=1) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":  # python -m optiforge.evals.index
    print(f"wrote {write_index()}")

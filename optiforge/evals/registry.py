"""Benchmark suites by name (imported lazily)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from optiforge.errors import ConfigError

BUILTIN_BENCHMARKS: dict[str, str] = {
    "funcfit": "optiforge.evals.suites.funcfit:FuncFitBenchmark",
    "kernelarena": "optiforge.evals.suites.kernelarena:KernelArenaBenchmark",
    "autoro": "optiforge.evals.suites.autoro:AutoROBenchmark",
    "hdbo": "optiforge.evals.suites.hdbo:HDBOBenchmark",
    "cbo": "optiforge.evals.suites.cbo:CBOBenchmark",
    "bbowp": "optiforge.evals.suites.bbowp:BBOWPBenchmark",
    "protein": "optiforge.evals.suites.protein:ProteinBenchmark",
    "nco": "optiforge.evals.suites.nco:NCOBenchmark",
    "procedural": "optiforge.evals.suites.procedural:ProceduralBenchmark",
    "saddle": "optiforge.evals.suites.saddle:SaddleBenchmark",
    "train": "optiforge.evals.suites.train:TrainBenchmark",
    "rl": "optiforge.evals.suites.rl:RLBenchmark",
}


@dataclass(frozen=True)
class BenchmarkInfo:
    name: str
    splits: tuple[str, ...]
    description: str


def get_benchmark(name: str) -> Any:
    """An instance of the suite called ``name``."""
    if name not in BUILTIN_BENCHMARKS:
        raise ConfigError(
            f"unknown benchmark {name!r} (known: {', '.join(sorted(BUILTIN_BENCHMARKS))})"
        )
    module, _, attr = BUILTIN_BENCHMARKS[name].partition(":")
    return getattr(importlib.import_module(module), attr)()


def available_benchmarks() -> dict[str, BenchmarkInfo]:
    out = {}
    for name in BUILTIN_BENCHMARKS:
        bench = get_benchmark(name)
        out[name] = BenchmarkInfo(name, tuple(bench.splits), getattr(bench, "description", ""))
    return out


def resolve_task(ref: str, split: str | None = None) -> Any:
    """``SUITE/TASK`` (optionally ``SUITE/TASK@split``) -> the task; searches all splits."""
    suite, sep, rest = ref.partition("/")
    if not sep or not rest:
        raise ConfigError(f"--bench must be SUITE/TASK for `run`, got {ref!r}")
    name, _, at_split = rest.partition("@")
    bench = get_benchmark(suite)
    splits = [at_split or split] if (at_split or split) else list(bench.splits)
    names = []
    for sp in splits:
        for task in bench.tasks(sp):
            if task.name == name:
                return task
            names.append(f"{task.name}@{sp}")
    raise ConfigError(f"no task {name!r} in {suite} (tasks: {', '.join(names)})")

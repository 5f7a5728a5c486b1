"""What a pipeline's glue step sees (``StepInput``): its own module, so the steps in other
files (``optimize``, ``tune``) and the registry of steps (``steps.STEPS``) that names them
all import it from here, and none of them imports the other back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class StepInput:
    """What a step sees: the node it reads and the pipeline's live handles."""

    node: str
    result: dict[str, Any]
    run_dir: Path | None
    out_dir: Path
    llm: Any | None
    memory_url: str | None
    tracer: Any
    task: str | None = None
    """The step node's own task (``formulate``: the problem to formulate)."""
    options: dict[str, Any] = field(default_factory=dict)
    """The node's ``set``: the step's options (references resolved)."""
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Every node that has run so far: its result, with its ``artifact``."""
    pipeline_dir: Path | None = None
    """The pipeline run's directory (node dirs in ``results`` are relative to it)."""
    sandbox: str = "local"
    """The sandbox back end of the pipeline's runs (steps that run an optimization)."""

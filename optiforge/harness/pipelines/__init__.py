"""Pipelines: agents composed into one LangGraph graph (the graph of agents).

``spec`` is the YAML format (``configs/pipelines/``), ``run`` compiles and drives it in
one run directory with one event log, one ledger and one memory, ``steps`` holds the
glue steps between agents.
"""

from optiforge.harness.pipelines.run import Artifact, build_graph, run_pipeline
from optiforge.harness.pipelines.spec import (
    PipelineSpec,
    bundled_pipelines,
    find_pipeline,
    load_pipeline,
    parse_pipeline,
)

__all__ = [
    "Artifact",
    "PipelineSpec",
    "build_graph",
    "bundled_pipelines",
    "find_pipeline",
    "load_pipeline",
    "parse_pipeline",
    "run_pipeline",
]

"""The task families epb, knowevo and smith run on (``NCOTask``, ``ProteinTask``,
``ProceduralTask``): every task of their suite is one, the agents' specs check tasks
against them, and the agents read their tasks through them alone."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any

import pytest

from optiforge.agents.spec import AgentSpec
from optiforge.errors import ConfigError
from optiforge.evals.registry import get_benchmark
from optiforge.evals.suites.nco.protocol import NCOTask
from optiforge.evals.suites.procedural.protocol import ProceduralTask
from optiforge.evals.suites.protein.protocol import ProteinTask

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = [("epb", "nco", NCOTask), ("knowevo", "protein", ProteinTask),
            ("smith", "procedural", ProceduralTask)]  # fmt: skip
IDS = [agent for agent, _, _ in FAMILIES]


def _spec(agent: str) -> AgentSpec[Any, Any]:
    module = importlib.import_module(f"optiforge.agents.{agent}")
    return module.SPEC  # type: ignore[no-any-return]


@pytest.mark.parametrize("agent, suite, family", FAMILIES, ids=IDS)
def test_every_task_of_the_suite_is_of_the_family_the_agent_declares(
    agent: str, suite: str, family: type
) -> None:
    spec, bench = _spec(agent), get_benchmark(suite)
    assert spec.task_type is family and spec.suites is None
    for split in bench.splits:
        for task in bench.tasks(split):
            assert isinstance(task, family), f"{suite}/{task.name}@{split}"
            assert spec.check_task(task) is task


@pytest.mark.parametrize("agent, other", [("epb", "procedural"), ("knowevo", "nco"),
                                          ("smith", "protein")])  # fmt: skip
def test_a_task_of_another_family_is_refused_naming_what_it_lacks(agent: str, other: str) -> None:
    spec = _spec(agent)
    task = get_benchmark(other).tasks("dev")[0]
    with pytest.raises(ConfigError, match=r"runs on \w+ tasks \(\w+Task\); .* \(it has no ") as err:
        spec.check_task(task)
    assert f"--bench {spec.default_benchmark}" in str(err.value)


ALLOWED = (
    "optiforge.evals.protocol",
    "typing",
    "__future__",
    "numpy",
    "pydantic",
    "optiforge.sandboxes",
)
"""What a family's Protocol module may import (``optiforge.sandboxes``: for a type only)."""


@pytest.mark.parametrize("suite", ["nco", "protein", "procedural"])
def test_the_protocol_module_imports_no_module_of_its_suite(suite: str) -> None:
    path = ROOT / "optiforge" / "evals" / "suites" / suite / "protocol.py"
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    assert names and all(n.startswith(ALLOWED) for n in names), sorted(names)


@pytest.mark.parametrize("agent", IDS)
def test_the_agent_imports_only_the_protocol_of_its_suite(agent: str) -> None:
    folder = ROOT / "optiforge" / "agents" / agent
    suites = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                mods = [node.module]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            else:
                continue
            suites += [f"{path.name}: {m}" for m in mods if m.startswith("optiforge.evals.suites")]
    assert suites and all(s.endswith(".protocol") for s in suites), suites

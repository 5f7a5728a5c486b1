"""``optiforge.testing`` (doubles for everyone) imports no agent's modules: a double of one
agent's code lives in that agent's folder (``optiforge.agents.<agent>.testing``)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTING = Path(__file__).resolve().parent.parent / "optiforge" / "testing"
# the agents layer's public API: the registry, the spec and the kit
PUBLIC = ("optiforge.agents", "optiforge.agents.spec", "optiforge.agents.kit")


def agent_internals(path: Path) -> list[str]:
    """``file:line module`` for each import of an agent's own modules in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        for m in modules:
            public = m in PUBLIC or m.startswith("optiforge.agents.kit.")
            if m.startswith("optiforge.agents.") and not public:
                found.append(f"{path.name}:{node.lineno} {m}")
    return sorted(found)


def test_testing_imports_no_agent_internals() -> None:
    files = sorted(TESTING.rglob("*.py"))
    assert len(files) >= 4
    assert [hit for f in files for hit in agent_internals(f)] == []


def test_the_check_sees_an_agent_module(tmp_path: Path) -> None:
    f = tmp_path / "double.py"
    f.write_text(
        "from optiforge.agents.kit import RunContext\n"
        "def llm():\n    from optiforge.agents.smith.templates import TEMPLATES\n"
    )
    assert agent_internals(f) == ["double.py:3 optiforge.agents.smith.templates"]

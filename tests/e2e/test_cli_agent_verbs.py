"""Agents own their sub-commands (``AgentSpec.cli``); the CLI imports no agent internals.

The CLI reaches an agent only through ``optiforge.agents`` (the registry), its ``spec`` and
the public kit; an agent's verbs are mounted from ``AGENT_VERBS`` and imported when they run.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

from optiforge.agents import AGENT_VERBS, agent_cli

CLI = Path(__file__).resolve().parents[2] / "optiforge" / "cli"
# What the CLI may import of the agents layer: the registry, the spec and the kit's
# public names (no `_private` name, no module of one agent).
ALLOWED = {"optiforge.agents", "optiforge.agents.spec", "optiforge.agents.kit"}


def _agent_imports(path: Path) -> list[str]:
    """Every import of the agents layer in ``path`` that is not allowed, as ``line: what``."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            pairs = [(a.name, "") for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            pairs = [(node.module, a.name) for a in node.names]
        else:
            continue
        for module, name in pairs:
            if module != "optiforge.agents" and not module.startswith("optiforge.agents."):
                continue
            if module not in ALLOWED or name.startswith("_"):
                bad.append(f"{path.name}:{node.lineno}: {module} {name}".strip())
    return sorted(bad, key=lambda s: int(s.split(":")[1]))


def test_the_cli_imports_no_agent_internals() -> None:
    files = sorted(CLI.rglob("*.py"))
    assert len(files) > 5
    bad = [line for f in files for line in _agent_imports(f)]
    assert bad == []


def test_the_check_catches_an_agent_module(tmp_path: Path) -> None:
    """The walk above is not vacuous: an agent's module or a private kit name is caught."""
    f = tmp_path / "x.py"
    f.write_text(
        "from optiforge.agents import get_agent\n"
        "def g():\n    from optiforge.agents.autorem.report import load_rows\n"
        "from optiforge.agents.kit import _private\n"
        "import optiforge.agents.smith.grpo\n"
    )
    assert _agent_imports(f) == [
        "x.py:3: optiforge.agents.autorem.report load_rows",
        "x.py:4: optiforge.agents.kit _private",
        "x.py:5: optiforge.agents.smith.grpo",
    ]


def test_every_verb_group_is_its_agents_spec_cli() -> None:
    from optiforge.agents.spec import AgentSpec

    for verb, info in AGENT_VERBS.items():
        module, _, attr = info.agent.partition(":")
        spec = getattr(importlib.import_module(module), attr)
        assert isinstance(spec, AgentSpec), verb
        assert spec.cli == info.app, verb
        app = agent_cli(verb)
        assert isinstance(app, typer.Typer)
        assert app.info.help == info.help, verb


def test_help_lists_the_agent_verbs_without_importing_an_agent() -> None:
    code = (
        "import sys\n"
        "from optiforge.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('AGENTS', sorted(m for m in sys.modules if m.startswith('optiforge.agents.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", **_pythonpath()},
    )
    for verb, info in AGENT_VERBS.items():
        assert verb in out.stdout and info.help in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "AGENTS []"


def _pythonpath() -> dict[str, str]:
    import os

    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}


def test_a_verb_runs_the_agents_own_app(tmp_path: Path) -> None:
    """Through the root app, `knowevo tree` is the agent's command (its error, exit 2)."""
    from optiforge.cli.main import app

    result = CliRunner().invoke(app, ["knowevo", "tree", str(tmp_path)])
    assert result.exit_code != 0
    assert "has no tree.json" in str(result.exception)
    direct = CliRunner().invoke(agent_cli("knowevo"), ["tree", "--help"])
    mounted = CliRunner().invoke(app, ["knowevo", "tree", "--help"])
    assert direct.exit_code == mounted.exit_code == 0
    assert "--block" in direct.output and "--block" in mounted.output

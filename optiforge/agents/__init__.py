"""Agents, registered by name; third-party agents join through the ``optiforge.agents``
entry-point group (an entry point must resolve to an ``AgentSpec``).

This module is the registry the CLI reads at start-up (``optiforge --help`` lists the
agents' own sub-commands from ``AGENT_VERBS``), so it imports nothing but the standard
library: ``AgentSpec`` (pydantic, numpy, the kit) is imported where a spec is loaded.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING

from optiforge.errors import ConfigError

if TYPE_CHECKING:
    import typer

    from optiforge.agents.spec import AgentSpec


@dataclass(frozen=True)
class AgentInfo:
    """What ``list agents`` and ``--help`` show of an agent, known without importing it
    (agents pull in torch, cvxpy, BoTorch: seconds). ``tests/agents/test_registry.py``
    checks each built-in entry against the agent's own ``SPEC``."""

    ref: str
    """``module:attribute`` of the ``AgentSpec``."""
    default_benchmark: str | None
    description: str


BUILTIN_AGENTS: dict[str, AgentInfo] = {
    "evolve": AgentInfo(
        "optiforge.agents.evolve:SPEC",
        "funcfit",
        "Program evolution on the shared loop (LLM rewrites or AST mutations offline)",
    ),
    "kernel-discovery": AgentInfo(
        "optiforge.agents.kernel_discovery:SPEC",
        "hdbo",
        "LLM-evolved GP kernels for high-dimensional BO (offline: compositional kernel search)",
    ),
    "hawkeye": AgentInfo(
        "optiforge.agents.hawkeye:SPEC",
        "kernelarena",
        "Triton kernel optimiser: strategy taxonomy + roofline facts, LLM writer or offline "
        "autotuner",
    ),
    "autorem": AgentInfo(
        "optiforge.agents.autorem:SPEC",
        "autoro",
        "Robust counterparts as cvxpy code with an experience memory (offline: the reference "
        "reformulator as code, which measures the checker)",
    ),
    "agent-cbo": AgentInfo(
        "optiforge.agents.agent_cbo:SPEC",
        "cbo",
        "Causal BO with LLM + PC structure priors, score-gated local repair and a "
        "routing-equivalence commit gate",
    ),
    "formulator": AgentInfo(
        "optiforge.agents.formulator:SPEC",
        "bbowp",
        "Black-box word problems: write the search space and pick the optimizer (offline: a "
        "heuristic reading of the description; baseline: the fixed default); train tasks: pick the "
        "training optimizer and its hyperparameters; rl tasks: pose the control problem and pick "
        "the RL method",
    ),
    "knowevo": AgentInfo(
        "optiforge.agents.knowevo:SPEC",
        "protein",
        "Expertise blocks evolved in strategy mutation trees: bandit rollouts, evidence-guided "
        "block edits",
    ),
    "epb": AgentInfo(
        "optiforge.agents.epb:SPEC",
        "nco",
        "Distill a neural TSP policy into a program portfolio with a router (blocks I and II)",
    ),
    "smith": AgentInfo(
        "optiforge.agents.smith:SPEC",
        "procedural",
        "Build tools from examples and use them by function calling (schema/code/outcome rewards)",
    ),
    "terminal": AgentInfo(
        "optiforge.agents.terminal:SPEC",
        "saddle",
        "Shell agent run through a declared, patchable harness (the agent AutoSaddler tunes)",
    ),
}


@dataclass(frozen=True)
class VerbsInfo:
    """A sub-command group an agent owns (``optiforge VERB ...``), known without importing
    the agent: ``optiforge --help`` lists it, and the agent is imported only when the group
    runs. ``tests/e2e/test_cli_agent_verbs.py`` checks each entry against the owning
    agent's ``SPEC.cli`` and the app's own help."""

    agent: str
    """``module:attribute`` of the ``AgentSpec`` that owns the verbs (its ``cli`` is ``app``)."""
    app: str
    """``module:attribute`` of the agent's ``typer.Typer`` (``SPEC.cli``)."""
    help: str
    """The app's help text, as ``optiforge --help`` shows it."""


AGENT_VERBS: dict[str, VerbsInfo] = {
    "autorem": VerbsInfo(
        "optiforge.agents.autorem:SPEC",
        "optiforge.agents.autorem.cli:app",
        "AutoREM: build the experience memory (adapt), solve one instance, tabulate evals.",
    ),
    "knowevo": VerbsInfo(
        "optiforge.agents.knowevo:SPEC",
        "optiforge.agents.knowevo.cli:app",
        "KnowEvo: inspect strategy mutation trees.",
    ),
    "smith": VerbsInfo(
        "optiforge.agents.smith:SPEC",
        "optiforge.agents.smith.cli:app",
        "SMITH: train the tool-building policy.",
    ),
    "saddle": VerbsInfo(
        "optiforge.agents.autosaddler:SPEC",
        "optiforge.agents.autosaddler.cli:app",
        "AutoSaddler: tune the terminal agent's harness on the saddle suite.",
    ),
}
"""Sub-command groups by verb (``optiforge autorem ...``), in the order ``--help`` lists them."""


def agent_cli(verb: str) -> typer.Typer:
    """The ``typer`` app of the agent sub-command ``verb`` (imports the agent).

    Raises:
        ConfigError: no agent owns ``verb``, or its ``app`` is not a ``typer.Typer``.
    """
    import typer

    if verb not in AGENT_VERBS:
        raise ConfigError(f"no agent owns the command {verb!r} (known: {', '.join(AGENT_VERBS)})")
    module, _, attr = AGENT_VERBS[verb].app.partition(":")
    app = getattr(importlib.import_module(module), attr)
    if not isinstance(app, typer.Typer):
        raise ConfigError(f"{AGENT_VERBS[verb].app} is not a typer.Typer")
    return app


def agent_infos() -> dict[str, AgentInfo]:
    """Every agent's name, default benchmark and description; imports no built-in agent.

    Third-party agents (entry points) are loaded to read theirs.
    """
    from optiforge.agents.spec import AgentSpec

    found = dict(BUILTIN_AGENTS)
    for ep in metadata.entry_points(group="optiforge.agents"):
        if ep.name not in found:
            spec = ep.load()
            if isinstance(spec, AgentSpec):
                found[ep.name] = AgentInfo(ep.value, spec.default_benchmark, spec.description)
    return found


def _load(ref: str) -> AgentSpec:
    from optiforge.agents.spec import AgentSpec

    module, _, attr = ref.partition(":")
    spec = getattr(importlib.import_module(module), attr)
    if not isinstance(spec, AgentSpec):
        raise ConfigError(f"{ref} is not an AgentSpec")
    return spec


def available_agents() -> dict[str, AgentSpec]:
    """Built-in agents plus those from installed entry points."""
    from optiforge.agents.spec import AgentSpec

    found = {name: _load(info.ref) for name, info in BUILTIN_AGENTS.items()}
    for ep in metadata.entry_points(group="optiforge.agents"):
        if ep.name not in found:
            spec = ep.load()
            if isinstance(spec, AgentSpec):
                found[ep.name] = spec
    return found


def get_agent(name: str) -> AgentSpec:
    """The agent called ``name``; unknown names list the known ones."""
    key = name.replace("_", "-")
    if key in BUILTIN_AGENTS:
        return _load(BUILTIN_AGENTS[key].ref)
    agents = available_agents()
    if key not in agents:
        raise ConfigError(f"unknown agent {name!r} (known: {', '.join(sorted(agents))})")
    return agents[key]


__all__ = [
    "AGENT_VERBS",
    "BUILTIN_AGENTS",
    "AgentInfo",
    "VerbsInfo",
    "agent_cli",
    "agent_infos",
    "available_agents",
    "get_agent",
]

"""Agents, registered by name; third-party agents join through the ``optiforge.agents``
entry-point group (an entry point must resolve to an ``AgentSpec``)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import metadata

from optiforge.agents.spec import AgentOutcome, AgentSpec
from optiforge.errors import ConfigError


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
        "heuristic reading of the description; baseline: the fixed default)",
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


def agent_infos() -> dict[str, AgentInfo]:
    """Every agent's name, default benchmark and description; imports no built-in agent.

    Third-party agents (entry points) are loaded to read theirs.
    """
    found = dict(BUILTIN_AGENTS)
    for ep in metadata.entry_points(group="optiforge.agents"):
        if ep.name not in found:
            spec = ep.load()
            if isinstance(spec, AgentSpec):
                found[ep.name] = AgentInfo(ep.value, spec.default_benchmark, spec.description)
    return found


def _load(ref: str) -> AgentSpec:
    module, _, attr = ref.partition(":")
    spec = getattr(importlib.import_module(module), attr)
    if not isinstance(spec, AgentSpec):
        raise ConfigError(f"{ref} is not an AgentSpec")
    return spec


def available_agents() -> dict[str, AgentSpec]:
    """Built-in agents plus those from installed entry points."""
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
    "BUILTIN_AGENTS",
    "AgentInfo",
    "AgentOutcome",
    "AgentSpec",
    "agent_infos",
    "available_agents",
    "get_agent",
]

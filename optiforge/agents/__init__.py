"""Agents, registered by name; third-party agents join through the ``optiforge.agents``
entry-point group (an entry point must resolve to an ``AgentSpec``)."""

from __future__ import annotations

import importlib
from importlib import metadata

from optiforge.agents.spec import AgentOutcome, AgentSpec
from optiforge.errors import ConfigError

# name -> "module:attribute" (imported lazily: agents pull in heavy back ends)
BUILTIN_AGENTS: dict[str, str] = {
    "evolve": "optiforge.agents.evolve:SPEC",
    "kernel-discovery": "optiforge.agents.kernel_discovery:SPEC",
    "hawkeye": "optiforge.agents.hawkeye:SPEC",
    "autorem": "optiforge.agents.autorem:SPEC",
    "agent-cbo": "optiforge.agents.agent_cbo:SPEC",
}


def _load(ref: str) -> AgentSpec:
    module, _, attr = ref.partition(":")
    spec = getattr(importlib.import_module(module), attr)
    if not isinstance(spec, AgentSpec):
        raise ConfigError(f"{ref} is not an AgentSpec")
    return spec


def available_agents() -> dict[str, AgentSpec]:
    """Built-in agents plus those from installed entry points."""
    found = {name: _load(ref) for name, ref in BUILTIN_AGENTS.items()}
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
        return _load(BUILTIN_AGENTS[key])
    agents = available_agents()
    if key not in agents:
        raise ConfigError(f"unknown agent {name!r} (known: {', '.join(sorted(agents))})")
    return agents[key]


__all__ = ["AgentOutcome", "AgentSpec", "available_agents", "get_agent", "BUILTIN_AGENTS"]

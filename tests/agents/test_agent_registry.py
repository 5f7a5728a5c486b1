"""The agent registry: metadata known without importing an agent matches each agent's SPEC."""

from __future__ import annotations

import subprocess
import sys

from optiforge.agents import BUILTIN_AGENTS, agent_infos, get_agent


def test_builtin_metadata_matches_each_spec() -> None:
    for name, info in BUILTIN_AGENTS.items():
        spec = get_agent(name)
        assert (spec.name, spec.default_benchmark, spec.description) == (
            name,
            info.default_benchmark,
            info.description,
        )


def test_listing_agents_imports_no_agent() -> None:
    """`optiforge list agents` must not pay for torch, cvxpy or BoTorch."""
    code = (
        "import sys; from optiforge.agents import agent_infos; agent_infos();"
        "heavy = [m for m in ('torch', 'cvxpy', 'botorch', 'litellm', 'sqlalchemy') if m in sys.modules];"
        "mine = [m for m in sys.modules if m.startswith('optiforge.agents.') and"
        " m.split('.')[2] not in ('kit', 'spec')]; print(heavy, mine)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] []"
    assert set(agent_infos()) >= set(BUILTIN_AGENTS)


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys; import optiforge.cli;"
        "print([m for m in ('torch', 'cvxpy', 'litellm', 'sqlalchemy', 'numpy', 'pydantic')"
        " if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_setting_one_nested_key_keeps_the_agents_other_defaults() -> None:
    """`--set agent.search.patience=3` changes that key only: the agent's own defaults for
    the rest of `search` (evolve: overlap on, 40 evaluations; hawkeye: 2 proposals a round)
    stay, not the nested model's class defaults."""
    from optiforge.config import build_config

    for name in BUILTIN_AGENTS:
        model = get_agent(name).config_model
        default = model()
        assert build_config(model) == default, name
        search = getattr(default, "search", None)
        if search is None:
            continue
        got = build_config(model, base={"search": {"patience": 3}}, overrides=[])
        assert got.search == search.model_copy(update={"patience": 3}), name  # type: ignore[attr-defined]
        got = build_config(model, overrides=["search.max_rounds=7"])
        assert got.search == search.model_copy(update={"max_rounds": 7}), name  # type: ignore[attr-defined]
    evolve = build_config(get_agent("evolve").config_model, base={"search": {"patience": 3}})
    assert evolve.search.overlap and evolve.search.max_evaluations == 40  # type: ignore[attr-defined]

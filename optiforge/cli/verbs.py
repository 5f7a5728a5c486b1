"""The root command group: the CLI's own commands plus the sub-command groups agents own.

An agent's verbs (``optiforge autorem ...``, ``optiforge saddle ...``) belong to the agent
(``AgentSpec.cli``); the registry (``optiforge.agents.AGENT_VERBS``) names them with their
help without importing the agent. ``optiforge --help`` lists them from there; the agent and
its ``typer`` app are imported only when one of its commands runs (agents import cvxpy,
torch, BoTorch: seconds that ``--help`` and every other command must not pay).
"""

from __future__ import annotations

import typer
from typer._click import Command, Context  # typer vendors its own click
from typer.core import TyperGroup
from typer.main import get_group_from_info
from typer.models import TyperInfo

from optiforge.agents import AGENT_VERBS, agent_cli


class AgentVerbsStandIn(TyperGroup):
    """An agent's sub-command group before it is loaded: its name and help only."""


def stand_in(verb: str) -> typer.Typer:
    """A ``typer`` app that shows ``verb`` in ``--help`` as the agent's app would."""
    return typer.Typer(cls=AgentVerbsStandIn, help=AGENT_VERBS[verb].help, no_args_is_help=True)


def mount_agent_verbs(app: typer.Typer) -> None:
    """Every registered agent's sub-command group on ``app``, as a stand-in."""
    for verb in AGENT_VERBS:
        app.add_typer(stand_in(verb), name=verb)


class RootGroup(TyperGroup):
    """The ``optiforge`` group: swaps a stand-in for the agent's own group when it runs."""

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        name = args[0] if args else None
        if name is not None and isinstance(self.commands.get(name), AgentVerbsStandIn):
            # what `app.add_typer(agent_app, name=verb)` would have built
            self.commands[name] = get_group_from_info(
                TyperInfo(agent_cli(name), name=name),
                pretty_exceptions_short=True,  # typer's default, as the root app's
                suggest_commands=self.suggest_commands,
                rich_markup_mode=self.rich_markup_mode,
            )
        return super().resolve_command(ctx, args)

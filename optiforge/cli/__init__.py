"""The ``optiforge`` command line: ``main`` (run, eval, report, doctor, ...) with the
``memory``, ``pipeline`` and ``posttrain`` sub-apps and the agents' own sub-commands
(``autorem``, ``saddle``, ...: ``verbs``) mounted on it; ``console_main`` is the console
script (``main`` and a fast exit)."""

from optiforge.cli.main import app, console_main, main

__all__ = ["app", "console_main", "main"]

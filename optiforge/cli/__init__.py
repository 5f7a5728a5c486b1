"""The ``optiforge`` command line: ``main`` (run, eval, report, doctor, ...) with the
``memory`` and ``autorem`` sub-apps mounted on it."""

from optiforge.cli.main import app, main

__all__ = ["app", "main"]

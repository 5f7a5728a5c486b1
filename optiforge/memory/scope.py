"""Which memory a run uses (``--memory``), decided without importing the store.

``scoped_url`` turns a scope (``run``, ``project:NAME``, ``global``, ``none``, a URL or a
run directory) into a SQLAlchemy URL; a run with ``--memory none`` never imports
SQLAlchemy (~0.13 s) at all.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from optiforge.errors import ConfigError

DEFAULT_URL = "sqlite:///~/.optiforge/memory.db"


def default_url() -> str:
    """The memory URL: env ``OPTIFORGE_MEMORY`` or ``sqlite:///~/.optiforge/memory.db``."""
    return os.environ.get("OPTIFORGE_MEMORY") or DEFAULT_URL


PROJECTS_DIR = "~/.optiforge/projects"
_PROJECT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MEMORY_SCOPES = "run (default), project:NAME, global, none, a SQLAlchemy URL, or a run directory with a memory.db"


def scoped_url(memory: str | None, run_dir: str | Path | None) -> str | None:
    """The memory a run uses, from ``--memory``; None means no memory.

    Memory is scoped so one experiment never changes another's prompts:

    - ``run`` (the default, also ``None``): ``RUN_DIR/memory.db``, this run only (each run
      of an eval has its own, so seeds stay independent); without a run dir, an
      in-memory store that lives as long as the process;
    - ``project:NAME``: ``~/.optiforge/projects/NAME.db``, shared by every run that names
      the project (build it with ``optiforge autorem adapt --memory project:NAME``, then
      evaluate with the same ``--memory``);
    - ``global``: the one shared store, ``$OPTIFORGE_MEMORY`` or ``~/.optiforge/memory.db``
      (opt-in);
    - ``none``: no memory;
    - a SQLAlchemy URL (``sqlite:///path.db``, ``postgresql+psycopg://...``): that store.

    Raises:
        ConfigError: anything else.
    """
    spec = (memory or "run").strip()
    if spec == "none":
        return None
    if spec == "run":
        return f"sqlite:///{Path(run_dir) / 'memory.db'}" if run_dir is not None else "sqlite://"
    if spec == "global":
        return default_url()
    if spec.startswith("project:"):
        name = spec.removeprefix("project:")
        if not _PROJECT.fullmatch(name):
            raise ConfigError(
                f"--memory {spec!r}: a project name is letters, digits, '_', '.' or '-' "
                "(at most 64, not starting with a symbol)"
            )
        return f"sqlite:///{PROJECTS_DIR}/{name}.db"
    if "://" in spec:
        return spec
    if (Path(spec) / "memory.db").is_file():  # a run directory: the memory that run used
        return f"sqlite:///{Path(spec).resolve() / 'memory.db'}"
    raise ConfigError(f"--memory {spec!r}: use {MEMORY_SCOPES}")

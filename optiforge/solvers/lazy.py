"""Catalogues of methods named ``name -> "module:attribute"`` and imported on first use
(``train/catalogue.py``, ``rl/catalogue.py``): listing names imports nothing heavy."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def load_entry(entries: Mapping[str, str], name: str, what: str) -> Any:
    """The object ``entries[name]`` points at (its module imported now); ``KeyError``
    naming the known entries when ``name`` is not one (``what``: the kind of thing, for
    the message)."""
    try:
        module, attr = entries[name].split(":")
    except KeyError:
        raise KeyError(f"unknown {what} {name!r} (known: {', '.join(entries)})") from None
    return getattr(importlib.import_module(module), attr)

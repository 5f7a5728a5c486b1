"""The RL methods the ``rl`` suite and the formulator can name: ``name ->
"module:attribute"`` of an ``RLMethod`` (``api``), imported on first use (listing the names
imports neither a method nor torch nor gymnasium)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.solvers.rl.api import RLMethod

ENTRIES: dict[str, str] = {}


def names() -> list[str]:
    return list(ENTRIES)


def get(name: str) -> RLMethod:
    """The method called ``name``; ``KeyError`` naming the known ones."""
    try:
        module, attr = ENTRIES[name].split(":")
    except KeyError:
        raise KeyError(f"unknown RL method {name!r} (known: {', '.join(ENTRIES)})") from None
    from optiforge.solvers.rl.api import RLMethod

    method = getattr(importlib.import_module(module), attr)
    assert isinstance(method, RLMethod), ENTRIES[name]
    return method

"""The training methods the ``train`` suite, the formulator and ``optiforge list
optimizers`` can name: ``name -> "module:attribute"`` of a ``TrainMethod``, imported on
first use (listing the names imports no method, nor torch).

``catalogue.json`` beside this module stores what ``list optimizers`` prints of each
method (description, kinds, hyperparameter ranges), generated from the methods
themselves (``python -m optiforge.solvers.train.catalogue``; a test compares); a method
not in it yet is described by importing it (``info``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optiforge.solvers.lazy import load_entry

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.solvers.train.api import TrainMethod

INDEX = Path(__file__).with_name("catalogue.json")

ENTRIES: dict[str, str] = {
    "adamw": "optiforge.solvers.train.baselines:ADAMW",
    "sgd": "optiforge.solvers.train.baselines:SGD",
    "upgrad-iwrm": "optiforge.solvers.train.jacobian_descent:UPGRAD_IWRM",
    "imuon": "optiforge.solvers.train.imuon.method:IMUON",
    "muon-factors": "optiforge.solvers.train.imuon.method:MUON_FACTORS",
    "clipped-sgd": "optiforge.solvers.train.heavy_tail:CLIPPED_SGD",
    "bros": "optiforge.solvers.train.bilevel:BROS",
    "ma-soba": "optiforge.solvers.train.bilevel:MA_SOBA",
}


def names() -> list[str]:
    return list(ENTRIES)


def get(name: str) -> TrainMethod:
    """The method called ``name``; ``KeyError`` naming the known ones."""
    method = load_entry(ENTRIES, name, "training method")
    from optiforge.solvers.train.api import TrainMethod  # torch: only when a method is used

    assert isinstance(method, TrainMethod), ENTRIES[name]
    return method


def describe(name: str) -> dict[str, Any]:
    """What the method says of itself (imports it): description, kinds, hparams."""
    m = get(name)
    return {"description": m.description, "kinds": sorted(m.kinds),
            "hparams": {k: {"low": h.low, "high": h.high, "default": h.default, "log": h.log,
                            "kind": h.kind} for k, h in m.hparams.items()}}  # fmt: skip


def build_index() -> dict[str, dict[str, Any]]:
    """Every entry described (imports every method)."""
    return {name: describe(name) for name in ENTRIES}


@cache
def load_index() -> dict[str, dict[str, Any]]:
    """The stored descriptions (``catalogue.json``; empty when absent)."""
    if not INDEX.is_file():
        return {}
    data: dict[str, dict[str, Any]] = json.loads(INDEX.read_text(encoding="utf-8"))
    return data


def info(name: str) -> dict[str, Any]:
    """``name``'s stored description, else the method's own (imported)."""
    return load_index().get(name) or describe(name)


def write_index(path: Path = INDEX) -> Path:
    path.write_text(json.dumps(build_index(), indent=1) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":  # python -m optiforge.solvers.train.catalogue
    print(f"wrote {write_index()}")

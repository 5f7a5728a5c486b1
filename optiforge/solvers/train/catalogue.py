"""The training methods the ``train`` suite, the formulator and ``optiforge list
optimizers`` can name: ``name -> "module:attribute"`` of a ``TrainMethod``, imported on
first use (listing the names imports no method)."""

from __future__ import annotations

import importlib

from optiforge.solvers.train.api import TrainMethod

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
    try:
        module, attr = ENTRIES[name].split(":")
    except KeyError:
        raise KeyError(f"unknown training method {name!r} (known: {', '.join(ENTRIES)})") from None
    method = getattr(importlib.import_module(module), attr)
    assert isinstance(method, TrainMethod), ENTRIES[name]
    return method

"""Small reference SCMs for the CBO back-end tests."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.solvers.cbo import SCM, InterventionDomain, StructuralEquation


def toy_graph_scm() -> SCM:
    """ToyGraph: X -> Z -> Y (REFERENCE.md)."""
    eqs = [
        StructuralEquation("X", (), lambda p, e: e),
        StructuralEquation("Z", ("X",), lambda p, e: np.exp(-p["X"]) + e),
        StructuralEquation("Y", ("Z",), lambda p, e: np.cos(p["Z"]) - np.exp(-p["Z"] / 20) + e),
    ]
    doms = {"X": InterventionDomain(low=-5, high=5), "Z": InterventionDomain(low=-5, high=20)}
    return SCM(eqs, "Y", doms)


@pytest.fixture
def toy() -> SCM:
    return toy_graph_scm()


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> None:
    """Tiny GPs: threads only add overhead on the shared 2-core machine."""
    import torch

    torch.set_num_threads(1)

"""Kernel validation reasons, source loading, the sandbox CLI and functional dedup."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from optiforge.errors import InvalidCandidate
from optiforge.solvers.gp import (
    HyperSpec,
    KernelSpec,
    are_duplicates,
    deduplicate,
    kernel_from_source,
    periodic,
    rbf,
    validate_kernel,
)
from optiforge.solvers.gp.kernels import BASE_KERNELS, add, mul, scale

DT = torch.float64

RBF_SRC = """
import torch
NAME = "my_rbf"
HYPERPARAMETERS = {"lengthscale": {"shape": "ard", "init": 0.5, "bounds": [0.01, 100.0]}}

def kernel(x1, x2, params):
    a = x1 / params["lengthscale"]
    b = x2 / params["lengthscale"]
    d2 = (a * a).sum(-1)[:, None] + (b * b).sum(-1)[None, :] - 2 * a @ b.T
    return torch.exp(-0.5 * d2.clamp_min(0))
"""


def _spec(fn, hyp=None) -> KernelSpec:  # noqa: ANN001
    return KernelSpec(
        "k", fn, hyp if hyp is not None else {"lengthscale": HyperSpec("scalar", 1.0, (0.01, 100))}
    )


@pytest.mark.parametrize("name", sorted(BASE_KERNELS))
@pytest.mark.parametrize("ard", [False, True])
def test_base_kernels_and_compositions_validate(name: str, ard: bool) -> None:
    k = BASE_KERNELS[name](ard)
    assert validate_kernel(k, 3).ok, validate_kernel(k, 3).reason
    assert validate_kernel(mul(add(k, rbf()), periodic()), 2, n_probe=12).ok


def test_rejects_non_psd_negative_rbf() -> None:
    r = rbf()
    rep = validate_kernel(_spec(lambda a, b, p: -r.fn(a, b, p)), 3)
    assert not rep.ok and rep.reason.startswith("not PSD: Cholesky failed with jitter up to 0.0001")


def test_rejects_non_psd_shifted_linear() -> None:
    rep = validate_kernel(_spec(lambda a, b, p: a @ b.T / p["lengthscale"] - 1.0), 3)
    assert not rep.ok and "not PSD" in rep.reason


def test_rejects_asymmetric() -> None:
    rep = validate_kernel(
        _spec(lambda a, b, p: torch.exp(-((a[:, :1] - 2 * b[:, :1].T) ** 2) / p["lengthscale"])), 2
    )
    assert not rep.ok and rep.reason.startswith("not symmetric")


def test_rejects_nan_values_and_nan_gradients() -> None:
    rep = validate_kernel(_spec(lambda a, b, p: torch.log(a - 0.5) @ b.T * p["lengthscale"]), 2)
    assert not rep.ok and rep.reason.startswith("non-finite values")

    # Finite values, NaN gradient: sqrt of a distance that is exactly zero on the diagonal.
    def sqrt_dist(a, b, p):  # noqa: ANN001, ANN202
        d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
        return torch.exp(-d2.sqrt() / p["lengthscale"])

    rep = validate_kernel(_spec(sqrt_dist), 2)
    assert not rep.ok and rep.reason.startswith("non-finite gradient wrt"), rep.reason


def test_rejects_too_many_hyperparameters_and_crashes_and_bad_shapes() -> None:
    rep = validate_kernel(rbf(ard=True), 20, max_hyperparameters=10)
    assert not rep.ok and rep.reason == "too many hyperparameters: 20 > 10 (d=20)"
    rep = validate_kernel(_spec(lambda a, b, p: p["missing"]), 2)
    assert not rep.ok and rep.reason.startswith("kernel raised KeyError")
    rep = validate_kernel(_spec(lambda a, b, p: (a @ b.T).sum(0)), 2)
    assert not rep.ok and "shape" in rep.reason


def test_rejects_batch_dependent_kernel() -> None:
    def normalised(a, b, p):  # noqa: ANN001, ANN202
        k = torch.exp(-(torch.cdist(a, b) ** 2) / p["lengthscale"])
        return k / k.mean()

    rep = validate_kernel(_spec(normalised), 2)
    assert not rep.ok and rep.reason.startswith("inconsistent")


def test_kernel_from_source_and_restrictions() -> None:
    spec = kernel_from_source(RBF_SRC)
    assert spec.name == "my_rbf" and spec.hyperparameters["lengthscale"].shape == "ard"
    assert validate_kernel(spec, 4).ok
    X = torch.rand(6, 4, dtype=DT)
    p = {"lengthscale": torch.full((4,), 0.7, dtype=DT)}
    torch.testing.assert_close(spec.fn(X, X, p), rbf(True).fn(X, X, p))
    with pytest.raises(InvalidCandidate, match="not allowed"):
        kernel_from_source("import os\n" + RBF_SRC)
    with pytest.raises(InvalidCandidate, match="does not parse"):
        kernel_from_source("def kernel(:")
    with pytest.raises(InvalidCandidate, match="must define"):
        kernel_from_source("HYPERPARAMETERS = {}")
    with pytest.raises(InvalidCandidate, match="outside bounds"):
        kernel_from_source(RBF_SRC.replace('"init": 0.5', '"init": 500.0'))
    with pytest.raises(InvalidCandidate, match="definition"):
        kernel_from_source("open('/etc/passwd')\n" + RBF_SRC)


@pytest.mark.slow
def test_validate_cli_subprocess_reports_json() -> None:
    X = torch.rand(15, 2, dtype=DT)
    y = torch.sin(4 * X[:, 0])
    req = {"source": RBF_SRC, "d": 2, "X": X.tolist(), "y": y.tolist(), "n_restarts": 0}
    out = subprocess.run(
        [sys.executable, "-m", "optiforge.solvers.gp.validate_cli"],
        input=json.dumps(req),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    assert rep["ok"] and rep["loo_crps"] > 0 and "lengthscale" in rep["params"]
    bad = {"source": RBF_SRC.replace("torch.exp(-0.5", "-torch.exp(-0.5"), "d": 2}
    out = subprocess.run(
        [sys.executable, "-m", "optiforge.solvers.gp.validate_cli"],
        input=json.dumps(bad),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert json.loads(out.stdout)["reason"].startswith("not PSD")


def test_duplicates_scale_absorbed_but_periodic_differs() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(25, 2, generator=g, dtype=DT)
    y = torch.sin(3 * X[:, 0]) + 0.5 * X[:, 1] + 0.02 * torch.randn(25, generator=g, dtype=DT)
    base = rbf()
    twice = KernelSpec("2RBF", lambda a, b, p: 2.0 * base.fn(a, b, p), dict(base.hyperparameters))
    assert are_duplicates(base, twice, X, y)
    assert are_duplicates(base, scale(base), X, y)
    assert not are_duplicates(base, periodic(), X, y)
    rep = deduplicate(
        [base, periodic(), twice, kernel_from_source(RBF_SRC.replace('"ard"', '"scalar"'))], X, y
    )
    assert rep.duplicate_of == [None, None, 0, 0]
    assert rep.n_duplicates == 2 and rep.n_unique == 2

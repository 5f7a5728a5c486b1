"""iMuon unit tests: the intrinsic charts are isometries, each LMO attains the dual norm over
the intrinsic unit ball (against random search and local perturbation), LMOs and whole runs
are equivariant under each manifold's symmetry group, steps match hand computations, and
iterates stay on their manifold."""

from __future__ import annotations

import math
from collections.abc import Iterator

import geoopt
import pytest
import torch

from optiforge.solvers.train.imuon import FactorMuon, FixedRank, Grassmann, IMuon, msign
from optiforge.solvers.train.imuon.lmo import (  # fmt: skip
    NORMS,
    Block,
    Norm,
    dual_norm,
    intrinsic_norm,
    lmo,
    msign_newton_schulz,
)
from optiforge.solvers.train.imuon.manifolds import chart_blocks, chart_tangent

MANIFOLDS = ["fixed_rank", "spd", "stiefel", "stiefel_canonical", "grassmann"]


@pytest.fixture(autouse=True)
def _float64() -> Iterator[None]:
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def _orth(n: int, g: torch.Generator) -> torch.Tensor:
    return torch.linalg.qr(torch.randn(n, n, generator=g))[0]


def _setup(name: str, g: torch.Generator) -> tuple[object, torch.Tensor]:
    """(manifold, a random point)."""
    if name == "fixed_rank":
        man = FixedRank((7, 5), 2)
        u, v = torch.linalg.qr(torch.randn(7, 2, generator=g))[0], torch.linalg.qr(torch.randn(5, 2, generator=g))[0]  # fmt: skip
        return man, (u * torch.tensor([3.0, 0.2])) @ v.T
    if name == "spd":
        a = torch.randn(4, 4, generator=g)
        return geoopt.manifolds.SymmetricPositiveDefinite(), a @ a.T + 0.3 * torch.eye(4)
    x = torch.linalg.qr(torch.randn(7, 3, generator=g))[0]
    if name == "stiefel":
        return geoopt.manifolds.EuclideanStiefel(), x
    if name == "stiefel_canonical":
        return geoopt.manifolds.CanonicalStiefel(), x
    return Grassmann(), x


def _metric(man: object, x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> float:
    return sum(float((p.value * q.value).sum()) for p, q in zip(chart_blocks(man, x, a), chart_blocks(man, x, b), strict=True))  # fmt: skip


@pytest.mark.parametrize("name", MANIFOLDS)
def test_chart_is_an_isometry_onto_the_tangent_space(name: str) -> None:
    g = torch.Generator().manual_seed(0)
    man, x = _setup(name, g)
    for _ in range(3):
        a = man.proju(x, torch.randn(x.shape, generator=g))  # type: ignore[attr-defined]
        b = man.proju(x, torch.randn(x.shape, generator=g))  # type: ignore[attr-defined]
        assert torch.allclose(chart_tangent(man, x, [blk.value for blk in chart_blocks(man, x, a)]), a, atol=1e-10)  # fmt: skip
        if (
            name != "grassmann"
        ):  # geoopt's inner is the metric (Grassmann's is the Stiefel one's restriction)
            assert _metric(man, x, a, b) == pytest.approx(
                float(man.inner(x, a, b)), rel=1e-9, abs=1e-12
            )  # type: ignore[attr-defined]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", MANIFOLDS)
def test_lmo_attains_the_dual_norm_over_the_intrinsic_ball(name: str, norm: Norm) -> None:
    g = torch.Generator().manual_seed(1)
    man, x = _setup(name, g)
    grad = man.egrad2rgrad(x, torch.randn(x.shape, generator=g))  # type: ignore[attr-defined]
    blocks = chart_blocks(man, x, grad)
    d = chart_tangent(man, x, lmo(blocks, norm))
    assert man.check_vector_on_tangent(x, d, atol=1e-10)  # type: ignore[attr-defined]
    d_blocks = chart_blocks(man, x, d)
    assert intrinsic_norm(d_blocks, norm) == pytest.approx(1.0, abs=1e-9)
    best = _metric(man, x, grad, d)
    assert best == pytest.approx(dual_norm(blocks, norm), rel=1e-9)
    # brute force: random unit tangent vectors never beat it, nor do local perturbations of it
    for k in range(400):
        xi = man.proju(x, torch.randn(x.shape, generator=g))  # type: ignore[attr-defined]
        if k >= 200:
            xi = d + 0.05 * xi
        xi = xi / intrinsic_norm(chart_blocks(man, x, xi), norm)
        assert _metric(man, x, grad, xi) <= best + 1e-9


def test_lmo_closed_forms_by_hand() -> None:
    g = torch.Generator().manual_seed(2)
    a = torch.randn(5, 3, generator=g)
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    assert torch.allclose(lmo([Block(a)], "spectral")[0], u @ vh)
    assert torch.allclose(lmo([Block(a)], "nuclear")[0], torch.outer(u[:, 0], vh[0]))
    assert torch.allclose(lmo([Block(a)], "frobenius")[0], a / a.norm())
    # two blocks: the nuclear LMO lives in the block holding the largest singular value
    z = lmo([Block(a), Block(10 * a[:2])], "nuclear")
    assert float(z[0].abs().max()) == 0.0 and float(torch.linalg.svdvals(z[1]).sum()) == pytest.approx(1.0)  # fmt: skip
    # symmetric and skew blocks stay in their subspaces (odd skew: one zero eigenvalue)
    sym = a.T @ a - 2 * torch.eye(3)
    ms = msign(sym, "sym")
    assert torch.allclose(ms, ms.T) and torch.allclose(ms @ ms, torch.eye(3), atol=1e-9)
    sk = a[:3] - a[:3].T
    for norm in NORMS:
        (zk,) = lmo([Block(sk, "skew")], norm)
        assert torch.allclose(zk, -zk.T, atol=1e-12)
        assert float((zk * sk).sum()) == pytest.approx(dual_norm([Block(sk, "skew")], norm))
    # Newton-Schulz (the practical Muon's) is close to, not equal to, the polar factor
    sv = torch.linalg.svdvals(msign_newton_schulz(a))
    assert float(sv.min()) > 0.6 and float(sv.max()) < 1.3


def _run(man: object, x0: torch.Tensor, loss: object, steps: int, **kw: object) -> torch.Tensor:
    x = geoopt.ManifoldParameter(x0.clone(), manifold=man)
    opt = IMuon([x], **kw)  # type: ignore[arg-type]
    for _ in range(steps):
        opt.zero_grad()
        loss(x).backward()  # type: ignore[operator]
        opt.step()
    return x.detach()


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", MANIFOLDS)
def test_runs_are_equivariant_under_the_symmetry_group(name: str, norm: Norm) -> None:
    """iMuon on ``f o phi^-1`` from ``phi(X0)`` is ``phi`` of iMuon on ``f`` from ``X0``
    (fixed-rank/Stiefel/Grassmann: ``phi(X) = Q1 X Q2^T``; SPD: ``phi(P) = A P A^T``, ``A``
    any invertible), with momentum (transport) on."""
    g = torch.Generator().manual_seed(3)
    man, x0 = _setup(name, g)
    c = torch.randn(x0.shape, generator=g)
    h = torch.randn(x0.shape[0], x0.shape[0], generator=g)
    h = h @ h.T

    def f(x: torch.Tensor) -> torch.Tensor:
        return (c * x).sum() + 0.1 * torch.trace(x.T @ h @ x) + 0.05 * (x**4).sum()

    if name == "spd":
        a = torch.randn(4, 4, generator=g) + 2 * torch.eye(4)
        ai = torch.linalg.inv(a)
        phi, f_phi = (lambda x: a @ x @ a.T), (lambda y: f(ai @ y @ ai.T))
    else:
        q1, q2 = _orth(x0.shape[0], g), _orth(x0.shape[1], g)
        phi, f_phi = (lambda x: q1 @ x @ q2.T), (lambda y: f(q1.T @ y @ q2))
    kw = dict(lr=0.05, momentum=0.5, norm=norm)
    x = _run(man, x0, f, 4, **kw)
    y = _run(man, phi(x0), f_phi, 4, **kw)
    if name == "grassmann":  # a subspace: compare projectors
        assert torch.allclose(y @ y.T, phi(x) @ phi(x).T, atol=1e-8)
    else:
        assert torch.allclose(y, phi(x), atol=1e-8)


def test_spd_step_matches_the_hand_formula() -> None:
    """``P <- P^{1/2} expm(-lr msign(P^{1/2} sym(G) P^{1/2})) P^{1/2}``."""
    g = torch.Generator().manual_seed(4)
    _, p0 = _setup("spd", g)
    c = torch.randn(4, 4, generator=g)
    x = geoopt.ManifoldParameter(p0.clone(), manifold=geoopt.manifolds.SymmetricPositiveDefinite())
    opt = IMuon([x], lr=0.1)
    (c * x).sum().backward()
    opt.step()
    lam, q = torch.linalg.eigh(p0)
    root = (q * lam.sqrt()) @ q.T
    mu, w = torch.linalg.eigh(root @ (0.5 * (c + c.T)) @ root)
    expect = root @ ((w * torch.exp(-0.1 * torch.sign(mu))) @ w.T) @ root
    assert torch.allclose(x.detach(), expect, atol=1e-10)


def test_fixed_rank_step_is_the_truncated_svd_of_the_euclidean_step() -> None:
    g = torch.Generator().manual_seed(5)
    man, x0 = _setup("fixed_rank", g)
    c = torch.randn(7, 5, generator=g)
    x = geoopt.ManifoldParameter(x0.clone(), manifold=man)
    opt = IMuon([x], lr=0.3)
    (c * x).sum().backward()
    opt.step()
    uu, s, vh = torch.linalg.svd(x0)
    u, v = uu[:, :2], vh[:2].T
    m, up, vp = u.T @ c @ v, c @ v - u @ (u.T @ c @ v), c.T @ u - v @ (v.T @ c.T @ u)
    d = u @ msign(m) @ v.T + msign(up) @ v.T + u @ msign(vp).T
    assert torch.allclose(x.detach(), man.projx(x0 - 0.3 * d), atol=1e-10)


def test_iterates_stay_on_the_manifold_in_float32() -> None:
    """300 stochastic steps in float32: carried ``U``, ``V`` orthonormal to 1e-5, rank
    exactly ``r``, the point equal to ``U diag(s) V^T``; Stiefel/Grassmann orthonormal."""
    g = torch.Generator().manual_seed(6)
    man = FixedRank((40, 30), 4)
    x = geoopt.ManifoldParameter(man.random(dtype=torch.float32), manifold=man)
    st = geoopt.ManifoldParameter(torch.linalg.qr(torch.randn(30, 4, dtype=torch.float32))[0], manifold=Grassmann())  # fmt: skip
    opt = IMuon([x, st], lr=0.05, momentum=0.9)
    target = torch.randn(40, 30, generator=g).float()
    for _ in range(300):
        opt.zero_grad()
        noisy = target + torch.randn(40, 30, generator=g).float()
        (((x - noisy) ** 2).sum() + ((st.T @ noisy.T @ noisy @ st).trace() * -1e-3)).backward()
        opt.step()
    u, s, v = opt.factors(x)
    assert float((u.T @ u - torch.eye(4)).abs().max()) < 1e-5
    assert float((v.T @ v - torch.eye(4)).abs().max()) < 1e-5
    assert float(s.min()) > 0 and torch.linalg.matrix_rank(x.detach()) == 4
    assert torch.allclose(x.detach(), (u * s) @ v.T, atol=1e-5)
    assert float((st.detach().T @ st.detach() - torch.eye(4)).abs().max()) < 1e-5
    man.assert_check_point_on_manifold(x.detach(), atol=1e-4)


def test_geoopt_baselines_run_on_our_manifolds() -> None:
    g = torch.Generator().manual_seed(7)
    man = FixedRank((8, 6), 2)
    x = geoopt.ManifoldParameter(man.random(), manifold=man)
    y = geoopt.ManifoldParameter(torch.linalg.qr(torch.randn(8, 2, generator=g))[0], manifold=Grassmann())  # fmt: skip
    for opt in (geoopt.optim.RiemannianSGD([x, y], lr=0.01, momentum=0.9), geoopt.optim.RiemannianAdam([x, y], lr=0.01)):  # fmt: skip
        for _ in range(5):
            opt.zero_grad()
            ((x - 1) ** 2).sum().add(-(y.sum(0) ** 2).sum()).backward()
            opt.step()
    man.assert_check_point_on_manifold(x.detach())
    assert float((y.detach().T @ y.detach() - torch.eye(2)).abs().max()) < 1e-10


def test_factor_muon_step_and_errors() -> None:
    w = torch.nn.Parameter(torch.ones(3, 2))
    c = torch.tensor([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    opt = FactorMuon([w], lr=0.5)
    (c * w).sum().backward()
    opt.step()
    assert torch.allclose(w.detach(), torch.ones(3, 2) - 0.5 * msign(c))
    with pytest.raises(TypeError, match="ManifoldParameter"):
        p = torch.nn.Parameter(torch.ones(2, 2))
        p.grad = torch.ones(2, 2)
        IMuon([p]).step()
    with pytest.raises(ValueError, match="unknown norm"):
        IMuon([torch.nn.Parameter(torch.ones(1))], norm="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rank"):
        FixedRank((3, 2), 3)
    assert math.isfinite(dual_norm([Block(torch.zeros(2, 2))], "frobenius"))

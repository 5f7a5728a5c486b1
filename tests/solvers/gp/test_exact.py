"""ExactGP: LOO vs brute force, CRPS vs properscoring + quadrature, agreement with BoTorch."""

from __future__ import annotations

import math

import numpy as np
import properscoring
import pytest
import torch
from scipy import integrate, stats

from optiforge.errors import SolverError
from optiforge.solvers.gp import ExactGP, gaussian_crps, matern52, rbf, rq
from optiforge.solvers.gp.kernels import BASE_KERNELS

DT = torch.float64


def _data(n: int = 30, d: int = 3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=DT)
    y = torch.sin(5 * X[:, 0]) + X[:, 1] ** 2 + 0.05 * torch.randn(n, generator=g, dtype=DT)
    return X, y


def test_crps_matches_properscoring_and_quadrature() -> None:
    mu = torch.tensor([0.0, 1.5, -2.0, 0.3], dtype=DT)
    sig = torch.tensor([1.0, 0.3, 2.5, 0.01], dtype=DT)
    y = torch.tensor([0.2, 0.9, 1.0, 0.31], dtype=DT)
    ours = gaussian_crps(mu, sig, y).numpy()
    ref = properscoring.crps_gaussian(y.numpy(), mu.numpy(), sig.numpy())
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)
    # Definition: CRPS = int (F(t) - 1{t >= y})^2 dt, split at y for the quadrature.
    for m, s, yy, o in zip(mu.tolist(), sig.tolist(), y.tolist(), ours, strict=True):
        lo, hi = m - 12 * s, m + 12 * s
        f = stats.norm(m, s).cdf
        left = integrate.quad(lambda t, f=f: f(t) ** 2, min(lo, yy - 1), yy, limit=200)[0]
        right = integrate.quad(lambda t, f=f: (1 - f(t)) ** 2, yy, max(hi, yy + 1), limit=200)[0]
        assert o == pytest.approx(left + right, rel=1e-6, abs=1e-9)


def test_crps_rejects_nonpositive_sigma() -> None:
    with pytest.raises(SolverError, match="sigma > 0"):
        gaussian_crps(torch.zeros(1), torch.zeros(1), torch.zeros(1))


def test_loo_closed_form_matches_brute_force_refits() -> None:
    X, y = _data(25)
    gp = ExactGP(rbf(ard=True), n_restarts=0).fit(X, y)
    mu, var = gp.loo()
    assert gp.params is not None
    p = gp.params
    for i in range(X.shape[0]):
        keep = torch.arange(X.shape[0]) != i
        sub = ExactGP(rbf(ard=True)).set_params(
            p.kernel, outputscale=p.outputscale, noise=p.noise, mean=p.mean
        )
        sub.condition(X[keep], y[keep])
        m_i, v_i = sub.predict(X[i : i + 1], include_noise=True)
        assert float(m_i) == pytest.approx(float(mu[i]), rel=1e-7, abs=1e-9)
        assert float(v_i) == pytest.approx(float(var[i]), rel=1e-7, abs=1e-12)
    crps = gp.loo_crps()
    direct = properscoring.crps_gaussian(y.numpy(), mu.numpy(), var.sqrt().numpy()).mean()
    assert crps == pytest.approx(direct, rel=1e-9)


def test_fit_improves_likelihood_and_restarts_are_seeded() -> None:
    X, y = _data(30)
    spec = matern52(ard=True)
    gp = ExactGP(spec, n_restarts=2, seed=3).fit(X, y)
    init = ExactGP(spec).set_params(
        spec.initial_params(3),
        outputscale=float(y.var()),
        noise=1e-2 * float(y.var()),
        mean=float(y.mean()),
    )
    init.condition(X, y)
    assert gp.log_marginal_likelihood() > init.log_marginal_likelihood()
    gp2 = ExactGP(spec, n_restarts=2, seed=3).fit(X, y)
    assert gp2.nll_ == pytest.approx(gp.nll_, abs=1e-12)
    # A smooth function with little noise: the GP should predict held-out points well.
    Xt, yt = _data(50, seed=9)
    m, _ = gp.predict(Xt)
    assert float(((m - yt) ** 2).mean()) < 0.1 * float(yt.var())


def _botorch_model(
    X: torch.Tensor,
    y: torch.Tensor,
    base: str,
    ls: torch.Tensor,
    os_: float,
    noise: float,
    mean: float,
):  # noqa: ANN202
    from botorch.models import SingleTaskGP
    from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
    from gpytorch.likelihoods import GaussianLikelihood

    d = X.shape[1]
    inner = RBFKernel(ard_num_dims=d) if base == "RBF" else MaternKernel(nu=2.5, ard_num_dims=d)
    cov = ScaleKernel(inner)
    lik = GaussianLikelihood()
    model = SingleTaskGP(
        X, y.unsqueeze(-1), likelihood=lik, covar_module=cov, outcome_transform=None
    ).to(DT)
    model.covar_module.base_kernel.lengthscale = ls
    model.covar_module.outputscale = os_
    model.likelihood.noise = noise
    model.mean_module.constant.data.fill_(mean)
    model.eval()
    return model


@pytest.mark.parametrize("base", ["RBF", "Matern52"])
def test_matches_botorch_singletaskgp_with_fixed_hyperparameters(base: str) -> None:
    X, y = _data(40, d=4)
    ls = torch.tensor([0.3, 0.5, 0.8, 1.2], dtype=DT)
    spec = BASE_KERNELS[base](True)
    ours = (
        ExactGP(spec)
        .set_params({"lengthscale": ls}, outputscale=1.3, noise=0.01, mean=0.2)
        .condition(X, y)
    )
    model = _botorch_model(X, y, base, ls, 1.3, 0.01, 0.2)
    Xt = torch.rand(20, 4, generator=torch.Generator().manual_seed(5), dtype=DT)
    with torch.no_grad():
        post = model.posterior(Xt)
        bm, bv = post.mean.squeeze(-1), post.variance.squeeze(-1)
    m, v = ours.predict(Xt)
    torch.testing.assert_close(m, bm, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(v, bv, rtol=1e-5, atol=1e-6)
    # log marginal likelihood agrees with gpytorch's ExactMarginalLogLikelihood too
    from gpytorch.mlls import ExactMarginalLogLikelihood

    model.train()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with torch.no_grad():
        ref = float(mll(model(X), y)) * X.shape[0]
    assert ours.log_marginal_likelihood() == pytest.approx(ref, rel=1e-6)


def test_fitted_predictions_close_to_fitted_singletaskgp() -> None:
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.kernels import RBFKernel, ScaleKernel
    from gpytorch.mlls import ExactMarginalLogLikelihood

    X, y = _data(40, d=2, seed=1)
    from gpytorch.likelihoods import GaussianLikelihood

    # Plain ML on both sides: no hyperpriors (a bare GaussianLikelihood and kernels).
    model = SingleTaskGP(
        X,
        y.unsqueeze(-1),
        likelihood=GaussianLikelihood(),
        covar_module=ScaleKernel(RBFKernel(ard_num_dims=2)),
        outcome_transform=None,
    )
    assert not list(model.named_priors())
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    ours = ExactGP(rbf(ard=True), n_restarts=2).fit(X, y)
    Xt = torch.rand(30, 2, generator=torch.Generator().manual_seed(2), dtype=DT)
    model.eval()
    with torch.no_grad():
        bm = model.posterior(Xt).mean.squeeze(-1)
    m, _ = ours.predict(Xt)
    # Both fitted by ML from different optimisers: predictions agree within data noise.
    assert float((m - bm).abs().max()) < 0.05
    train_ll = ExactMarginalLogLikelihood(model.likelihood, model)
    model.train()
    with torch.no_grad():
        ref = float(train_ll(model(X), y)) * X.shape[0]
    assert ours.log_marginal_likelihood() >= ref - 1e-3 * abs(ref) - 1e-3


@pytest.mark.parametrize("name", sorted(BASE_KERNELS))
def test_every_base_kernel_fits_and_gives_finite_loo(name: str) -> None:
    X, y = _data(20, d=2)
    gp = ExactGP(BASE_KERNELS[name](True), n_restarts=0, max_iter=50).fit(X, y)
    mu, var = gp.loo()
    assert bool(torch.isfinite(mu).all()) and bool((var > 0).all())
    assert math.isfinite(gp.loo_crps()) and math.isfinite(gp.bic())


def test_bad_inputs_raise_solver_error() -> None:
    gp = ExactGP(rq())
    with pytest.raises(SolverError, match="n x d"):
        gp.fit(torch.zeros(5), torch.zeros(5))
    with pytest.raises(SolverError, match="values for"):
        gp.fit(torch.zeros(5, 2), torch.zeros(4))
    with pytest.raises(SolverError, match="not fitted"):
        gp.loo()


@pytest.mark.parametrize("spec", [rbf(ard=True), matern52(ard=True), rq()], ids=lambda s: s.name)
def test_gradient_without_autograd_through_cholesky_matches_autograd(spec) -> None:  # type: ignore[no-untyped-def]
    """The fit's gradient (G = (K^-1 - alpha alpha^T)/2 through the kernel only) equals
    autograd through the whole Cholesky objective."""
    X, y = _data(40)
    gp = ExactGP(spec)
    layout, _, lo, hi = gp._layout(3, y)
    for t in np.random.default_rng(0).uniform(lo, hi, size=(3, len(lo))):
        f, g = gp._nll_and_grad(X, y, t, layout)
        th = torch.tensor(t, dtype=DT, requires_grad=True)
        f_ref = gp._nll(X, y, gp._unpack(th, layout, 3))
        (g_ref,) = torch.autograd.grad(f_ref, th)
        assert f == pytest.approx(float(f_ref.detach()), rel=1e-12)
        np.testing.assert_allclose(g, g_ref.numpy(), rtol=1e-6, atol=1e-9)


# Bounds of the subset-of-data fit against the dense fit at n=160, d=3, threshold 60
# (measured: NLL/pt gap 1e-2 / 3e-3 without refinement, 4e-8 / 3e-6 with 15 refinement
# iterations, for RBF-ARD / Matern-5/2-ARD).
_SUBSET_BOUNDS = {0: (0.03, 0.05, 0.6), 15: (1e-4, 0.005, 0.02)}


@pytest.mark.parametrize("refine", [0, 15])
@pytest.mark.parametrize("spec", [rbf(ard=True), matern52(ard=True)], ids=lambda s: s.name)
def test_subset_of_data_fit_error_bound(spec, refine: int) -> None:  # type: ignore[no-untyped-def]
    """Above ``dense_max_n`` the hyperparameters come from a seeded subset (+ refinement):
    exact NLL/pt within the stated gap of the dense fit's, predictive mean within ``dmu``
    y-sd and variance within ``exp(dvar)`` of it at new points; the model is conditioned
    on every point."""
    X, y = _data(160)
    dense = ExactGP(spec, n_restarts=0, dense_max_n=None).fit(X, y)
    sub = ExactGP(spec, n_restarts=0, dense_max_n=60, refine_iter=refine).fit(X, y)
    assert dense.fit_mode_ == "dense"
    assert sub.fit_mode_.startswith("subset 60/160")
    assert ("refine" in sub.fit_mode_) == (refine > 0)
    assert sub.X is not None and sub.X.shape[0] == 160  # conditioned on all points
    gap, dmu, dvar = _SUBSET_BOUNDS[refine]
    assert sub.nll_ - dense.nll_ <= gap
    assert sub.nll_ == pytest.approx(-sub.log_marginal_likelihood() / 160, rel=1e-12)
    Xs = torch.rand(200, 3, generator=torch.Generator().manual_seed(9), dtype=DT)
    m1, v1 = sub.predict(Xs)
    m2, v2 = dense.predict(Xs)
    assert float((m1 - m2).abs().max()) / float(y.std()) <= dmu
    assert float((v1 / v2).log().abs().max()) <= dvar
    again = ExactGP(spec, n_restarts=0, dense_max_n=60, refine_iter=refine).fit(X, y)
    assert again.nll_ == sub.nll_  # the subset is seeded


def test_subset_threshold_is_validated_and_small_fits_stay_dense() -> None:
    with pytest.raises(SolverError, match="dense_max_n"):
        ExactGP(rbf(), dense_max_n=1)
    with pytest.raises(SolverError, match="refine_iter"):
        ExactGP(rbf(), refine_iter=-1)
    X, y = _data(30)
    assert ExactGP(rbf(), n_restarts=0, dense_max_n=30).fit(X, y).fit_mode_ == "dense"

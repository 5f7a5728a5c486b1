"""B3-PWL: block-tiled spmv (Triton under the interpreter vs torch), PDHG safe bounds,
and the claim: SOS2 branch-and-bound reaches HiGHS's optimal value on every tiny instance."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from optiforge.solvers.pwl import instances
from optiforge.solvers.pwl.bnb import SOS2BranchAndBound
from optiforge.solvers.pwl.model import PWLBuilder, evaluate, solve_lp_exact
from optiforge.solvers.pwl.pdhg import BatchedPDHG
from optiforge.solvers.pwl.reference import solve_highs_mip, solve_pdlp_root
from optiforge.solvers.pwl.spmv import PATHS, make_operator

CASES = [(fam, seed) for fam in instances.FAMILIES for seed in (0, 1)]


@pytest.mark.parametrize("shape", [(37, 53, 5), (16, 16, 16), (5, 70, 3)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_block_tiled_spmv_matches_torch_on_every_path(shape, dtype) -> None:
    m, n, b = shape
    A = sp.random(m, n, density=0.15, random_state=m + n, format="csr")
    X = torch.randn(n, b, dtype=dtype, generator=torch.Generator().manual_seed(0))
    Y = torch.randn(m, b, dtype=dtype, generator=torch.Generator().manual_seed(1))
    Ad = torch.tensor(A.toarray(), dtype=dtype)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for path in PATHS:  # "triton" runs under TRITON_INTERPRET=1 (conftest) on CPU
        op = make_operator(A, path, dtype=dtype)
        assert torch.allclose(op.mv(X), Ad @ X, atol=tol, rtol=tol), path
        assert torch.allclose(op.rmv(Y), Ad.T @ Y, atol=tol, rtol=tol), path


def test_builder_rejects_unbounded_vars_and_bad_breakpoints() -> None:
    b = PWLBuilder()
    with pytest.raises(ValueError):
        b.var(0.0, float("inf"))
    x = b.var(0.0, 1.0)
    with pytest.raises(ValueError):
        b.pwl(x, np.array([0.0, 0.0, 1.0]), np.zeros(3))


def test_pdhg_batch_converges_to_the_exact_lp_values_and_matches_pdlp() -> None:
    model = instances.make("workforce", "tiny", 0)
    solver = BatchedPDHG(model)
    rng = np.random.default_rng(0)
    ub = np.tile(model.ub, (4, 1))
    for k in range(1, 4):  # nodes differ in bounds: drop random lambdas
        lam = np.concatenate(model.sos2)
        ub[k, rng.choice(lam, 4, replace=False)] = 0.0
    lb = np.tile(model.lb, (4, 1))
    res = solver.solve(lb, ub, eps=1e-9)
    exact = [solve_lp_exact(model, lb[k], ub[k]).value for k in range(4)]
    assert res.converged.all()
    np.testing.assert_allclose(res.dual_bound, exact, rtol=1e-7)
    assert np.all(res.dual_bound <= np.array(exact) + 1e-12)
    assert solve_pdlp_root(model).value == pytest.approx(exact[0], rel=1e-6)


def test_safe_dual_bound_is_valid_where_the_primal_estimate_is_not() -> None:
    """Stopped early, the safe bound stays below every exact LP value, while the inexact
    primal objective (the broken variant one might prune on) overshoots on some."""
    over = 0
    for fam, seed in CASES:
        model = instances.make(fam, "tiny", seed)
        exact = solve_lp_exact(model, model.lb, model.ub).value
        res = BatchedPDHG(model).solve(model.lb[None], model.ub[None], max_iter=64, check_every=64)
        assert res.dual_bound[0] <= exact + 1e-12
        over += int(res.primal_value[0] > exact + 1e-9)
    assert over >= 1


@pytest.mark.parametrize(("family", "seed"), CASES)
def test_claim_same_optimal_value_as_highs_with_a_certified_incumbent(family, seed) -> None:
    model = instances.make(family, "tiny", seed)
    ref = solve_highs_mip(model)
    assert ref.status == "Optimal"
    bnb = SOS2BranchAndBound(model, batch_size=8, pump_starts=4, pump_rounds=5)
    res = bnb.solve()
    assert res.status == "optimal"
    assert res.value == pytest.approx(ref.value, rel=1e-6, abs=1e-9)
    assert res.certified_value == pytest.approx(res.value, rel=1e-9, abs=1e-12)
    ev = evaluate(model, res.x)
    assert ev.sos2_violation <= 1e-9 and ev.row_violation <= 1e-7
    assert res.gap <= 1e-6


def test_claim_discriminates_root_repair_and_lp_bound_miss_the_optimum() -> None:
    """The weaker methods: the LP relaxation (no SOS2) is strictly below the optimum and the
    root SOS2 repair alone strictly above it on these instances, so branching is needed."""
    for family in ("workforce", "resource"):
        model = instances.make(family, "tiny", 0)
        ref = solve_highs_mip(model).value
        weak = SOS2BranchAndBound(model, pump_starts=0)
        root = weak.lp.solve(model.lb[None], model.ub[None])
        weak.repair(root.x[0], np.zeros(len(model.sos2), dtype=int), weak.sizes - 1)
        assert weak.inc_value > ref + 1e-4 * abs(ref)
        assert solve_lp_exact(model, model.lb, model.ub).value < ref - 1e-4 * abs(ref)


def test_batched_and_one_at_a_time_search_agree() -> None:
    model = instances.make("workforce", "tiny", 1)
    one = SOS2BranchAndBound(model, batch_size=1, pump_starts=0).solve()
    many = SOS2BranchAndBound(model, batch_size=16, pump_starts=0).solve()
    assert one.value == pytest.approx(many.value, rel=1e-9)
    assert many.batches < one.batches


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_the_triton_path_solves_to_the_same_optimum() -> None:
    model = instances.make("resource", "tiny", 0)
    bnb = SOS2BranchAndBound(model, device="cuda", spmv="triton", pump_starts=4)
    assert bnb.lp.spmv_path == "triton"
    res = bnb.solve()
    assert res.value == pytest.approx(solve_highs_mip(model).value, rel=1e-6)


def test_feasibility_pump_alone_finds_an_exactly_evaluated_incumbent() -> None:
    for family in instances.FAMILIES:
        model = instances.make(family, "tiny", 1)
        bnb = SOS2BranchAndBound(model, pump_starts=4, pump_rounds=5)
        root = bnb.lp.solve(model.lb[None], model.ub[None])
        assert bnb.pump(root.x[0]) >= 1
        assert bnb.inc_source == "pump" and np.isfinite(bnb.inc_value)
        ev = evaluate(model, bnb.inc_x)
        assert ev.sos2_violation <= 1e-9 and ev.row_violation <= 1e-7
        assert ev.value == pytest.approx(bnb.inc_value, rel=1e-9, abs=1e-12)

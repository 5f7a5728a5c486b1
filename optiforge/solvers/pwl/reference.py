"""Reference solvers (the libraries' part): HiGHS as the exact MIP, OR-Tools PDLP for the root LP.

HiGHS has no native SOS, so :func:`solve_highs_mip` models each SOS2 set of ``K+1`` lambdas
with ``K`` segment binaries ``z``: ``sum z = 1``, ``lambda_0 <= z_0``,
``lambda_i <= z_{i-1} + z_i``, ``lambda_K <= z_{K-1}`` (the textbook binary formulation), and
solves with ``mip_rel_gap = 1e-9`` (HiGHS's default 1e-4 would not be a reference).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from optiforge.solvers.pwl.model import PWLModel, new_highs, pass_lp


@dataclass
class HighsMIPResult:
    """HiGHS's MIP answer: optimal ``value``, ``x`` (original columns), nodes, seconds."""

    value: float
    x: np.ndarray
    nodes: int
    seconds: float
    status: str
    dual_bound: float


def binary_formulation(model: PWLModel) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray, int]:
    """Rows ``G [x; z] >= h`` and the equality mask adding the SOS2 binaries; returns
    ``(G, h, is_eq, n_binaries)`` with `G` of shape `(m + extra) x (n + n_binaries)`."""
    n = model.n
    rows: list[dict[int, float]] = []
    rhs: list[float] = []
    eq: list[bool] = []
    nz = 0
    for lam in model.sos2:
        k = lam.size - 1
        z = [n + nz + s for s in range(k)]
        nz += k
        rows.append({j: 1.0 for j in z})
        rhs.append(1.0)
        eq.append(True)
        for i, li in enumerate(lam):
            row = {int(li): -1.0}  # z_{i-1} + z_i - lambda_i >= 0
            if i > 0:
                row[z[i - 1]] = 1.0
            if i < k:
                row[z[i]] = 1.0
            rows.append(row)
            rhs.append(0.0)
            eq.append(False)
    data, ri, ci = [], [], []
    for r, row in enumerate(rows):
        for j, v in row.items():
            ri.append(r)
            ci.append(j)
            data.append(v)
    extra = sp.csr_matrix((data, (ri, ci)), shape=(len(rows), n + nz))
    top = sp.hstack([model.A, sp.csr_matrix((model.m, nz))])
    G = sp.vstack([top, extra]).tocsr()
    h = np.concatenate([model.b, np.array(rhs)])
    is_eq = np.concatenate([model.is_eq, np.array(eq, dtype=bool)])
    return G, h, is_eq, nz


def solve_highs_mip(model: PWLModel, time_limit: float = 600.0) -> HighsMIPResult:
    """Solve the PWL-MIP with HiGHS's branch-and-cut on the binary formulation."""
    import highspy

    G, h_rhs, is_eq, nz = binary_formulation(model)
    big = PWLModel(
        c=np.concatenate([model.c, np.zeros(nz)]),
        A=G,
        b=h_rhs,
        is_eq=is_eq,
        lb=np.concatenate([model.lb, np.zeros(nz)]),
        ub=np.concatenate([model.ub, np.ones(nz)]),
        sos2=[],
        offset=model.offset,
    )
    h = new_highs()
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("mip_abs_gap", 1e-9)
    h.setOptionValue("mip_feasibility_tolerance", 1e-9)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("random_seed", 0)
    pass_lp(h, big, big.lb, big.ub)
    integrality = [highspy.HighsVarType.kContinuous] * model.n + [
        highspy.HighsVarType.kInteger
    ] * nz
    h.changeColsIntegrality(model.n + nz, np.arange(model.n + nz, dtype=np.int32), integrality)
    t0 = time.perf_counter()
    h.run()
    dt = time.perf_counter() - t0
    info = h.getInfo()
    x = np.array(h.getSolution().col_value)[: model.n]
    return HighsMIPResult(
        value=float(info.objective_function_value),
        x=x,
        nodes=int(info.mip_node_count),
        seconds=dt,
        status=h.modelStatusToString(h.getModelStatus()),
        dual_bound=float(info.mip_dual_bound),
    )


@dataclass
class PDLPRootResult:
    """OR-Tools PDLP on the root LP relaxation: objective, iterations, seconds."""

    value: float
    dual_bound: float
    iterations: int
    seconds: float


def solve_pdlp_root(model: PWLModel, eps: float = 1e-8, time_limit: float = 60.0) -> PDLPRootResult:
    """Solve the LP relaxation (SOS2 dropped) with OR-Tools' PDLP."""
    from ortools.pdlp import solvers_pb2
    from ortools.pdlp.python import pdlp

    qp = pdlp.QuadraticProgram()
    qp.objective_vector = model.c
    qp.objective_offset = model.offset
    qp.constraint_matrix = model.A.tocsc()
    qp.constraint_lower_bounds = model.b
    qp.constraint_upper_bounds = np.where(model.is_eq, model.b, np.inf)
    qp.variable_lower_bounds = model.lb
    qp.variable_upper_bounds = model.ub
    params = solvers_pb2.PrimalDualHybridGradientParams()
    params.termination_criteria.simple_optimality_criteria.eps_optimal_relative = eps
    params.termination_criteria.simple_optimality_criteria.eps_optimal_absolute = eps
    params.termination_criteria.time_sec_limit = time_limit
    params.num_threads = 1
    t0 = time.perf_counter()
    res = pdlp.primal_dual_hybrid_gradient(qp, params)
    dt = time.perf_counter() - t0
    log = res.solve_log
    conv = log.solution_stats.convergence_information
    info = conv[0] if len(conv) else None
    pobj = float(info.primal_objective) if info is not None else float("nan")
    dobj = float(info.dual_objective) if info is not None else float("nan")
    return PDLPRootResult(pobj, dobj, int(log.iteration_count), dt)

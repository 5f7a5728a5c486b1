"""Batched PDLP-style primal-dual hybrid gradient for LPs that share ``A`` (and usually ``c``).

Solves, for each column ``k`` of a batch of `B` problems (branch-and-bound nodes),
``min c_k^T x  s.t.  A x (=|>=) b,  l_k <= x <= u_k`` with finite bounds. The batch lives
in `n x B` / `m x B` matrices, so one iteration is two batched matvecs (``A X``, ``A^T Y``)
through :mod:`optiforge.solvers.pwl.spmv`. All ours (OR-Tools' PDLP is only the reference
of the benchmark); the algorithmic choices:

* Diagonal preconditioning: ``ruiz_iters`` Ruiz (inf-norm) equilibration, then one
  Pock-Chambolle (alpha = 1) rescaling; ``x = C x~``, ``y = R y~``.
* Step ``eta`` per column, adaptive (PDLP's rule): a step is accepted when
  ``eta <= ||dz||_w^2 / (2 |dy^T A dx|)``, else retried smaller; primal weight ``w``
  per column (``tau = eta / w``, ``sigma = eta w``), initialised ``||c|| / ||b||`` and updated
  at restarts by ``w <- sqrt(w * ||dy|| / ||dx||)`` (smoothing 0.5, in logs).
* Adaptive restarts every ``check_every`` iterations on a KKT score
  ``sqrt(primal_residual^2 + gap^2)``: restart to the better of the current and the averaged
  iterate on sufficient decay (0.2), necessary decay (0.8) with no progress, or after 36% of
  the iterations so far (artificial).
* SAFE dual bound: for any ``y`` with ``y_i >= 0`` on ``>=`` rows, weak duality gives
  ``L(y) = b^T y + sum_j min(l_j r_j, u_j r_j)``, ``r = c - A^T y`` (reduced costs absorbed
  by the finite bounds), a valid lower bound on the column's LP, however inexact ``y`` is.
  ``L`` is invariant under the diagonal scaling, so it is computed in the scaled space;
  ``dual_bound`` is the best ``L`` over every checked iterate (current and average).
  Branch-and-bound prunes only on it.
* Termination per column: relative primal residual and relative gap ``<= eps`` (converged),
  or ``dual_bound >= cutoff`` (the node can be pruned: no need to solve it further), or
  ``max_iter``. Finished columns leave the batch (it shrinks), so later iterations cost less.
* Not done: PDLP's feasibility polishing and presolve. The primal iterate is therefore only
  approximately feasible; the branch-and-bound uses it to branch and to seed heuristics,
  never as a solution (incumbents are evaluated exactly, :mod:`optiforge.solvers.pwl.model`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from optiforge.solvers.pwl.model import PWLModel
from optiforge.solvers.pwl.spmv import Operator, make_operator


@dataclass
class PDHGResult:
    """Per column: ``x`` `B x n`, ``y`` `B x m` (unscaled), ``dual_bound``/``primal_value`` `B`,
    ``iterations`` `B`, ``converged`` `B` (eps met), ``cut_off`` `B` (bound >= cutoff)."""

    x: np.ndarray
    y: np.ndarray
    dual_bound: np.ndarray
    primal_value: np.ndarray
    primal_residual: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
    cut_off: np.ndarray
    matvecs: int


def _scaling(A: np.ndarray, ruiz_iters: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column scales ``R, C`` (Ruiz then Pock-Chambolle) of dense `m x n` ``A``."""
    m, n = A.shape
    R, C = np.ones(m), np.ones(n)
    M = np.abs(A)
    for _ in range(ruiz_iters):
        S = M * R[:, None] * C[None, :]
        rmax, cmax = S.max(axis=1), S.max(axis=0)
        R /= np.sqrt(np.where(rmax > 0, rmax, 1.0))
        C /= np.sqrt(np.where(cmax > 0, cmax, 1.0))
    S = M * R[:, None] * C[None, :]
    rs, cs = S.sum(axis=1), S.sum(axis=0)
    R /= np.sqrt(np.where(rs > 0, rs, 1.0))
    C /= np.sqrt(np.where(cs > 0, cs, 1.0))
    return R, C


class BatchedPDHG:
    """The scaled shared data of one model; :meth:`solve` runs a batch of bound sets.

    ``spmv``: a path of :func:`optiforge.solvers.pwl.spmv.make_operator` (``"auto"``: Triton
    on CUDA, dense torch on CPU); ``device``: ``"cuda"`` when present, else ``"cpu"``.
    """

    def __init__(
        self,
        model: PWLModel,
        *,
        device: str | None = None,
        spmv: str = "auto",
        dtype: torch.dtype = torch.float64,
        ruiz_iters: int = 10,
    ) -> None:
        self.model = model
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.dtype = dtype
        Ad = model.A.toarray()
        R, C = _scaling(Ad, ruiz_iters)
        self.R, self.C = R, C
        As = (model.A.multiply(R[:, None])).multiply(C[None, :]).tocsr()
        self.op: Operator = make_operator(As, spmv, dtype, self.device)
        self.spmv_path = self.op.path
        t = self._t
        self.Rt, self.Ct = t(R), t(C)
        self.c = t(model.c * C)
        self.b = t(model.b * R)
        self.ineq = torch.tensor(~model.is_eq, device=self.device)
        self.norm_b = float(np.linalg.norm(model.b))
        # ||A~||_2 by power iteration (the step bound eta < 1 / ||A~||)
        v = torch.ones(model.n, 1, dtype=dtype, device=self.device)
        for _ in range(50):
            v = self.op.rmv(self.op.mv(v))
            v = v / v.norm()
        self.norm_A = float(self.op.mv(v).norm())

    def _t(self, a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.asarray(a), dtype=self.dtype, device=self.device)

    def _dual_value(
        self,
        Y: torch.Tensor,
        ATY: torch.Tensor,
        c: torch.Tensor,
        lo: torch.Tensor,
        hi: torch.Tensor,
    ) -> torch.Tensor:
        r = c - ATY
        return (self.b[:, None] * Y).sum(0) + torch.minimum(lo * r, hi * r).sum(0)

    def _scores(
        self,
        X: torch.Tensor,
        Y: torch.Tensor,
        AX: torch.Tensor,
        ATY: torch.Tensor,
        c: torch.Tensor,
        lo: torch.Tensor,
        hi: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        """(kkt, rel primal residual, rel gap, primal value, dual value) per column."""
        res = self.b[:, None] - AX
        res = torch.where(self.ineq[:, None], res.clamp(min=0.0), res)
        pres_s = res.norm(dim=0)
        pres = (res / self.Rt[:, None]).norm(dim=0) / (1.0 + self.norm_b)
        pobj = (c * X).sum(0)
        dobj = self._dual_value(Y, ATY, c, lo, hi)
        gap = (pobj - dobj).abs()
        rgap = gap / (1.0 + pobj.abs() + dobj.abs())
        kkt = torch.sqrt(pres_s**2 + gap**2)
        return kkt, pres, rgap, pobj, dobj

    def solve(
        self,
        lb: np.ndarray,
        ub: np.ndarray,
        *,
        c: np.ndarray | None = None,
        x0: np.ndarray | None = None,
        y0: np.ndarray | None = None,
        cutoff: np.ndarray | float | None = None,
        eps: float = 1e-8,
        max_iter: int = 20000,
        check_every: int = 32,
    ) -> PDHGResult:
        """Solve the batch. ``lb, ub`` `B x n`; ``c`` `B x n` (default: the model's);
        ``x0`` `B x n`, ``y0`` `B x m` warm starts (unscaled); ``cutoff`` `B` or scalar."""
        model = self.model
        lb = np.atleast_2d(lb)
        ub = np.atleast_2d(ub)
        B, n, m = lb.shape[0], model.n, model.m
        t = self._t
        Ct, Rt = self.Ct[:, None], self.Rt[:, None]
        LO = t(lb.T) / Ct
        HI = t(ub.T) / Ct
        Cc = self.c[:, None].expand(n, B).clone() if c is None else t(np.atleast_2d(c).T) * Ct
        X = torch.zeros(n, B, dtype=self.dtype, device=self.device) if x0 is None else t(x0.T) / Ct
        X = torch.minimum(torch.maximum(X, LO), HI)
        Y = torch.zeros(m, B, dtype=self.dtype, device=self.device) if y0 is None else t(y0.T) / Rt
        Y = torch.where(self.ineq[:, None], Y.clamp(min=0.0), Y)
        cut = (
            torch.full((B,), float("inf"), dtype=self.dtype, device=self.device)
            if cutoff is None
            else t(np.broadcast_to(np.asarray(cutoff, dtype=float), (B,)).copy())
        )
        nb = max(float(self.b.norm()), 1e-12)
        omega = torch.clamp(Cc.norm(dim=0) / nb, 1e-4, 1e4)
        omega = torch.where(Cc.norm(dim=0) > 0, omega, torch.ones_like(omega))
        eta = torch.full((B,), 0.9 / self.norm_A, dtype=self.dtype, device=self.device)

        out_x = np.zeros((B, n))
        out_y = np.zeros((B, m))
        out_db = np.full(B, -np.inf)
        out_pv = np.full(B, np.nan)
        out_pr = np.full(B, np.nan)
        out_it = np.zeros(B, dtype=np.int64)
        out_conv = np.zeros(B, dtype=bool)
        out_cut = np.zeros(B, dtype=bool)
        matvecs = 0

        idx = torch.arange(B, device=self.device)
        AX = self.op.mv(X)
        ATY = self.op.rmv(Y)
        matvecs += 2
        best_db = torch.full((B,), -float("inf"), dtype=self.dtype, device=self.device)
        Xr, Yr = X.clone(), Y.clone()  # last restart point
        kkt_r = torch.full((B,), float("inf"), dtype=self.dtype, device=self.device)
        kkt_prev = kkt_r.clone()
        Xs, Ys = torch.zeros_like(X), torch.zeros_like(Y)
        AXs, ATYs = torch.zeros_like(AX), torch.zeros_like(ATY)
        wsum = torch.zeros(B, dtype=self.dtype, device=self.device)
        it_since = torch.zeros(B, dtype=self.dtype, device=self.device)
        k = 0
        while idx.numel() > 0:
            # one PDHG step with PDLP's adaptive step size: a column whose step is rejected
            # stays put this iteration and retries with the smaller step on the next one
            tau, sigma = eta / omega, eta * omega
            Xn = torch.minimum(torch.maximum(X - tau * (Cc - ATY), LO), HI)
            AXn = self.op.mv(Xn)
            Yn = Y + sigma * (self.b[:, None] - 2.0 * AXn + AX)
            Yn = torch.where(self.ineq[:, None], Yn.clamp(min=0.0), Yn)
            ATYn = self.op.rmv(Yn)
            matvecs += 2
            dx, dy = Xn - X, Yn - Y
            inter = (dy * (AXn - AX)).sum(0).abs()
            dz2 = omega * (dx * dx).sum(0) + (dy * dy).sum(0) / omega
            limit = torch.where(inter > 0, dz2 / (2.0 * inter), torch.full_like(eta, np.inf))
            ok = eta <= limit
            eta = torch.minimum((1.0 - (k + 2) ** -0.3) * limit, (1.0 + (k + 2) ** -0.6) * eta)
            okm = ok[None, :]
            X = torch.where(okm, Xn, X)
            Y = torch.where(okm, Yn, Y)
            AX = torch.where(okm, AXn, AX)
            ATY = torch.where(okm, ATYn, ATY)
            w = ok.to(self.dtype)
            Xs, Ys, AXs, ATYs = Xs + w * X, Ys + w * Y, AXs + w * AX, ATYs + w * ATY
            wsum = wsum + w
            k += 1
            it_since += 1.0
            if k % check_every and k < max_iter:
                continue
            # restart / termination check on the current and the averaged iterate
            ws = wsum.clamp(min=1.0)
            Xa, Ya = Xs / ws, Ys / ws
            AXa, ATYa = AXs / ws, ATYs / ws
            kc, prc, rgc, pvc, dvc = self._scores(X, Y, AX, ATY, Cc, LO, HI)
            ka, pra, rga, pva, dva = self._scores(Xa, Ya, AXa, ATYa, Cc, LO, HI)
            best_db = torch.maximum(best_db, torch.maximum(dvc, dva))
            use_avg = (ka < kc) & (wsum > 0)
            kcand = torch.where(use_avg, ka, kc)
            restart = (
                (kcand <= 0.2 * kkt_r)
                | ((kcand <= 0.8 * kkt_r) & (kcand > kkt_prev))
                | (it_since >= 0.36 * k)
            )
            kkt_prev = kcand
            ua = use_avg[None, :]
            Xc = torch.where(ua, Xa, X)
            Yc = torch.where(ua, Ya, Y)
            conv = torch.where(use_avg, (pra <= eps) & (rga <= eps), (prc <= eps) & (rgc <= eps))
            cutd = best_db >= cut
            done = conv | cutd | torch.tensor(k >= max_iter, device=self.device)
            if bool(restart.any()):
                dxn = (Xc - Xr).norm(dim=0)
                dyn = (Yc - Yr).norm(dim=0)
                upd = restart & (dxn > 1e-10) & (dyn > 1e-10)
                new_w = torch.exp(0.5 * torch.log(dyn.clamp(min=1e-30) / dxn.clamp(min=1e-30))
                                  + 0.5 * torch.log(omega))  # fmt: skip
                omega = torch.where(upd, new_w.clamp(1e-5, 1e5), omega)
                rm = restart[None, :]
                X = torch.where(rm, Xc, X)
                Y = torch.where(rm, Yc, Y)
                AX = torch.where(rm, torch.where(ua, AXa, AX), AX)
                ATY = torch.where(rm, torch.where(ua, ATYa, ATY), ATY)
                Xr = torch.where(rm, X, Xr)
                Yr = torch.where(rm, Y, Yr)
                kkt_r = torch.where(restart, kcand, kkt_r)
                Xs = torch.where(rm, torch.zeros_like(Xs), Xs)
                Ys = torch.where(rm, torch.zeros_like(Ys), Ys)
                AXs = torch.where(rm, torch.zeros_like(AXs), AXs)
                ATYs = torch.where(rm, torch.zeros_like(ATYs), ATYs)
                wsum = torch.where(restart, torch.zeros_like(wsum), wsum)
                it_since = torch.where(restart, torch.zeros_like(it_since), it_since)
            if bool(done.any()):
                d = done.nonzero().flatten()
                cols = idx[d].cpu().numpy()
                xo = (Xc[:, d] * Ct).T.cpu().numpy()
                yo = (Yc[:, d] * Rt).T.cpu().numpy()
                out_x[cols] = xo
                out_y[cols] = yo
                out_db[cols] = best_db[d].cpu().numpy()
                out_pv[cols] = torch.where(use_avg, pva, pvc)[d].cpu().numpy() + model.offset
                out_pr[cols] = torch.where(use_avg, pra, prc)[d].cpu().numpy()
                out_it[cols] = k
                out_conv[cols] = conv[d].cpu().numpy()
                out_cut[cols] = cutd[d].cpu().numpy()
                keep = (~done).nonzero().flatten()
                idx = idx[keep]
                X, Y, AX, ATY = X[:, keep], Y[:, keep], AX[:, keep], ATY[:, keep]
                Xs, Ys, AXs, ATYs = Xs[:, keep], Ys[:, keep], AXs[:, keep], ATYs[:, keep]
                Xr, Yr, Cc, LO, HI = Xr[:, keep], Yr[:, keep], Cc[:, keep], LO[:, keep], HI[:, keep]
                wsum, it_since, eta, omega = wsum[keep], it_since[keep], eta[keep], omega[keep]
                kkt_r, kkt_prev, best_db, cut = (
                    kkt_r[keep],
                    kkt_prev[keep],
                    best_db[keep],
                    cut[keep],
                )
        out_db = out_db + model.offset
        return PDHGResult(out_x, out_y, out_db, out_pv, out_pr, out_it, out_conv, out_cut, matvecs)

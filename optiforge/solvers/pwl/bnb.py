"""SOS2 branch-and-bound whose node LPs are solved in batches by :class:`BatchedPDHG`.

What is ours and what is HiGHS's: the search (SOS2 branching, best-bound batch selection,
pruning on the PDHG safe dual bounds, the repair heuristic's rounding, the batched
feasibility pump) is ours; HiGHS's simplex does the EXACT LPs: every leaf (each SOS2 set
restricted to one adjacent pair) and every incumbent candidate is solved with
:func:`optiforge.solvers.pwl.model.solve_fixed_lp`, so an incumbent's value is exact, not a
first-order estimate, and the final answer is certified by re-solving its fixed-SOS2 LP.

Choices (the issue leaves them open):

* A node holds, per SOS2 set ``s``, the allowed position range ``[lo_s, hi_s]`` of its
  lambdas (the others are fixed to 0). A node is a LEAF when every range has at most two
  positions; a leaf's LP is the MIP restricted to it, solved exactly (no PDHG).
* Branching: the set whose LP lambdas have the most mass outside their best adjacent pair;
  split position ``r`` = the lambda-weighted mean position rounded and clamped to
  ``(lo, hi)``; children ``[lo, r]`` and ``[r, hi]`` (both shrink, so the tree is finite).
  If no set is violated (an inexact but SOS2-feasible LP point above the cutoff), the set
  with the widest range is split around its mean.
* Node selection: the ``batch_size`` open nodes of smallest bound form one PDHG batch
  (children warm-start from the parent's iterates, cutoff = incumbent - tolerance, so a
  column stops as soon as its safe bound proves it prunable).
* Pruning only on the safe dual bound (or the parent's, whichever is larger), with the
  tolerance ``max(abs_gap, rel_gap |incumbent|)``; the search ends when no open node's
  bound is below the incumbent minus the tolerance, i.e. a certified relative gap
  ``<= rel_gap``.
* Repair heuristic: round each set to the adjacent pair around its lambda-weighted mean
  position (and, as a second try, its heaviest adjacent pair), then solve the LP in the
  remaining variables exactly. Run at the root and on every ``repair_every``-th batch.
* Feasibility pump (batched): ``pump_starts`` roundings of the root point (the mean-position
  one and random ones drawn with probability proportional to pair mass) are pumped
  together: one PDHG batch minimises, per column, the lambda mass outside that column's
  pairs (its own objective), the result is re-rounded, ``pump_rounds`` times (``pump_iters`` PDHG iterations
  each, warm-started); columns whose distance reaches ~0 are evaluated exactly. A stalled
  column's worst set is re-drawn.

Not done: infeasibility detection in the PDHG (a node whose LP is infeasible is closed
only once its growing dual bound passes the incumbent, or at its leaves by the simplex; a
model with no feasible point therefore ends, slowly, with status ``"no incumbent"``), and
the pseudo-cost / strong branching and cuts that let HiGHS close these instances in ~10x
fewer nodes.
"""

from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from optiforge.solvers.pwl.model import LPResult, PWLModel, pair_bounds, solve_lp_exact
from optiforge.solvers.pwl.pdhg import BatchedPDHG


@dataclass
class BnBResult:
    """The search's answer and statistics. ``value`` is exact (HiGHS LP of ``pairs``)."""

    value: float
    x: np.ndarray
    pairs: np.ndarray
    lower_bound: float
    gap: float
    nodes: int
    leaves: int
    batches: int
    seconds: float
    lp_seconds: float
    pdhg_iterations: int
    incumbent_source: str
    certified_value: float
    status: str
    history: list[tuple[float, float, float]] = field(default_factory=list)
    """(seconds, incumbent, lower bound) after each batch."""

    @property
    def nodes_per_second(self) -> float:
        return self.nodes / max(self.lp_seconds, 1e-12)


@dataclass(order=True)
class _Node:
    bound: float
    tie: int
    lo: np.ndarray = field(compare=False)
    hi: np.ndarray = field(compare=False)
    x: np.ndarray | None = field(compare=False, default=None)
    y: np.ndarray | None = field(compare=False, default=None)


class SOS2BranchAndBound:
    """Batched best-bound SOS2 branch-and-bound for a :class:`PWLModel`."""

    def __init__(
        self,
        model: PWLModel,
        *,
        batch_size: int = 16,
        rel_gap: float = 1e-7,
        abs_gap: float = 1e-9,
        eps: float = 1e-8,
        max_iter: int = 20000,
        device: str | None = None,
        spmv: str = "auto",
        pump_starts: int = 8,
        pump_rounds: int = 10,
        pump_iters: int = 300,
        repair_every: int = 1,
        time_limit: float = 600.0,
        max_nodes: int = 200000,
        seed: int = 0,
    ) -> None:
        if not model.sos2:
            raise ValueError("the model has no SOS2 set: solve its LP directly")
        self.model = model
        self.batch_size = batch_size
        self.rel_gap, self.abs_gap = rel_gap, abs_gap
        self.eps, self.max_iter = eps, max_iter
        self.pump_starts, self.pump_rounds, self.pump_iters = pump_starts, pump_rounds, pump_iters
        self.repair_every = repair_every
        self.time_limit, self.max_nodes = time_limit, max_nodes
        self.rng = np.random.default_rng(seed)
        self.lp = BatchedPDHG(model, device=device, spmv=spmv)
        self.sizes = np.array([s.size for s in model.sos2])
        self.inc_value = float("inf")
        self.inc_x = np.full(model.n, np.nan)
        self.inc_pairs = np.zeros(len(model.sos2), dtype=np.int64)
        self.inc_source = "none"
        self._tie = itertools.count()

    # ---- bounds and incumbents -------------------------------------------------------
    def node_bounds(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Variable bounds (`n` each) of a node with position ranges ``lo, hi`` (`S`)."""
        lb, ub = self.model.lb.copy(), self.model.ub.copy()
        for s, lam in enumerate(self.model.sos2):
            pos = np.arange(lam.size)
            out = (pos < lo[s]) | (pos > hi[s])
            lb[lam[out]] = 0.0
            ub[lam[out]] = 0.0
        return lb, ub

    def tolerance(self) -> float:
        if not np.isfinite(self.inc_value):
            return self.abs_gap
        return max(self.abs_gap, self.rel_gap * abs(self.inc_value))

    def cutoff(self) -> float:
        return self.inc_value - self.tolerance()

    def try_pairs(self, pairs: np.ndarray, source: str) -> LPResult:
        """Exact LP with every set fixed to ``pairs`` (positions); update the incumbent."""
        lb, ub = pair_bounds(self.model, pairs, self.model.lb, self.model.ub)
        res = solve_lp_exact(self.model, lb, ub)
        if res.feasible and res.value < self.inc_value - 1e-12 * max(1.0, abs(res.value)):
            self.inc_value, self.inc_x, self.inc_pairs = res.value, res.x, pairs.copy()
            self.inc_source = source
        return res

    def lambdas(self, x: np.ndarray) -> list[np.ndarray]:
        return [np.clip(x[lam], 0.0, None) for lam in self.model.sos2]

    def round_mean(self, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Pair around each set's lambda-weighted mean position, inside ``[lo, hi]``."""
        pairs = np.zeros(len(self.model.sos2), dtype=np.int64)
        for s, v in enumerate(self.lambdas(x)):
            tot = v.sum()
            mu = (np.arange(v.size) * v).sum() / tot if tot > 1e-12 else lo[s]
            pairs[s] = int(np.clip(np.floor(mu), lo[s], max(lo[s], hi[s] - 1)))
            pairs[s] = min(pairs[s], v.size - 2)
        return pairs

    def round_mass(self, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Each set's heaviest adjacent pair inside ``[lo, hi]``."""
        pairs = np.zeros(len(self.model.sos2), dtype=np.int64)
        for s, v in enumerate(self.lambdas(x)):
            a, b = int(lo[s]), int(min(max(lo[s], hi[s] - 1), v.size - 2))
            mass = v[a : b + 1] + v[a + 1 : b + 2]
            pairs[s] = a + int(np.argmax(mass))
        return pairs

    def repair(self, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        """SOS2 repair: round to adjacent pairs, re-solve the LP in the rest exactly."""
        first = self.round_mean(x, lo, hi)
        if not self.try_pairs(first, "repair").feasible:
            second = self.round_mass(x, lo, hi)
            if not np.array_equal(first, second):
                self.try_pairs(second, "repair")

    def violation(self, x: np.ndarray) -> np.ndarray:
        """Per set: lambda mass outside the best adjacent pair (`S`)."""
        out = np.zeros(len(self.model.sos2))
        for s, v in enumerate(self.lambdas(x)):
            best = (v[:-1] + v[1:]).max()
            out[s] = v.sum() - best
        return out

    # ---- feasibility pump -----------------------------------------------------------
    def pump(self, x_root: np.ndarray) -> int:
        """Batched feasibility pump from the root point; returns the number of exact solves."""
        S = len(self.model.sos2)
        K = self.pump_starts
        lo = np.zeros(S, dtype=np.int64)
        hi = self.sizes - 1
        starts = [self.round_mean(x_root, lo, hi)]
        for _ in range(K - 1):
            p = np.zeros(S, dtype=np.int64)
            for s, v in enumerate(self.lambdas(x_root)):
                mass = v[:-1] + v[1:] + 1e-3
                p[s] = self.rng.choice(mass.size, p=mass / mass.sum())
            starts.append(p)
        pairs = np.array(starts)
        lbK = np.tile(self.model.lb, (K, 1))
        ubK = np.tile(self.model.ub, (K, 1))
        tried: set[bytes] = set()
        solves = 0
        x0, y0 = None, None
        for _ in range(self.pump_rounds):
            c = np.zeros((K, self.model.n))
            for k in range(K):
                for s, lam in enumerate(self.model.sos2):
                    outside = np.ones(lam.size, dtype=bool)
                    outside[pairs[k, s] : pairs[k, s] + 2] = False
                    c[k, lam[outside]] = 1.0
            res = self.lp.solve(lbK, ubK, c=c, x0=x0, y0=y0, eps=1e-6, max_iter=self.pump_iters)
            x0, y0 = res.x, res.y
            if np.all(res.primal_value - self.model.offset <= 1e-5) and all(
                pairs[k].tobytes() in tried for k in range(K)
            ):
                break
            for k in range(K):
                key = pairs[k].tobytes()
                if res.primal_value[k] - self.model.offset <= 1e-5 and key not in tried:
                    tried.add(key)
                    self.try_pairs(pairs[k], "pump")
                    solves += 1
                new = self.round_mean(res.x[k], lo, hi)
                if np.array_equal(new, pairs[k]):  # stalled: re-draw the worst set
                    s = int(np.argmax(self.violation(res.x[k])))
                    new[s] = self.rng.integers(0, self.sizes[s] - 1)
                pairs[k] = new
        return solves

    # ---- the search -----------------------------------------------------------------
    def branch(self, node: _Node, x: np.ndarray, y: np.ndarray, bound: float) -> list[_Node]:
        viol = self.violation(x)
        width = node.hi - node.lo
        cand = np.where(width >= 2, viol, -1.0)
        s = int(np.argmax(cand)) if cand.max() > 1e-9 else int(np.argmax(width))
        v = self.lambdas(x)[s]
        tot = v.sum()
        mu = (np.arange(v.size) * v).sum() / tot if tot > 1e-12 else (node.lo[s] + node.hi[s]) / 2
        r = int(np.clip(round(mu), node.lo[s] + 1, node.hi[s] - 1))
        left_hi, right_lo = node.hi.copy(), node.lo.copy()
        left_hi[s], right_lo[s] = r, r
        return [
            _Node(bound, next(self._tie), node.lo.copy(), left_hi, x, y),
            _Node(bound, next(self._tie), right_lo, node.hi.copy(), x, y),
        ]

    def solve(self) -> BnBResult:
        t0 = time.perf_counter()
        S = len(self.model.sos2)
        root = _Node(-np.inf, next(self._tie), np.zeros(S, dtype=np.int64), self.sizes - 1)
        heap: list[_Node] = [root]
        closed_lb = np.inf  # min bound over closed (pruned / leaf) nodes
        nodes = leaves = batches = iters = 0
        lp_time = 0.0
        history: list[tuple[float, float, float]] = []
        status = "optimal"
        first = True
        while heap:
            if time.perf_counter() - t0 > self.time_limit or nodes >= self.max_nodes:
                status = "limit"
                break
            cut = self.cutoff()
            batch: list[_Node] = []
            while heap and len(batch) < self.batch_size:
                nd = heapq.heappop(heap)
                if nd.bound >= cut:
                    closed_lb = min(closed_lb, nd.bound)
                    continue
                if np.all(nd.hi - nd.lo <= 1):  # leaf: exact LP of the restricted MIP
                    leaves += 1
                    pairs = np.minimum(nd.lo, self.sizes - 2)
                    leaf = self.try_pairs(pairs, "leaf")
                    closed_lb = min(closed_lb, leaf.value)
                    cut = self.cutoff()
                    continue
                batch.append(nd)
            if not batch:
                continue
            lbs, ubs = zip(*(self.node_bounds(nd.lo, nd.hi) for nd in batch), strict=True)
            x0 = np.array([nd.x if nd.x is not None else np.zeros(self.model.n) for nd in batch])
            y0 = np.array([nd.y if nd.y is not None else np.zeros(self.model.m) for nd in batch])
            ts = time.perf_counter()
            res = self.lp.solve(
                np.array(lbs), np.array(ubs), x0=x0, y0=y0, cutoff=cut,
                eps=self.eps, max_iter=self.max_iter,
            )  # fmt: skip
            lp_time += time.perf_counter() - ts
            nodes += len(batch)
            batches += 1
            iters += int(res.iterations.max())
            if first:
                first = False
                self.repair(res.x[0], batch[0].lo, batch[0].hi)
                if self.pump_starts > 0:
                    self.pump(res.x[0])
            elif self.repair_every and batches % self.repair_every == 0:
                k = int(np.argmin(res.dual_bound))
                self.repair(res.x[k], batch[k].lo, batch[k].hi)
            cut = self.cutoff()
            for k, nd in enumerate(batch):
                bound = max(nd.bound, float(res.dual_bound[k]))
                if bound >= cut:
                    closed_lb = min(closed_lb, bound)
                    continue
                for child in self.branch(nd, res.x[k], res.y[k], bound):
                    heapq.heappush(heap, child)
            open_lb = min((nd.bound for nd in heap), default=np.inf)
            history.append((time.perf_counter() - t0, self.inc_value, min(open_lb, closed_lb)))
        open_lb = min((nd.bound for nd in heap), default=np.inf)
        lower = min(open_lb, closed_lb, self.inc_value)
        gap = (self.inc_value - lower) / max(abs(self.inc_value), 1e-12)
        cert = float("nan")
        if np.isfinite(self.inc_value):
            lb, ub = pair_bounds(self.model, self.inc_pairs, self.model.lb, self.model.ub)
            cert = solve_lp_exact(self.model, lb, ub).value
        else:
            status = "no incumbent" if status == "optimal" else status
        return BnBResult(
            value=self.inc_value,
            x=self.inc_x,
            pairs=self.inc_pairs,
            lower_bound=lower,
            gap=float(gap),
            nodes=nodes,
            leaves=leaves,
            batches=batches,
            seconds=time.perf_counter() - t0,
            lp_seconds=lp_time,
            pdhg_iterations=iters,
            incumbent_source=self.inc_source,
            certified_value=cert,
            status=status,
            history=history,
        )


def solve(model: PWLModel, **kwargs: object) -> BnBResult:
    """Solve ``model`` with :class:`SOS2BranchAndBound` (keyword arguments: its options)."""
    return SOS2BranchAndBound(model, **kwargs).solve()  # type: ignore[arg-type]

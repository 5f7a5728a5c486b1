"""B3-PWL: batched branch-and-bound for piecewise-linear MIPs with SOS2 constraints.

``model`` (PWL-MIP in the convex-combination formulation, exact HiGHS LP checks),
``pdhg`` (batched first-order LP solver, PDLP-style, with safe dual bounds), ``spmv``
(block-tiled batched sparse matrix-vector product: Triton kernel + torch fallback),
``bnb`` (SOS2 branch-and-bound, repair heuristic, batched feasibility pump),
``instances`` (seeded benchmark families), ``reference`` (HiGHS MIP, OR-Tools PDLP).
"""

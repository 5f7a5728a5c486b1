"""iMuon (intrinsic Muon): LMO steps over the intrinsic norm ball a Riemannian metric
lifts from a unitarily invariant norm, on fixed-rank, SPD, Stiefel and Grassmann manifolds
(``optim.IMuon``), the naive baseline (``optim.FactorMuon``: Muon on the factors of
``W = L R^T``), the manifolds geoopt lacks (``manifolds.FixedRank``, ``manifolds.Grassmann``)
and the catalogue adapters (``method.IMUON``, ``method.MUON_FACTORS``)."""

from optiforge.solvers.train.imuon.lmo import Block, dual_norm, intrinsic_norm, lmo, msign
from optiforge.solvers.train.imuon.manifolds import FixedRank, Grassmann, principal_angles
from optiforge.solvers.train.imuon.optim import FactorMuon, IMuon

__all__ = [
    "Block",
    "FactorMuon",
    "FixedRank",
    "Grassmann",
    "IMuon",
    "dual_norm",
    "intrinsic_norm",
    "lmo",
    "msign",
    "principal_angles",
]

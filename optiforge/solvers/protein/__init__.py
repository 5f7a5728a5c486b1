"""Protein sequence back end: amino-acid property tables, physicochemical proxies, and the
runner that scores a strategy of expertise blocks over a pool of variants.

Everything here is public knowledge a strategy may use (shipped into the sandbox as files):
``properties`` (hydrophobicity scales, charge, helix/sheet propensity, volume, BLOSUM62),
``proxies`` (instability index, GRAVY, pI via Biopython) and ``strategy`` (run the blocks,
normalize and combine their outputs, rank). Hidden fitness landscapes live in the
``protein`` suite, never here.
"""

from optiforge.solvers.protein.properties import AA, SCALES, blosum62, hydrophobic
from optiforge.solvers.protein.strategy import Variant, score_pool

__all__ = ["AA", "SCALES", "Variant", "blosum62", "hydrophobic", "score_pool"]

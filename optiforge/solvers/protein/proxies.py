"""Cheap physicochemical proxies of a sequence (Biopython's ``ProtParam``): the instability
index (Guruprasad et al. 1990; above 40 predicts an unstable protein), GRAVY (mean
Kyte-Doolittle hydropathy) and the isoelectric point. Reported next to a landscape's
fitness, never as fitness: they are what a chemist computes without an assay."""

from __future__ import annotations

from typing import Any


def proxies(sequence: str) -> dict[str, float]:
    """``{"instability_index", "gravy", "pI"}`` of ``sequence`` (one-letter codes)."""
    from Bio.SeqUtils.ProtParam import ProteinAnalysis

    pa: Any = ProteinAnalysis(sequence)
    return {
        "instability_index": float(pa.instability_index()),
        "gravy": float(pa.gravy()),
        "pI": float(pa.isoelectric_point()),
    }

"""Amino-acid property tables (textbook values; one-letter codes).

``SCALES`` maps a scale name to a per-residue table so a block can name the scale it uses
(``SCALE = "kd"``) and an edit can swap it for another:

- ``kd``: Kyte & Doolittle (1982) hydropathy;
- ``eisenberg``: Eisenberg consensus hydrophobicity (1984, normalized);
- ``ww``: Wimley & White octanol scale (1996; sign flipped so hydrophobic is positive);
- ``helix``: Chou & Fasman (1978) alpha-helix propensity;
- ``sheet``: Chou & Fasman beta-sheet propensity;
- ``charge``: side-chain charge at pH 7 (His 0.1);
- ``volume``: side-chain volume in cubic angstroms (Zamyatnin 1972).
"""

from __future__ import annotations

from functools import cache

AA = "ACDEFGHIKLMNPQRSTVWY"

KD = dict(zip(AA, [1.8, 2.5, -3.5, -3.5, 2.8, -0.4, -3.2, 4.5, -3.9, 3.8, 1.9, -3.5, -1.6,
                   -3.5, -4.5, -0.8, -0.7, 4.2, -0.9, -1.3], strict=True))  # fmt: skip
EISENBERG = dict(zip(AA, [0.62, 0.29, -0.90, -0.74, 1.19, 0.48, -0.40, 1.38, -1.50, 1.06,
                          0.64, -0.78, 0.12, -0.85, -2.53, -0.18, -0.05, 1.08, 0.81, 0.26],
                     strict=True))  # fmt: skip
WW = dict(zip(AA, [-0.50, 0.02, -3.64, -3.63, 1.71, -1.15, -2.33, 1.12, -2.80, 1.25, 0.67,
                   -0.85, -0.14, -0.77, -1.81, -0.46, -0.25, 0.46, 2.09, 0.71], strict=True))  # fmt: skip
HELIX = dict(zip(AA, [1.42, 0.70, 1.01, 1.51, 1.13, 0.57, 1.00, 1.08, 1.16, 1.21, 1.45, 0.67,
                      0.57, 1.11, 0.98, 0.77, 0.83, 1.06, 1.08, 0.69], strict=True))  # fmt: skip
SHEET = dict(zip(AA, [0.83, 1.19, 0.54, 0.37, 1.38, 0.75, 0.87, 1.60, 0.74, 1.30, 1.05, 0.89,
                      0.55, 1.10, 0.93, 0.75, 1.19, 1.70, 1.37, 1.47], strict=True))  # fmt: skip
CHARGE = {a: 0.0 for a in AA} | {"D": -1.0, "E": -1.0, "K": 1.0, "R": 1.0, "H": 0.1}
VOLUME = dict(zip(AA, [88.6, 108.5, 111.1, 138.4, 189.9, 60.1, 153.2, 166.7, 168.6, 166.7,
                       162.9, 114.1, 112.7, 143.8, 173.4, 89.0, 116.1, 140.0, 227.8, 193.6],
                  strict=True))  # fmt: skip

SCALES: dict[str, dict[str, float]] = {
    "kd": KD, "eisenberg": EISENBERG, "ww": WW, "helix": HELIX, "sheet": SHEET,
    "charge": CHARGE, "volume": VOLUME,
}  # fmt: skip
"""Per-residue tables by name."""

HYDROPHOBICITY_SCALES = ("kd", "eisenberg", "ww")
"""The interchangeable hydrophobicity scales (an edit may swap one for another)."""


def hydrophobic(aa: str, scale: str = "kd") -> float:
    """Hydrophobicity of residue ``aa`` on ``scale``, divided by the scale's range."""
    table = SCALES[scale]
    return table[aa] / (max(table.values()) - min(table.values()))


@cache
def blosum62() -> dict[tuple[str, str], float]:
    """BLOSUM62 substitution scores ``{(a, b): score}`` (Biopython's table)."""
    from Bio.Align import substitution_matrices

    m = substitution_matrices.load("BLOSUM62")
    return {(a, b): float(m[a][b]) for a in AA for b in AA}

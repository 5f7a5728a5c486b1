"""The initial expert heuristics (the root strategy) and alternative rules an edit may
swap in. Each block is source text of ``score(variant, ctx) -> float`` (see
``optiforge.solvers.protein.strategy``) whose docstring states its mechanism and whose
upper-case module constants are the knobs a localized edit turns."""

from __future__ import annotations

from typing import Any

HYDROPHOBIC_CORE = '''
SCALE = "kd"
THRESHOLD = 0.5

def score(variant, ctx):
    """Buried hydrophobic residues stabilize the fold: reward substitutions that raise
    hydrophobicity at sites predicted buried (burial above THRESHOLD)."""
    total = 0.0
    for pos, wt, new in variant["mutations"]:
        b = ctx["burial"][pos]
        if b > THRESHOLD:
            total += b * (props.hydrophobic(new, SCALE) - props.hydrophobic(wt, SCALE))
    return total
'''

HELIX_PROPENSITY = '''
PROLINE_PENALTY = 1.0

def score(variant, ctx):
    """Residues with high helix propensity stabilize helices; proline breaks them."""
    total = 0.0
    for pos, wt, new in variant["mutations"]:
        if ctx["ss"][pos] == "H":
            h = props.SCALES["helix"]
            total += h[new] - h[wt] - (PROLINE_PENALTY if new == "P" else 0.0)
    return total
'''

CONSERVATIVE = '''
def score(variant, ctx):
    """Substitutions similar to the wild-type residue (high BLOSUM62) are tolerated;
    radical ones usually hurt."""
    m = props.blosum62()
    return sum(m[(wt, new)] for _, wt, new in variant["mutations"])
'''

SURFACE_POLARITY = '''
SCALE = "kd"
THRESHOLD = 0.5

def score(variant, ctx):
    """Exposed hydrophobic residues cause aggregation: reward substitutions that make
    sites predicted exposed (burial below THRESHOLD) more polar."""
    total = 0.0
    for pos, wt, new in variant["mutations"]:
        b = ctx["burial"][pos]
        if b < THRESHOLD:
            total -= (1 - b) * (props.hydrophobic(new, SCALE) - props.hydrophobic(wt, SCALE))
    return total
'''

NET_CHARGE = '''
def score(variant, ctx):
    """A larger net charge keeps molecules apart (solubility): reward substitutions that
    move the net charge away from zero."""
    q = props.SCALES["charge"]
    wt = sum(q[a] for a in ctx["wt"])
    new = sum(q[a] for a in variant["sequence"])
    return abs(new) - abs(wt)
'''

INITIAL: dict[str, str] = {
    "hydrophobic_core": HYDROPHOBIC_CORE,
    "helix_propensity": HELIX_PROPENSITY,
    "conservative": CONSERVATIVE,
    "surface_polarity": SURFACE_POLARITY,
    "net_charge": NET_CHARGE,
}
"""The initial expert heuristics: five mechanisms at equal weight."""

PACKING = '''
MARGIN = 30.0

def score(variant, ctx):
    """Much larger side chains do not fit at buried sites (over-packing): penalize volume
    increases above MARGIN cubic angstroms where burial is high."""
    v = props.SCALES["volume"]
    total = 0.0
    for pos, wt, new in variant["mutations"]:
        if ctx["burial"][pos] > 0.6:
            total -= max(0.0, v[new] - v[wt] - MARGIN) / MARGIN
    return total
'''

AGGREGATION = '''
WINDOW = 5
MIN_HYDROPHOBIC = 4

def score(variant, ctx):
    """Stretches of hydrophobic residues nucleate aggregation: penalize windows of WINDOW
    residues holding at least MIN_HYDROPHOBIC hydrophobic ones (relative to wild type)."""
    def sticky(s):
        w = int(WINDOW)
        return sum(sum(a in "AILMFVW" for a in s[i:i + w]) >= MIN_HYDROPHOBIC
                   for i in range(len(s) - w + 1))
    return -(sticky(variant["sequence"]) - sticky(ctx["wt"]))
'''

LOOP_FLEXIBILITY = '''
def score(variant, ctx):
    """Glycine and proline suit loops (turns): reward them at coil sites."""
    total = 0.0
    for pos, wt, new in variant["mutations"]:
        if ctx["ss"][pos] == "C":
            total += (new in "GP") - (wt in "GP")
    return total
'''

MUTATION_LOAD = '''
def score(variant, ctx):
    """Every substitution risks the fold: fewer mutations are safer."""
    return -len(variant["mutations"])
'''

ALTERNATIVES: dict[str, str] = {
    "packing": PACKING,
    "aggregation": AGGREGATION,
    "loop_flexibility": LOOP_FLEXIBILITY,
    "mutation_load": MUTATION_LOAD,
}
"""Rules an edit may swap into a strategy (alternative physicochemical mechanisms)."""


def initial_strategy() -> dict[str, Any]:
    """The root strategy: the initial expert heuristics, every weight 1."""
    return {"blocks": dict(INITIAL), "weights": {k: 1.0 for k in INITIAL}}

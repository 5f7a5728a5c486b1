"""Molecule back end: AMORTIX (amortized scaffold decoration by a graph transformer trained
with group-normalized RL) and its instance-optimization baseline (a scaffold-preserving graph
genetic algorithm), over RDKit oracles.

``molecules`` (shipped scaffolds with attachment points and their train/held-out split, the
fragment vocabulary, decoding a decoration with RDKit, the oracles with call counting),
``amortix`` (the policy, GRPO / REINFORCE training, one-pass decoding), ``graph_ga`` (the GA
under a per-molecule oracle budget).
"""

from optiforge.solvers.chem.amortix import GraphTransformerPolicy, TrainHistory, decode, train
from optiforge.solvers.chem.graph_ga import GAResult, graph_ga
from optiforge.solvers.chem.molecules import (
    FRAGMENTS,
    OBJECTIVES,
    Oracle,
    Scaffold,
    assemble,
    load_scaffolds,
    scaffold,
)

__all__ = [
    "FRAGMENTS",
    "OBJECTIVES",
    "GAResult",
    "GraphTransformerPolicy",
    "Oracle",
    "Scaffold",
    "TrainHistory",
    "assemble",
    "decode",
    "graph_ga",
    "load_scaffolds",
    "scaffold",
    "train",
]

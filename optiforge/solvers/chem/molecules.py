"""Scaffolds, the fragment vocabulary, decoding a decoration into a molecule, and the oracles.

The design space of AMORTIX and of its genetic-algorithm baseline is the same: a *scaffold*
(a SMILES with numbered attachment points ``[*:1]``, ``[*:2]``, ...) and one fragment per
attachment point from ``FRAGMENTS``. A decoration is a tuple of fragment indices, one per
attachment point in the order of the map numbers.

What is RDKit's and what is ours: RDKit parses SMILES, edits the molecular graph
(``RWMol``), sanitizes (valence and aromaticity checks decide validity), computes QED,
Crippen logP, Morgan fingerprints (``rdFingerprintGenerator``) and Tanimoto similarity, and
the synthetic-accessibility score (``SA_Score/sascorer`` from RDKit's Contrib folder, used by
penalized logP). Ours: the shipped scaffolds and their train/held-out split
(``scaffolds.json``), the vocabulary, the attachment rule, the objectives' definitions
and their combination, and the oracle-call accounting.

Choices the issue leaves open:

- Attachment: the dummy atom ``[*:k]`` is removed and its neighbour is bonded to the
  fragment's attachment atom with the *fragment's* bond order; ``"*=O"`` and ``"*=C"``
  (double-bonded) therefore fail sanitization on aromatic atoms, ring nitrogens or a
  carbonyl carbon, so validity depends on where a fragment goes and a policy must learn it.
  ``"H"`` removes the attachment point (implicit hydrogen).
- The *starting molecule* of a scaffold is the scaffold with ``"H"`` at every point; the
  similarity oracle compares to it (Morgan radius 2, 2048 bits, Tanimoto).
- Invalid decorations score ``INVALID_REWARD`` (0; -10 for ``plogp``); every objective is
  in [0, 1] except ``plogp`` (penalized logP, unbounded, of either sign: the reward whose
  scale and offset plain policy gradient is sensitive to).
- ``qed_logp_sim`` (the default task, PMO style): geometric mean of QED, a logP window
  desirability (1 inside [3, 4], Gaussian tails of width 1) and a similarity
  desirability ``min(1, sim / 0.25)``: improve drug-likeness, raise logP into a window, do
  not drift too far from the start. The constants were picked so that the starting
  molecule is not optimal (held-out two-point scaffolds: start 0.585, exhaustive optimum
  0.878 on average) and the optimal decoration differs between scaffolds.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from optiforge.errors import InvalidTask

FRAGMENTS: tuple[str, ...] = (
    "H",
    "*F",
    "*Cl",
    "*Br",
    "*O",
    "*N",
    "*C",
    "*CC",
    "*C(C)C",
    "*OC",
    "*OCC",
    "*C(F)(F)F",
    "*C#N",
    "*C(N)=O",
    "*C(=O)O",
    "*C(C)=O",
    "*NC(C)=O",
    "*S(C)(=O)=O",
    "*[N+](=O)[O-]",
    "*N(C)C",
    "*c1ccccc1",
    "*c1ccncc1",
    "*C1CC1",
    "*N1CCOCC1",
    "*=O",
    "*=C",
)
"""Substituents; ``*`` marks the attachment atom's bond (``*=O`` attaches by a double bond)."""

INVALID_REWARD = {"qed": 0.0, "logp_window": 0.0, "similarity": 0.0, "plogp": -10.0}
"""Reward of a decoration that RDKit cannot sanitize: 0 for the objectives in [0, 1], -10
for penalized logP (below any valid decoration here: those score about -5 to 5)."""

OBJECTIVES = ("qed", "logp_window", "similarity", "plogp", "qed_logp_sim")


@dataclass(frozen=True)
class Scaffold:
    """A scaffold SMILES with attachment points ``[*:1] .. [*:n_points]``."""

    smiles: str
    n_points: int


@cache
def load_scaffolds(split: str) -> tuple[Scaffold, ...]:
    """The shipped scaffolds of ``split`` (``"train"`` or ``"heldout"``)."""
    if split not in ("train", "heldout"):
        raise InvalidTask(f"unknown scaffold split {split!r} (train or heldout)")
    text = resources.files(__package__).joinpath("scaffolds.json").read_text()
    return tuple(scaffold(s) for s in json.loads(text)[split])


def scaffold(smiles: str) -> Scaffold:
    """Parse ``smiles`` and check its attachment points are numbered 1..n without gaps."""
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise InvalidTask(f"scaffold {smiles!r} does not parse")
    maps = sorted(a.GetAtomMapNum() for a in mol.GetAtoms() if a.GetAtomicNum() == 0)
    if not maps or maps != list(range(1, len(maps) + 1)):
        raise InvalidTask(f"scaffold {smiles!r}: attachment points must be [*:1]..[*:n]")
    for a in mol.GetAtoms():
        if a.GetAtomicNum() == 0 and a.GetDegree() != 1:
            raise InvalidTask(f"scaffold {smiles!r}: an attachment point has degree != 1")
    return Scaffold(smiles=smiles, n_points=len(maps))


@cache
def _fragment_mol(index: int) -> Any:
    from rdkit import Chem

    return Chem.MolFromSmiles(FRAGMENTS[index]) if FRAGMENTS[index] != "H" else None


def assemble(scaf: Scaffold, choices: Sequence[int]) -> Any | None:
    """The sanitized RDKit molecule of ``scaf`` decorated with ``choices``, or None if invalid.

    ``choices``: one index into ``FRAGMENTS`` per attachment point, ``len == n_points``.
    """
    from rdkit import Chem
    from rdkit.rdBase import BlockLogs

    if len(choices) != scaf.n_points:
        raise InvalidTask(f"{len(choices)} choices for {scaf.n_points} attachment points")
    rw = Chem.RWMol(Chem.MolFromSmiles(scaf.smiles))
    dummies = {a.GetAtomMapNum(): a.GetIdx() for a in rw.GetAtoms() if a.GetAtomicNum() == 0}
    to_remove = []
    for k, choice in enumerate(choices, start=1):
        d = dummies[k]
        anchor = rw.GetAtomWithIdx(d).GetNeighbors()[0].GetIdx()
        to_remove.append(d)
        frag = _fragment_mol(int(choice))
        if frag is None:
            continue
        f_dummy = next(a.GetIdx() for a in frag.GetAtoms() if a.GetAtomicNum() == 0)
        f_bond = frag.GetAtomWithIdx(f_dummy).GetBonds()[0]
        f_atom = f_bond.GetOtherAtomIdx(f_dummy)
        index_map = {}
        for a in frag.GetAtoms():
            if a.GetIdx() != f_dummy:
                index_map[a.GetIdx()] = rw.AddAtom(a)
        for b in frag.GetBonds():
            i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
            if f_dummy not in (i, j):
                rw.AddBond(index_map[i], index_map[j], b.GetBondType())
        rw.AddBond(anchor, index_map[f_atom], f_bond.GetBondType())
    for d in sorted(to_remove, reverse=True):
        rw.RemoveAtom(d)
    mol = rw.GetMol()
    for a in mol.GetAtoms():
        a.SetAtomMapNum(0)
        a.SetNoImplicit(False)
    block = BlockLogs()  # sanitization failures are expected outcomes, not log noise
    try:
        Chem.SanitizeMol(mol)
        out = Chem.MolFromSmiles(Chem.MolToSmiles(mol))
    except Exception:  # RDKit raises several sanitization error types
        return None
    finally:
        del block
    return out


def start_molecule(scaf: Scaffold) -> Any:
    """The undecorated molecule (``"H"`` at every attachment point)."""
    mol = assemble(scaf, [0] * scaf.n_points)
    if mol is None:
        raise InvalidTask(f"scaffold {scaf.smiles!r} is not a valid molecule with H")
    return mol


@cache
def _morgan() -> Any:
    from rdkit.Chem import rdFingerprintGenerator

    return rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)


@cache
def _sascorer() -> Any:
    from rdkit import RDConfig

    path = os.path.join(RDConfig.RDContribDir, "SA_Score")
    if path not in sys.path:
        sys.path.append(path)
    import sascorer  # type: ignore[import-not-found]

    return sascorer


def tanimoto(a: Any, b: Any) -> float:
    """Tanimoto similarity of the Morgan fingerprints (radius 2, 2048 bits) of two molecules."""
    from rdkit import DataStructs

    g = _morgan()
    return float(DataStructs.TanimotoSimilarity(g.GetFingerprint(a), g.GetFingerprint(b)))


def logp_window(logp: float, low: float = 3.0, high: float = 4.0, width: float = 1.0) -> float:
    """Desirability of ``logp``: 1 inside [low, high], Gaussian tails of ``width`` outside."""
    dist = max(0.0, low - logp, logp - high)
    return math.exp(-0.5 * (dist / width) ** 2)


def penalized_logp(mol: Any) -> float:
    """logP - SA score - max(0, largest ring size - 6) (unnormalized)."""
    from rdkit.Chem import rdMolDescriptors

    rings = [len(r) for r in mol.GetRingInfo().AtomRings()]
    cycle = max(0, max(rings, default=0) - 6)
    return float(
        rdMolDescriptors.CalcCrippenDescriptors(mol)[0] - _sascorer().calculateScore(mol) - cycle
    )


def score(objective: str, mol: Any, start: Any) -> float:
    """``objective`` of ``mol`` (an RDKit molecule; ``start`` the starting molecule)."""
    from rdkit.Chem import QED, rdMolDescriptors

    if objective == "qed":
        return float(QED.qed(mol))
    if objective == "logp_window":
        return logp_window(rdMolDescriptors.CalcCrippenDescriptors(mol)[0])
    if objective == "similarity":
        return tanimoto(mol, start)
    if objective == "plogp":
        return penalized_logp(mol)
    if objective == "qed_logp_sim":
        q = float(QED.qed(mol))
        lw = logp_window(rdMolDescriptors.CalcCrippenDescriptors(mol)[0])
        sim = min(1.0, tanimoto(mol, start) / 0.25)
        return float((q * lw * sim) ** (1.0 / 3.0))
    raise InvalidTask(f"unknown objective {objective!r}; one of {OBJECTIVES}")


@dataclass
class Oracle:
    """Scores decorations of scaffolds under one objective, with a cache and a call count.

    ``calls`` counts distinct (scaffold, decoration) pairs scored (a repeat is free, as a
    lookup in a table of earlier results); invalid decorations count too (the oracle was
    asked). ``objective``: one of ``OBJECTIVES``.
    """

    objective: str = "qed_logp_sim"
    calls: int = 0
    _cache: dict[tuple[str, tuple[int, ...]], float] = field(default_factory=dict, repr=False)
    _starts: dict[str, Any] = field(default_factory=dict, repr=False)
    _valid: dict[tuple[str, tuple[int, ...]], bool] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise InvalidTask(f"unknown objective {self.objective!r}; one of {OBJECTIVES}")

    def __call__(self, scaf: Scaffold, choices: Sequence[int]) -> float:
        key = (scaf.smiles, tuple(int(c) for c in choices))
        if key in self._cache:
            return self._cache[key]
        self.calls += 1
        mol = assemble(scaf, key[1])
        self._valid[key] = mol is not None
        if mol is None:
            value = INVALID_REWARD.get(self.objective, 0.0)
        else:
            if scaf.smiles not in self._starts:
                self._starts[scaf.smiles] = start_molecule(scaf)
            value = score(self.objective, mol, self._starts[scaf.smiles])
        self._cache[key] = value
        return value

    def is_valid(self, scaf: Scaffold, choices: Sequence[int]) -> bool:
        """Whether the decoration sanitizes (no oracle call; cached when scored)."""
        key = (scaf.smiles, tuple(int(c) for c in choices))
        if key not in self._valid:
            self._valid[key] = assemble(scaf, key[1]) is not None
        return self._valid[key]


ScoreFn = Callable[[Scaffold, Sequence[int]], float]

"""Synthetic protein fitness landscapes with tunable epistasis (hidden truth of the suite).

No PyPI package we could find ships the GB1 (Wu et al. 2016) or TrpB combinatorial
fitness tables (they live on Hugging Face / Zenodo, which nothing here may download), so
the suite's landscapes are generated, seeded and documented here, in the spirit of
Potts/NK models: an additive part made of physicochemical *mechanisms* (so expert
knowledge can be right or wrong about each) plus pairwise couplings on a contact map
(epistasis whose strength is a landscape parameter) plus a small measurement noise fixed
per sequence.

A landscape has a wild type, a secondary structure and a burial profile (true ones are
hidden; strategies see noisy predictions), and mechanism weights drawn per landscape:

- **thermostability**-like: buried hydrophobicity (``core``), helix propensity in helices
  with a proline penalty (``helix``), over-packing of buried sites by much larger side
  chains (``packing``, a threshold mechanism), glycine/proline in loops (``loop``);
- **solubility**-like: exposed hydrophobicity (``surface``, negative), net charge
  magnitude (``charge``), hydrophobic stretches that aggregate (``aggregation``, windows
  of 5 with at least 4 hydrophobic residues), a weak fold-stability term (``core``).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optiforge.solvers.protein.properties import AA, CHARGE, HELIX, KD, VOLUME

_IDX = {a: i for i, a in enumerate(AA)}
_HYDROPHOBIC = set("AILMFVW")
_BASE = {
    "thermostability": {"core": 1.0, "helix": 0.6, "packing": 0.8, "loop": 0.3},
    "solubility": {"surface": 1.0, "charge": 0.6, "aggregation": 0.8, "core": 0.3},
}


@dataclass
class Landscape:
    """One hidden landscape (see the module doc); everything follows from ``seed``."""

    name: str
    property: str
    seed: int
    length: int
    epistasis: float
    """Coupling strength relative to the additive part (0: additive)."""
    noise: float = 0.03
    wt: str = field(init=False)
    ss: str = field(init=False)
    burial: list[float] = field(init=False)
    pred_ss: str = field(init=False)
    pred_burial: list[float] = field(init=False)
    weights: dict[str, float] = field(init=False)
    couplings: dict[tuple[int, int], np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        rng = np.random.default_rng([self.seed, 17])
        ss: list[str] = []
        while len(ss) < self.length:
            kind = rng.choice(["H", "E", "C"], p=[0.45, 0.25, 0.30])
            n = {"H": rng.integers(8, 15), "E": rng.integers(4, 8), "C": rng.integers(2, 6)}[kind]
            ss += [str(kind)] * int(n)
        self.ss = "".join(ss[: self.length])
        burial = []
        phase = rng.uniform(0, 2 * math.pi)
        for i, s in enumerate(self.ss):
            b = {"H": 0.5 + 0.4 * math.cos(2 * math.pi * i / 3.6 + phase),
                 "E": 0.8 if i % 2 else 0.2, "C": 0.15}[s] + rng.normal(0, 0.08)  # fmt: skip
            burial.append(float(np.clip(b, 0.0, 1.0)))
        self.burial = burial
        wt = []
        for b, s in zip(burial, self.ss, strict=True):
            pool = "AILMFVW" if b > 0.55 else ("DEKRNQSTGH" if s == "C" else "DEKRNQSTAH")
            wt.append(str(rng.choice(list(pool))))
        self.wt = "".join(wt)
        self.pred_burial = [float(np.clip(b + rng.normal(0, 0.15), 0, 1)) for b in burial]
        self.pred_ss = "".join(
            str(rng.choice([x for x in "HEC" if x != s])) if rng.random() < 0.1 else s
            for s in self.ss
        )
        self.weights = {
            k: float(v * rng.lognormal(0, 0.5)) for k, v in _BASE[self.property].items()
        }
        pairs: set[tuple[int, int]] = set()
        for i, s in enumerate(self.ss):
            for d in {"H": (3, 4), "E": (2,), "C": (1,)}[s]:
                if i + d < self.length:
                    pairs.add((i, i + d))
        buried = [i for i, b in enumerate(burial) if b > 0.5]
        for _ in range(self.length // 2):
            if len(buried) >= 2:
                i, j = sorted(int(x) for x in rng.choice(buried, 2, replace=False))
                pairs.add((i, j))
        hyd = np.array([KD[a] for a in AA]) / 9.0
        self.couplings = {}
        for i, j in sorted(pairs):
            J = rng.normal(0, 0.35, (20, 20))
            if burial[i] > 0.5 and burial[j] > 0.5:  # hydrophobic contacts reinforce each other
                J = J + 0.5 * np.outer(hyd, hyd)
            self.couplings[(i, j)] = J * self.epistasis

    # ------------------------------------------------------------------------- fitness

    def additive(self, seq: str) -> dict[str, float]:
        """Each mechanism's contribution to ``seq``'s fitness, relative to the wild type."""
        out = {k: 0.0 for k in self.weights}
        for i, (a, w) in enumerate(zip(seq, self.wt, strict=True)):
            if a == w:
                continue
            b, s = self.burial[i], self.ss[i]
            dh = (KD[a] - KD[w]) / 9.0
            if "core" in out:
                out["core"] += b * dh
            if "helix" in out and s == "H":
                out["helix"] += (HELIX[a] - HELIX[w]) - (1.0 if a == "P" else 0.0)
            if "packing" in out and b > 0.6:
                out["packing"] -= max(0.0, VOLUME[a] - VOLUME[w] - 30.0) / 30.0
            if "loop" in out and s == "C":
                out["loop"] += 0.5 * ((a in "GP") - (w in "GP"))
            if "surface" in out:
                out["surface"] -= (1.0 - b) * dh
        if "charge" in out:
            q = abs(sum(CHARGE[a] for a in seq)) - abs(sum(CHARGE[a] for a in self.wt))
            out["charge"] = q / 2.0
        if "aggregation" in out:
            out["aggregation"] = -(_sticky(seq) - _sticky(self.wt)) / 2.0
        return out

    def epistatic(self, seq: str) -> float:
        total = 0.0
        for (i, j), J in self.couplings.items():
            if seq[i] != self.wt[i] or seq[j] != self.wt[j]:
                total += J[_IDX[seq[i]], _IDX[seq[j]]] - J[_IDX[self.wt[i]], _IDX[self.wt[j]]]
        return total

    def fitness(self, seq: str) -> float:
        """The measured fitness of ``seq`` (wild type about 0; noise fixed per sequence)."""
        add = self.additive(seq)
        value = sum(self.weights[k] * v for k, v in add.items()) + self.epistatic(seq)
        noise = np.random.default_rng([self.seed, zlib.crc32(seq.encode())]).normal(0, self.noise)
        return float(value + noise)

    def pool(self, n: int) -> list[dict[str, Any]]:
        """``n`` distinct variants of the wild type with 1-3 substitutions."""
        rng = np.random.default_rng([self.seed, 29])
        seen, out = {self.wt}, list[dict[str, Any]]()
        while len(out) < n:
            k = int(rng.choice([1, 2, 3], p=[0.4, 0.4, 0.2]))
            pos = sorted(int(p) for p in rng.choice(self.length, k, replace=False))
            seq = list(self.wt)
            muts = []
            for p in pos:
                new = str(rng.choice([a for a in AA if a != self.wt[p]]))
                seq[p] = new
                muts.append([p, self.wt[p], new])
            s = "".join(seq)
            if s not in seen:
                seen.add(s)
                out.append({"id": len(out), "mutations": muts, "sequence": s})
        return out


def _sticky(seq: str) -> int:
    """Windows of 5 residues with at least 4 hydrophobic ones (aggregation-prone)."""
    return sum(sum(a in _HYDROPHOBIC for a in seq[i : i + 5]) >= 4 for i in range(len(seq) - 4))

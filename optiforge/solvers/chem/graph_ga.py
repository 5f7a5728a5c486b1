"""Instance optimization baseline: a scaffold-preserving graph genetic algorithm.

One run optimizes ONE scaffold's decoration under a per-molecule oracle budget (distinct
molecules scored; a repeat is a free lookup). The search space is AMORTIX's: one fragment
per attachment point, so the scaffold is kept by construction and the comparison is about
search, not about the space.

Operators (ours; RDKit only through ``molecules.assemble`` and the fragment fingerprints):

- population: the starting molecule (all ``"H"``) plus random decorations;
- parent selection: binary tournament on fitness;
- crossover (``p_crossover``): uniform per attachment point (the children exchange whole
  substituents, a crossover of the molecular graphs at the scaffold's cut bonds);
- mutation, per attachment point with probability ``1 / n_points`` (at least one point):
  with ``p_local`` a *fragment-level* move to a chemically near substituent (one of the
  ``n_neighbours`` fragments with the highest Morgan-fingerprint Tanimoto to the current
  one, RDKit; ``"H"``'s neighbours are the smallest fragments), else a uniform redraw;
- survival: the best ``population`` of parents and children (elitist, (mu + lambda)).

A child already scored costs nothing and is re-drawn up to a few times, so the budget goes
to new molecules. The run stops when ``budget`` distinct molecules were scored or, for a
space smaller than the budget, when every decoration was scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np

from optiforge.errors import InvalidTask
from optiforge.solvers.chem.molecules import FRAGMENTS, Oracle, Scaffold


@cache
def fragment_neighbours(n_neighbours: int = 4) -> tuple[tuple[int, ...], ...]:
    """For each fragment, the ``n_neighbours`` most similar other fragments (Tanimoto of
    Morgan fingerprints of the fragment capped with H; ``"H"``: the fewest heavy atoms)."""
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    mols = [Chem.MolFromSmiles(f.replace("*=", "").replace("*", "")) for f in FRAGMENTS[1:]]
    fps = [None] + [gen.GetFingerprint(m) for m in mols]
    sizes = [0] + [m.GetNumHeavyAtoms() for m in mols]
    out = []
    for i in range(len(FRAGMENTS)):
        if i == 0:
            order = sorted(range(1, len(FRAGMENTS)), key=lambda j: (sizes[j], j))
        else:
            sims = [
                (-DataStructs.TanimotoSimilarity(fps[i], fps[j]) if j else -0.0, j)
                for j in range(len(FRAGMENTS))
                if j != i
            ]
            order = [j for _, j in sorted(sims)]
        out.append(tuple(order[:n_neighbours]))
    return tuple(out)


@dataclass
class GAResult:
    """Best decoration found and the best-so-far fitness after each oracle call."""

    best: tuple[int, ...]
    best_value: float
    trace: list[float] = field(default_factory=list)
    """``trace[i]``: best value after ``i + 1`` distinct oracle calls"""

    def best_at(self, calls: int) -> float:
        """Best value within the first ``calls`` oracle calls (``-inf`` for 0)."""
        if calls <= 0:
            return float("-inf")
        return self.trace[min(calls, len(self.trace)) - 1]


def graph_ga(
    scaf: Scaffold,
    oracle: Oracle,
    *,
    budget: int = 100,
    population: int = 12,
    p_crossover: float = 0.5,
    p_local: float = 0.5,
    n_neighbours: int = 4,
    seed: int = 0,
) -> GAResult:
    """Maximize ``oracle`` over decorations of ``scaf`` with at most ``budget`` new calls."""
    if budget < 1 or population < 2:
        raise InvalidTask("budget >= 1 and population >= 2 required")
    rng = np.random.default_rng(seed)
    k = len(FRAGMENTS)
    space = k**scaf.n_points
    neigh = fragment_neighbours(n_neighbours)
    seen: dict[tuple[int, ...], float] = {}
    trace: list[float] = []

    def evaluate(c: tuple[int, ...]) -> float:
        if c not in seen:
            seen[c] = oracle(scaf, c)
            trace.append(max(seen[c], trace[-1] if trace else float("-inf")))
        return seen[c]

    def done() -> bool:
        return len(seen) >= min(budget, space)

    pop = [tuple([0] * scaf.n_points)]
    while len(pop) < population and len(pop) < space:
        c = tuple(int(x) for x in rng.integers(0, k, scaf.n_points))
        if c not in pop:
            pop.append(c)
    fit = []
    for c in pop:
        if done():
            break
        fit.append(evaluate(c))
    pop = pop[: len(fit)]

    def mutate(c: tuple[int, ...]) -> tuple[int, ...]:
        out = list(c)
        hit = rng.random(len(out)) < 1.0 / len(out)
        if not hit.any():
            hit[rng.integers(len(out))] = True
        for i in np.flatnonzero(hit):
            if rng.random() < p_local:
                out[i] = int(rng.choice(neigh[out[i]]))
            else:
                out[i] = int(rng.integers(0, k))
        return tuple(out)

    def tournament() -> tuple[int, ...]:
        a, b = rng.integers(0, len(pop), 2)
        return pop[a] if fit[a] >= fit[b] else pop[b]

    while not done():
        children: list[tuple[int, ...]] = []
        for _ in range(population):
            for _attempt in range(8):  # re-draw children already scored (free, no budget)
                p1 = tournament()
                if rng.random() < p_crossover:
                    p2 = tournament()
                    mask = rng.random(len(p1)) < 0.5
                    child = tuple(a if m else b for a, b, m in zip(p1, p2, mask, strict=True))
                    if child in seen:
                        child = mutate(child)
                else:
                    child = mutate(p1)
                if child not in seen:
                    break
            if child in seen and len(seen) < space:
                # stuck in a scored region: a uniform random unscored decoration
                while child in seen:
                    child = tuple(int(x) for x in rng.integers(0, k, scaf.n_points))
            children.append(child)
        for c in children:
            if done():
                break
            evaluate(c)
        merged = {c: seen[c] for c in pop + children if c in seen}
        ranked = sorted(merged.items(), key=lambda kv: -kv[1])[:population]
        pop = [c for c, _ in ranked]
        fit = [v for _, v in ranked]
    best = max(seen, key=lambda c: seen[c])
    return GAResult(best=best, best_value=seen[best], trace=trace)

"""Kernel expressions: the compositional grammar over base kernels with ``+`` and ``*``.

An expression is text such as ``RBF_ARD * Linear + Periodic``: base-kernel names from
``optiforge.solvers.gp.BASE_KERNELS`` (``_ARD`` for per-dimension lengthscales), ``+``,
``*`` and parentheses. ``build_kernel`` turns it into a ``KernelSpec``: products of base
kernels, and for a sum each term gets its own variance (``scale``) so relative weights are
learned, as in compositional kernel search (Duvenaud et al. 2013). ``canonical`` sorts
factors and terms, so ``B * A`` and ``A * B`` are one candidate.
"""

from __future__ import annotations

import ast

import numpy as np

from optiforge.errors import InvalidCandidate
from optiforge.solvers.gp.kernels import BASE_KERNELS, KernelSpec, add, mul, scale

Term = tuple[str, ...]
"""A product of base-kernel names."""


def _names(ard: bool) -> list[str]:
    return [n + ("_ARD" if ard else "") for n in BASE_KERNELS]


ALL_BASES: list[str] = _names(False) + _names(True)


def _base(name: str) -> KernelSpec:
    ard = name.endswith("_ARD")
    key = name[:-4] if ard else name
    if key not in BASE_KERNELS:
        raise InvalidCandidate(f"unknown base kernel {name!r} (known: {', '.join(ALL_BASES)})")
    return BASE_KERNELS[key](ard)


def parse(expr: str) -> list[Term]:
    """Expand ``expr`` into a sum of products: ``(A + B) * C`` -> ``[(A, C), (B, C)]``."""
    try:
        tree = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError as err:
        raise InvalidCandidate(f"kernel expression {expr!r} does not parse: {err.msg}") from err

    def walk(node: ast.AST) -> list[Term]:
        if isinstance(node, ast.Name):
            _base(node.id)  # validates the name
            return [(node.id,)]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return walk(node.left) + walk(node.right)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            return [a + b for a in walk(node.left) for b in walk(node.right)]
        raise InvalidCandidate(
            f"kernel expression {expr!r}: only base-kernel names, + and * are allowed"
        )

    return walk(tree)


def canonical_terms(terms: list[Term]) -> list[Term]:
    """Sorted factors in each term, sorted (and de-duplicated) terms."""
    return sorted({tuple(sorted(t)) for t in terms})


def render(terms: list[Term]) -> str:
    """Text of a sum of products."""
    return " + ".join(" * ".join(t) for t in canonical_terms(terms))


def canonical(expr: str) -> str:
    """The canonical text of ``expr``."""
    return render(parse(expr))


def complexity(expr: str) -> int:
    """Number of base-kernel occurrences."""
    return sum(len(t) for t in parse(expr))


def build_kernel(expr: str) -> KernelSpec:
    """A ``KernelSpec`` for ``expr`` (each term of a sum gets its own variance)."""
    terms = canonical_terms(parse(expr))
    specs = []
    for term in terms:
        k = _base(term[0])
        for name in term[1:]:
            k = mul(k, _base(name))
        specs.append(k)
    if len(specs) == 1:
        return specs[0]
    total = scale(specs[0])
    for k in specs[1:]:
        total = add(total, scale(k))
    return total


def mutate(expr: str, rng: np.random.Generator, bases: list[str], max_complexity: int) -> str:
    """One move of the compositional search: ``S + B``, ``S * B``, or swap a base ``B -> B'``.

    Moves that would exceed ``max_complexity`` base kernels fall back to a swap.
    """
    terms = [list(t) for t in parse(expr)]
    n = sum(len(t) for t in terms)
    b = bases[int(rng.integers(len(bases)))]
    move = rng.random()
    if n < max_complexity and move < 0.4:
        terms.append([b])  # S + B
    elif n < max_complexity and move < 0.8:
        t = terms[int(rng.integers(len(terms)))]
        t.append(b)  # multiply one term (S * B restricted to a term keeps sums readable)
    else:
        t = terms[int(rng.integers(len(terms)))]
        t[int(rng.integers(len(t)))] = b
    return render([tuple(t) for t in terms])


def crossover(a: str, b: str, rng: np.random.Generator, max_complexity: int) -> str:
    """Combine two parents: a term of each, joined by ``+`` or ``*``."""
    ta, tb = parse(a), parse(b)
    x, y = ta[int(rng.integers(len(ta)))], tb[int(rng.integers(len(tb)))]
    if len(x) + len(y) > max_complexity:
        return render([x])
    return render([x, y]) if rng.random() < 0.5 else render([x + y])

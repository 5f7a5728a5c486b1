"""Black-box optimization over formulated search spaces: ``SearchSpace`` (typed variables,
ranges, log scales, conditionals) and one interface over an optimizer portfolio."""

from optiforge.solvers.blackbox.portfolio import PORTFOLIO, BlackBoxResult, optimize
from optiforge.solvers.blackbox.space import CategoricalVar, FloatVar, IntVar, SearchSpace

__all__ = [
    "PORTFOLIO",
    "BlackBoxResult",
    "CategoricalVar",
    "FloatVar",
    "IntVar",
    "SearchSpace",
    "optimize",
]

"""Neural combinatorial optimization back end: TSP instances, tours and a strong local
search (``tsp``), a constructive attention policy trained POMO-style (``policy``: the
``nco`` suite's black-box teacher), and the state a constructive heuristic sees."""

from optiforge.solvers.nco.tsp import (
    clustered_instances,
    local_search,
    tour_length,
    uniform_instances,
)

__all__ = ["clustered_instances", "local_search", "tour_length", "uniform_instances"]

"""Structured and nonconvex solvers (numerical back ends, batch 3): matrix completion by
nullspace perturbation, rank-one tensor recovery on the Segre manifold, weak-AICN boosting,
a random exploration step for d-stationarity, source-free recommendation unlearning."""

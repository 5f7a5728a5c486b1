"""Bandit and model-based black-box optimizers behind ``solvers.asktell`` (GP-BTS, nonlinear
parametric BO, 1-D convex bandit bisection, FICBO)."""

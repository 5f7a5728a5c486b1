"""Zeroth-order optimizers behind ``solvers.asktell`` (CV-ZOD, SZO-kappa, LQZO, FAR-SIGN)."""

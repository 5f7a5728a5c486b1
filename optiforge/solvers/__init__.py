"""Numerical back ends (GP/BO, robust optimization, causal BO, LP/MIP, ...)."""

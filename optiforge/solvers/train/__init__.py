"""Training optimizers and loops (numerical back ends, batch 2) and the contract the
``train`` suite runs them through (``api``); ``catalogue`` names them all."""

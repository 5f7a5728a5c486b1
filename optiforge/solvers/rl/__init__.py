"""Constrained and multi-objective reinforcement learning (numerical back ends, batch 4):
LOCU (multi-constraint policy optimization), ASCPO (absolute state-wise constraints),
AETDICE (offline nonlinear multi-objective RL), with the baselines they are measured
against (CPO, PCPO, Lagrangian PPO; linear scalarization, Markov-policy DICE).

Needs the ``rl`` extra (gymnasium with MuJoCo, pinned; it leaves torch alone).
``envs`` holds the Safety-Gymnasium-style constraint costs, ``core`` the policy-gradient
machinery every method shares, ``api`` the contract between control problems and methods
(what the formulator and the ``rl`` suite call), ``catalogue`` the methods by name;
``mo_envs`` / ``mo_data`` the multi-objective worlds and offline datasets AETDICE uses.
"""

"""Bounds of the numeric run options, shared by ``RunSettings`` (YAML, ``--set``) and the
CLI's flags. Imports nothing, so the CLI can read them without loading pydantic."""

MAX_BUDGET = 1_000_000
"""Evaluations of one run; a larger number is a typo (1e12 would run for years)."""
MAX_WORKERS = 256
MAX_SEEDS = 1_000
MAX_WALL_S = 30 * 86_400.0
"""A month: a bigger wall-clock cap is no cap, and is most likely a unit mistake."""

"""What a tuned harness is compared with: the base harness (no tuning), and the paper's
three ablations as named configs of the same loop."""

from __future__ import annotations

from typing import Any

ABLATIONS: dict[str, dict[str, Any]] = {
    "autosaddler": {},
    "shallow-reflection": {"diagnosis": "last_error"},
    "unconstrained-patch": {"scope": "whole"},
    "trajectory-repair": {"gate": "repair"},
}
"""Name -> ``SaddlerConfig`` overrides (the first is AutoSaddler itself)."""
BASE = "base"
"""The base harness, untuned (``target.base()``)."""

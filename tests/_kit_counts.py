"""``benchmarks/kit_counts.py`` loaded as a module: the one AST reader of the project's
imports and counts, shared by the import-direction and ratchet tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "kit_counts.py"
_spec = importlib.util.spec_from_file_location("kit_counts", _PATH)
assert _spec is not None and _spec.loader is not None
kc = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("kit_counts", kc)
_spec.loader.exec_module(kc)

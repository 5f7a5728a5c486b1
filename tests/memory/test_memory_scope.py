"""Memory is scoped: a run's own by default, a named project or the global store by choice."""

from __future__ import annotations

from pathlib import Path

import pytest

from optiforge.config import RunSettings
from optiforge.errors import ConfigError
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.memory import Store
from optiforge.memory.store import scoped_url


def test_scopes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPTIFORGE_MEMORY", "sqlite:////elsewhere/global.db")
    assert scoped_url(None, tmp_path) == f"sqlite:///{tmp_path / 'memory.db'}"
    assert scoped_url("run", tmp_path) == f"sqlite:///{tmp_path / 'memory.db'}"
    assert scoped_url("run", None) == "sqlite://"  # no run dir: lives with the process
    assert scoped_url("none", tmp_path) is None
    assert scoped_url("global", tmp_path) == "sqlite:////elsewhere/global.db"
    assert scoped_url("project:exp-1", tmp_path) == "sqlite:///~/.optiforge/projects/exp-1.db"
    assert scoped_url("postgresql+psycopg://u@h/db", None) == "postgresql+psycopg://u@h/db"
    (tmp_path / "memory.db").write_bytes(b"")
    assert scoped_url(str(tmp_path), None) == f"sqlite:///{tmp_path.resolve() / 'memory.db'}"
    for bad in ("project:../x", "project:", "nonsense"):
        with pytest.raises(ConfigError, match="--memory"):
            scoped_url(bad, tmp_path)


def test_two_runs_do_not_share_memory_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What one run learns never reaches another run's prompts unless asked for."""
    shared = tmp_path / "global.db"
    monkeypatch.setenv("OPTIFORGE_MEMORY", f"sqlite:///{shared}")
    task = resolve_task("funcfit/quadratic@dev")
    counts = []
    for name in ("a", "b"):
        run_task("evolve", task, RunSettings(budget=3), tmp_path / name, with_baseline=False)
        store = Store(f"sqlite:///{tmp_path / name / 'memory.db'}", embedder=None)
        try:
            counts.append(store.stats())
        finally:
            store.close()
    a, b = ({k: c[k] for k in ("candidates", "experiences", "total")} for c in counts)
    assert a == b  # b started empty: it holds only its own (identical) run
    assert a["candidates"] > 0
    assert not shared.exists()  # the global store is opt-in

"""A run's memory never waits for a cold embedding model; a round's candidates are one
transaction that Ctrl-C does not lose."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from optiforge.agents.kit import RunContext
from optiforge.agents.kit.lineage import candidate_batch, record_candidate
from optiforge.memory import Candidate, Experience, HashingEmbedder, Store


class ColdEmbedder:
    """A hashing embedder that says whether its 'model' is loaded and counts loads."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder(64)
        self.loaded = False
        self.loads = 0

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not self.loaded:
            self.loads += 1
            self.loaded = True
        return self._inner.embed(texts)


def _exp(lesson: str) -> Experience:
    return Experience(agent="a", task_signature="t", lesson=lesson)


def test_deferred_writes_do_not_load_the_model_and_searches_embed_them(tmp_path: Path) -> None:
    emb = ColdEmbedder()
    store = Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=emb, defer_embedding=True)
    a = store.add_experience(_exp("shrink the tile to fit shared memory"))
    store.add_experiences([_exp("lower the learning rate"), _exp("use a cholesky solve")])
    assert emb.loads == 0 and store.stats()["embedded"] == 0
    hits = store.search("tile shared memory", k=1)  # needs vectors: embeds what is missing
    assert hits[0].record.id == a and hits[0].method == "embedding"
    assert emb.loads == 1 and store.stats()["embedded"] == 3
    # once the model is loaded, writes embed at once again
    store.add_experience(_exp("another lesson"))
    assert store.stats()["embedded"] == 4


def test_without_defer_a_write_embeds(tmp_path: Path) -> None:
    emb = ColdEmbedder()
    store = Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=emb)
    store.add_experience(_exp("x y"))
    assert emb.loads == 1 and store.stats()["embedded"] == 1


def _ctx(store: Store, tmp_path: Path) -> RunContext:
    return RunContext(memory=store, run_dir=tmp_path / "run", agent="evolve")


def test_candidate_batch_is_one_write_with_parents_inside(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=None)
    ctx = _ctx(store, tmp_path)
    writes: list[int] = []
    orig = store.add_candidates
    store.add_candidates = lambda cs: writes.append(len(list(cs))) or orig(cs)  # type: ignore[method-assign,func-returns-value]
    with candidate_batch(ctx):
        assert record_candidate(ctx, mem_id="cand_a", task="t", code="a")
        assert record_candidate(ctx, mem_id="cand_b", task="t", code="b", parent_ids=["cand_a"])
        assert not record_candidate(ctx, mem_id="cand_a", task="t", code="a")  # idempotent
        assert store.find("cand_a") is None  # not written yet
    assert writes == [2]
    b = store.get("cand_b")
    assert isinstance(b, Candidate) and b.parent_ids == ["cand_a"]
    # outside a batch: one write each, as before
    assert record_candidate(ctx, mem_id="cand_c", task="t", code="c", parent_ids=["cand_b"])
    assert writes == [2] and store.find("cand_c") is not None


def test_candidate_batch_survives_ctrl_c(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=None)
    ctx = _ctx(store, tmp_path)
    with pytest.raises(KeyboardInterrupt), candidate_batch(ctx):
        record_candidate(ctx, mem_id="cand_a", task="t", code="a")
        record_candidate(ctx, mem_id="cand_b", task="t", code="b", parent_ids=["cand_a"])
        raise KeyboardInterrupt
    assert store.find("cand_a") is not None and store.find("cand_b") is not None
    reopened = Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=None)
    assert {c.id for c in reopened.candidates()} == {"cand_a", "cand_b"}


@pytest.mark.slow
def test_an_offline_run_never_loads_the_embedding_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default run memory stores lessons without loading MiniLM (vectors come later)."""
    from optiforge.agents import get_agent
    from optiforge.config import RunSettings
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.runner import run_task
    from optiforge.memory import MiniLMEmbedder

    if not MiniLMEmbedder.available():
        pytest.skip("the bundled MiniLM model is not installed")

    def refuse(self: MiniLMEmbedder) -> None:
        raise AssertionError("the run loaded the embedding model")

    monkeypatch.setattr(MiniLMEmbedder, "_load_locked", refuse)
    out = tmp_path / "run"
    settings = RunSettings(budget=40)
    summary = run_task(get_agent("evolve"), resolve_task("funcfit/quadratic"), settings, out)
    assert summary.status == "finished"
    store = Store(f"sqlite:///{out / 'memory.db'}", embedder=None)
    st = store.stats()
    assert st["experiences"] >= 1 and st["candidates"] == 40 and st["vectors_by_model"] == {}


def test_a_long_wait_says_what_it_waits_for(capsys: pytest.CaptureFixture[str]) -> None:
    import time

    from optiforge.memory.embeddings import notice_after

    err = ""
    with notice_after(0.0, "loading the thing ..."):
        end = time.monotonic() + 60  # a hang guard: the notice's timer fires meanwhile
        while not err and time.monotonic() < end:
            time.sleep(0.05)
            err += capsys.readouterr().err
    with notice_after(60.0, "never shown"):
        pass
    err += capsys.readouterr().err
    assert err == "loading the thing ...\n"

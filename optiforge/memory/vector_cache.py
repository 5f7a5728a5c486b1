"""``VectorCache``: one embedding model's vectors as a growable float32 buffer (retrieval's cache)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optiforge.errors import MemoryStoreError


class VectorCache:
    """Vectors of one model held as a growable ``capacity x dim`` float32 buffer."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.version: int | None = None
        self.max_seq = 0
        self.n = 0
        self.buf = np.zeros((0, dim), dtype=np.float32)
        self.ids: list[str] = []
        self.kinds: list[str] = []
        self.agents: list[str | None] = []
        self.tags: list[frozenset[str]] = []
        self.provs: list[str] = []
        self.prov_arr = np.zeros(0, dtype="<U10")
        self.kind_arr = np.zeros(0, dtype="<U10")
        self.agent_arr = np.zeros(0, dtype=object)

    def append(
        self, rows: Sequence[tuple[int, str, str, str | None, list[str], str, bytes]]
    ) -> None:
        if not rows:
            return
        need = self.n + len(rows)
        if need > self.buf.shape[0]:
            # Doubling keeps interleaved write/search O(1) amortised instead of O(n) copies.
            new = np.zeros((max(need, 2 * self.buf.shape[0], 1024), self.dim), dtype=np.float32)
            new[: self.n] = self.buf[: self.n]
            self.buf = new
        for i, (seq, rid, kind, agent, tags, prov, vec) in enumerate(rows):
            v = np.frombuffer(vec, dtype=np.float32)
            if v.shape[0] != self.dim:
                raise MemoryStoreError(f"vector of {rid} has dim {v.shape[0]}, expected {self.dim}")
            self.buf[self.n + i] = v
            self.ids.append(rid)
            self.kinds.append(kind)
            self.agents.append(agent)
            self.tags.append(frozenset(tags or ()))
            self.provs.append(prov)
            self.max_seq = max(self.max_seq, seq)
        self.n = need
        self.kind_arr = np.asarray(self.kinds, dtype="<U10")
        self.agent_arr = np.asarray(self.agents, dtype=object)
        self.prov_arr = np.asarray(self.provs, dtype="<U10")

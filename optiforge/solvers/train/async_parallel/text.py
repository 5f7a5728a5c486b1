"""The small language-model task: text from a stochastic grammar generated here, and the
next-token windows the model is trained on.

The grammar is a tiny probabilistic context-free grammar of English-like sentences with
number agreement (``the cat sees`` / ``the cats see``), optional adjectives, adverbs and
prepositional phrases, so the next token is predictable from a few tokens of context
(agreement spans the noun phrase) but never certain. Word-level tokens; the vocabulary is
``VOCAB`` (34 words with ``.``).
"""

from __future__ import annotations

import random

import torch

_DET = {"sg": ["the", "a", "this"], "pl": ["the", "some", "these"]}
_NOUN = {"sg": ["cat", "dog", "bird", "child", "robot"], "pl": ["cats", "dogs", "birds", "children", "robots"]}  # fmt: skip
_VERB = {"sg": ["sees", "likes", "chases", "finds"], "pl": ["see", "like", "chase", "find"]}
_ADJ = ["small", "big", "red", "old"]
_ADV = ["quickly", "often", "today"]
_PREP = ["near", "with", "under"]
_INTRANS = {"sg": ["sleeps", "runs"], "pl": ["sleep", "run"]}

VOCAB: list[str] = sorted(
    {w for d in (_DET, _NOUN, _VERB, _INTRANS) for ws in d.values() for w in ws}
    | set(_ADJ) | set(_ADV) | set(_PREP) | {"."}
)  # fmt: skip
INDEX: dict[str, int] = {w: i for i, w in enumerate(VOCAB)}


def _noun_phrase(rng: random.Random, depth: int) -> tuple[list[str], str]:
    num = "sg" if rng.random() < 0.5 else "pl"
    words = [rng.choice(_DET[num])]
    if rng.random() < 0.4:
        words.append(rng.choice(_ADJ))
    words.append(rng.choice(_NOUN[num]))
    if depth < 1 and rng.random() < 0.2:
        words += [rng.choice(_PREP), *_noun_phrase(rng, depth + 1)[0]]
    return words, num


def sentence(rng: random.Random) -> list[str]:
    """One sentence: NP VP (ADV) ``.``; the verb agrees with the subject's number."""
    subj, num = _noun_phrase(rng, 0)
    if rng.random() < 0.7:
        verb = [rng.choice(_VERB[num]), *_noun_phrase(rng, 0)[0]]
    else:
        verb = [rng.choice(_INTRANS[num])]
    adv = [rng.choice(_ADV)] if rng.random() < 0.3 else []
    return [*subj, *verb, *adv, "."]


def token_stream(n_tokens: int, seed: int) -> torch.Tensor:
    """``(n_tokens,)`` int64 token ids of sentences drawn with ``seed``."""
    rng = random.Random(seed)
    out: list[int] = []
    while len(out) < n_tokens:
        out += [INDEX[w] for w in sentence(rng)]
    return torch.tensor(out[:n_tokens], dtype=torch.int64)


def windows(
    stream: torch.Tensor, starts: torch.Tensor, context: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Contexts ``(B, context)`` and next tokens ``(B,)`` at window ``starts`` ``(B,)``."""
    offs = torch.arange(context)
    x = stream[starts[:, None] + offs[None, :]]
    y = stream[starts + context]
    return x, y


class LMData:
    """Train and validation streams (different grammar seeds) and per-replica batches.

    ``batch(replica, step)`` is a pure function of ``(data_seed, replica, step)``: both
    pipeline stages of a replica draw the same batch (stage 0 reads the contexts, stage 1
    the targets), and the synchronous and asynchronous runs see the same data."""

    def __init__(self, context: int = 6, n_train: int = 200_000, n_val: int = 4_096, data_seed: int = 0) -> None:  # fmt: skip
        self.context = context
        self.data_seed = data_seed
        self.train = token_stream(n_train, seed=1_000 + data_seed)
        val = token_stream(n_val + context, seed=2_000 + data_seed)
        self.val_x, self.val_y = windows(val, torch.arange(n_val), context)

    def batch(self, replica: int, step: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator().manual_seed(1_000_003 * self.data_seed + 100_003 * replica + step)
        starts = torch.randint(0, len(self.train) - self.context - 1, (size,), generator=gen)
        return windows(self.train, starts, self.context)

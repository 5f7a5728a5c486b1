"""Workloads with known answers: a synthetic fact table and correlated query sequences.

The table has fictional entities (so no model knows them beforehand) x attributes with
values from small pools (so a wrong fact can coincide with the right value, as in real
data). Candidate ``c = e * A + a`` is "attribute ``a`` of entity ``e``": its key text
``"<entity> <attribute>"`` is what the embedder compares, its question
``"What is the <attribute> of <entity>?"`` is what is sent. Users ask paraphrases.

A sequence drifts between topics: the user focuses on one entity at a time (Zipf
popularity over entities), asks about several of its attributes, re-asks recent questions
in other words, and moves on; so queries repeat and correlate, and the number of distinct
facts asked grows sublinearly in the sequence length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from optiforge.errors import ConfigError

ENTITY_NAMES = (
    "Zorvan Quell", "Ibrena Tosk", "Marlo Vexe", "Quilla Darne", "Teodor Fask",
    "Yselle Brom", "Kaito Renwick", "Oona Palisk", "Bram Otterly", "Veyra Lund",
    "Cassio Drenn", "Nimue Harrow", "Ottilie Crane", "Pell Saranth", "Runa Ivesk",
    "Soren Malke", "Tamsin Yorke", "Ulric Benn", "Wenna Colt", "Xavi Strand",
)  # fmt: skip

ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "home city": ("Lisbon", "Osaka", "Denver", "Tallinn", "Accra", "Perth", "Quito", "Oslo"),
    "profession": ("baker", "pilot", "surgeon", "welder", "teacher", "lawyer", "farmer", "diver"),
    "favourite colour": ("red", "green", "blue", "yellow", "purple", "orange", "black", "white"),
    "pet": ("cat", "dog", "parrot", "ferret", "tortoise", "rabbit", "goldfish", "hamster"),
    "instrument": ("violin", "drums", "piano", "flute", "guitar", "cello", "trumpet", "harp"),
}

PARAPHRASES: dict[str, tuple[str, ...]] = {
    "home city": (
        "Which city is the home city of {e}?",
        "In what home city does {e} live?",
        "Tell me {e}'s home city.",
    ),
    "profession": (
        "What profession does {e} have?",
        "What does {e} do as a profession?",
        "Tell me the profession of {e}.",
    ),
    "favourite colour": (
        "Which favourite colour does {e} have?",
        "What is {e}'s favourite colour?",
        "Tell me the favourite colour of {e}.",
    ),
    "pet": (
        "What kind of pet does {e} keep?",
        "Which pet does {e} own?",
        "Tell me {e}'s pet.",
    ),
    "instrument": (
        "Which instrument does {e} play?",
        "What instrument is played by {e}?",
        "Tell me the instrument of {e}.",
    ),
}


@dataclass(frozen=True)
class FactTable:
    """``entities x attributes`` string values; candidate ``c = e * A + a``."""

    entities: tuple[str, ...]
    attributes: tuple[str, ...]
    values: tuple[tuple[str, ...], ...]
    """``E x A`` values."""

    @property
    def k(self) -> int:
        return len(self.entities) * len(self.attributes)

    def fact(self, c: int) -> tuple[int, int]:
        """``(entity, attribute)`` of candidate ``c``."""
        return divmod(c, len(self.attributes))

    def answer(self, c: int) -> str:
        e, a = self.fact(c)
        return self.values[e][a]

    def keys(self) -> list[str]:
        """``k`` key texts (what the embedder compares)."""
        return [
            f"{self.entities[e]} {a}" for e in range(len(self.entities)) for a in self.attributes
        ]

    def questions(self) -> list[str]:
        """``k`` canonical questions (what is sent)."""
        return [
            f"What is the {a} of {self.entities[e]}?"
            for e in range(len(self.entities))
            for a in self.attributes
        ]

    def paraphrase(self, c: int, which: int) -> str:
        e, a = self.fact(c)
        templates = PARAPHRASES[self.attributes[a]]
        return templates[which % len(templates)].format(e=self.entities[e])

    def as_text(self) -> str:
        """The table as lines ``<entity>: <attribute> = <value>; ...`` (for an LLM prompt)."""
        return "\n".join(
            f"{name}: " + "; ".join(f"{a} = {v}" for a, v in zip(self.attributes, row, strict=True))
            for name, row in zip(self.entities, self.values, strict=True)
        )

    def parse_question(self, text: str) -> int | None:
        """Candidate of a canonical question (the scripted LLM's parser), or None."""
        m = re.search(r"What is the (.+) of (.+)\?", text)
        if not m or m.group(1) not in self.attributes or m.group(2) not in self.entities:
            return None
        return self.entities.index(m.group(2)) * len(self.attributes) + self.attributes.index(
            m.group(1)
        )


def make_table(n_entities: int = 20, n_attributes: int = 5, *, seed: int = 0) -> FactTable:
    """A random fact table (values drawn from each attribute's pool)."""
    if not (1 <= n_entities <= len(ENTITY_NAMES) and 1 <= n_attributes <= len(ATTRIBUTES)):
        raise ConfigError(f"at most {len(ENTITY_NAMES)} entities and {len(ATTRIBUTES)} attributes")
    rng = np.random.default_rng(seed)
    attrs = tuple(list(ATTRIBUTES)[:n_attributes])
    values = tuple(tuple(str(rng.choice(ATTRIBUTES[a])) for a in attrs) for _ in range(n_entities))
    return FactTable(tuple(ENTITY_NAMES[:n_entities]), attrs, values)


@dataclass(frozen=True)
class QuerySequence:
    """Raw query texts and the candidates they ask (the ground truth)."""

    texts: list[str]
    truth: list[int]


def make_sequence(
    table: FactTable,
    n: int,
    *,
    seed: int = 0,
    p_repeat: float = 0.4,
    p_same_topic: float = 0.35,
    zipf: float = 1.1,
) -> QuerySequence:
    """``n`` correlated queries with topic drift.

    Each step: with ``p_repeat`` re-ask one of the last 8 facts (new wording); else with
    ``p_same_topic`` ask another attribute of the current entity; else drift to an entity
    drawn with Zipf(``zipf``) popularity (over a per-seed random ranking) and ask one of its
    attributes.
    """
    rng = np.random.default_rng(seed)
    n_e, n_a = len(table.entities), len(table.attributes)
    rank = rng.permutation(n_e)
    pop = 1.0 / np.arange(1, n_e + 1) ** zipf
    pop /= pop.sum()
    entity = int(rank[rng.choice(n_e, p=pop)])
    truth: list[int] = []
    for _ in range(n):
        u = rng.random()
        if truth and u < p_repeat:
            c = int(rng.choice(truth[-8:]))
        else:
            if truth and u >= p_repeat + (1 - p_repeat) * p_same_topic:
                entity = int(rank[rng.choice(n_e, p=pop)])
            c = entity * n_a + int(rng.integers(n_a))
        truth.append(c)
    texts = [table.paraphrase(c, int(rng.integers(3))) for c in truth]
    return QuerySequence(texts, truth)


def check_answer(table: FactTable, c: int, response: str) -> bool:
    """Right iff the response names the true value and no other value of that attribute."""
    _, a = table.fact(c)
    text = response.lower()
    right = table.answer(c).lower()
    others = [v.lower() for v in ATTRIBUTES[table.attributes[a]] if v.lower() != right]

    def has(v: str) -> bool:
        return re.search(rf"\b{re.escape(v)}\b", text) is not None

    return has(right) and not any(has(v) for v in others)


def calibration_pairs(table: FactTable) -> tuple[list[str], list[str], np.ndarray]:
    """Public pairs for ``fit_calibration``: every paraphrase of every candidate against
    every key; returns ``(paraphrase texts, key texts, same matrix (P x k))``."""
    texts, owners = [], []
    for c in range(table.k):
        for w in range(3):
            texts.append(table.paraphrase(c, w))
            owners.append(c)
    same = np.array([[float(o == c) for c in range(table.k)] for o in owners])
    return texts, table.keys(), same


class TableLLM:
    """Scripted stand-in for an LLM: answers a canonical question from the table, right with
    probability ``accuracy`` (else a wrong value of the pool); "I don't know" otherwise."""

    def __init__(self, table: FactTable, *, accuracy: float = 1.0, seed: int = 0) -> None:
        self.table = table
        self.accuracy = accuracy
        self.rng = np.random.default_rng(seed)
        self.calls: list[str] = []

    def __call__(self, question: str) -> str:
        self.calls.append(question)
        c = self.table.parse_question(question)
        if c is None:
            return "I don't know."
        right = self.table.answer(c)
        if self.rng.random() < self.accuracy:
            return right
        _, a = self.table.fact(c)
        return str(self.rng.choice([v for v in ATTRIBUTES[self.table.attributes[a]] if v != right]))

"""The leakage check: no held-out task's prompt or answer may appear in training rows.

For every agent with rows, its source enumerates the held-out tasks of the suites it
trains on and builds their prompts and answers the way the data is built
(``heldout_texts``). A row leaks when

- its prompt equals a held-out prompt (the messages, or the last user message alone);
- a held-out answer of at least ``MIN_ANSWER_CHARS`` characters occurs in it
  (whitespace-insensitive substring of the prompt or reply);
- a held-out task's distinctive content (its data: questions, target expressions,
  problem JSON, statements) occurs in it whole, or at least ``NGRAM_SHARE`` of that
  content's own token ``NGRAM``-grams do (a near copy: reformatted, truncated, embedded).
  A text's own n-grams are those no other held-out task of the agent has: the template
  text every instance shares ("Find a robust optimal x ...") is no task's content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from optiforge.harness.posttrain.data import Row, heldout_texts

MIN_ANSWER_CHARS = 8
"""Shorter answers (``12``, ``true``) are not distinctive: every dataset has them."""
NGRAM = 8
NGRAM_SHARE = 0.5
MIN_NGRAMS = 4
"""Content with fewer own n-grams is checked as a substring only."""
_TOKEN = re.compile(r"\w+|[^\w\s]")
_SPACE = re.compile(r"\s+")


class Leak(BaseModel):
    row_id: str
    agent: str
    heldout_task: str
    kind: str
    """``prompt``, ``answer``, ``content`` (substring) or ``ngrams``."""
    excerpt: str


def _squash(text: str) -> str:
    return _SPACE.sub("", text)


def _grams(text: str) -> set[tuple[str, ...]]:
    toks = _TOKEN.findall(text)
    return {tuple(toks[i : i + NGRAM]) for i in range(len(toks) - NGRAM + 1)}


def _prompt_key(messages: list[dict[str, Any]]) -> str:
    return json.dumps([[m["role"], m["content"]] for m in messages])


def find_leaks(
    rows: Iterable[Row], heldout: dict[str, list[dict[str, Any]]] | None = None
) -> list[Leak]:
    """Every leak of a held-out task into ``rows`` (see the module doc).

    heldout: agent -> ``heldout_texts(agent)`` (default: built from each agent's source).
    """
    rows = list(rows)
    leaks: list[Leak] = []
    agents = sorted({r.agent for r in rows})
    held = heldout if heldout is not None else {a: heldout_texts(a) for a in agents}
    prompts: dict[str, str] = {}
    users: dict[str, str] = {}
    for items in held.values():
        for item in items:
            for msgs in item["prompts"]:
                prompts[_prompt_key(msgs)] = item["task"]
                users[msgs[-1]["content"]] = item["task"]
    texts = {r.id: "\n".join(m.content for m in r.messages) for r in rows}
    squashed = {rid: _squash(t) for rid, t in texts.items()}
    grams: set[tuple[str, ...]] = set()
    owner: dict[tuple[str, ...], str] = {}
    for r in rows:
        for g in _grams(texts[r.id]):
            grams.add(g)
            owner.setdefault(g, r.id)
    by_id = {r.id: r for r in rows}
    for r in rows:
        p = r.prompt
        hit = prompts.get(_prompt_key(p)) or users.get(p[-1]["content"] if p else "")
        if hit:
            leaks.append(Leak(row_id=r.id, agent=r.agent, heldout_task=hit, kind="prompt",
                              excerpt=(p[-1]["content"] if p else "")[:120]))  # fmt: skip
    for items in held.values():
        # n-grams in the content of two or more held-out tasks are template text
        seen_in: dict[tuple[str, ...], int] = {}
        for item in items:
            mine: set[tuple[str, ...]] = set()
            for t in item.get("distinctive", []):
                mine |= _grams(str(t))
            for gram in mine:
                seen_in[gram] = seen_in.get(gram, 0) + 1
        for item in items:
            for ans in item.get("answers", []):
                s = _squash(str(ans))
                if len(s) < MIN_ANSWER_CHARS:
                    continue
                for rid, t in squashed.items():
                    if s in t:
                        leaks.append(Leak(row_id=rid, agent=by_id[rid].agent, heldout_task=item["task"],
                                          kind="answer", excerpt=str(ans)[:120]))  # fmt: skip
            for text in item.get("distinctive", []):
                s = _squash(str(text))
                found = next(
                    (rid for rid, t in squashed.items() if len(s) >= MIN_ANSWER_CHARS and s in t),
                    None,
                )
                if found:
                    leaks.append(Leak(row_id=found, agent=by_id[found].agent, heldout_task=item["task"],
                                      kind="content", excerpt=str(text)[:120]))  # fmt: skip
                    continue
                own = {x for x in _grams(str(text)) if seen_in.get(x, 0) < 2}
                if len(own) >= MIN_NGRAMS:
                    shared = own & grams
                    if len(shared) >= NGRAM_SHARE * len(own):
                        rid = owner[next(iter(shared))]
                        leaks.append(Leak(row_id=rid, agent=by_id[rid].agent, heldout_task=item["task"],
                                          kind="ngrams", excerpt=f"{len(shared)}/{len(own)} {NGRAM}-grams of "
                                          f"{str(text)[:80]!r}"))  # fmt: skip
    return leaks

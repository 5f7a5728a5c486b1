"""Seeded, offline generators of procedural reasoning tasks with exact reference answers.

Original code written for this project (no third-party task packages; numpy and the
standard library only). It holds the task families of a tool-building benchmark (SMITH):
a model writes a Python tool from a few examples of a family, the tool is validated on
held-out generated instances, then used to answer new questions via function calling.

A :class:`Family` bundles a JSON Schema per argument (``params``, in order) and for the
answer (``returns``), a generator ``(rng, level) -> args`` whose ``level`` (1..3) raises
sizes and magnitudes, a ``render`` that writes the question, and ``solve``, the exact
reference answer. Questions embed every argument as a compact JSON literal
(``json.dumps(value, separators=(",", ":"))``) in ``params`` order, and never contain a
string answer. Arguments and answers are JSON values without floats: integers, strings
(money as ``"12.50"``), booleans, and lists/dicts of those.

There are 15 families: 9 ``"train"`` and 4 ``"heldout"`` procedural ones, and 2
out-of-domain (``"ood"``) ones: a TabMWP-style price table and a CLEVR/GQA-style
scene-graph count.

:func:`instance` is a pure function of ``(family.name, seed, level)``; :func:`instances`
draws a list from its own streams (so lists for different seeds never share a stream) and
skips an argument set it has already produced, when it can. :func:`verify` is strict: the
answer must have the same JSON type as the expected one at every depth (a bool is not an
int, an int is not a float, ``"3"`` is not ``3``, so ``6.0`` fails against ``6``), equal
values, lists in the same order and dicts with the same keys. There is no partial,
substring or numeric-tolerance credit.
"""

from __future__ import annotations

import datetime
import hashlib
import heapq
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np

from optiforge.solvers.tools import json_kind

DOMAINS: tuple[str, ...] = ("train", "heldout", "ood")
LEVELS: tuple[int, ...] = (1, 2, 3)

Args = dict[str, Any]
Generator = Callable[[np.random.Generator, int], Args]


@dataclass(frozen=True)
class Family:
    """One task family: schemas, a seeded generator, a question writer and the exact solver."""

    name: str
    domain: str
    summary: str
    params: dict[str, dict[str, Any]]
    returns: dict[str, Any]
    generate: Callable[[np.random.Generator, int], dict[str, Any]]
    render: Callable[[dict[str, Any]], str]
    solve: Callable[[dict[str, Any]], Any]


# ---------------------------------------------------------------------------- helpers


def _lit(value: Any) -> str:
    """The JSON literal a question embeds for an argument value."""
    return json.dumps(value, separators=(",", ":"))


def _ri(rng: np.random.Generator, lo: int, hi: int) -> int:
    """A uniform integer in ``[lo, hi]`` (inclusive), as a Python int."""
    return int(rng.integers(lo, hi + 1))


def _by_level(level: int, *choices: Any) -> Any:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    return choices[level - 1]


def _leaks(answer: Any, question: str) -> bool:
    return isinstance(answer, str) and len(answer) >= 3 and answer in question


def _no_leak(
    raw: Generator, render: Callable[[Args], str], solve: Callable[[Args], Any]
) -> Generator:
    """Wrap a generator so that it redraws (from the same rng) while a string answer shows
    up verbatim in the question."""

    def generate(rng: np.random.Generator, level: int) -> Args:
        for _ in range(100):
            args = raw(rng, level)
            if not _leaks(solve(args), render(args)):
                return args
        raise RuntimeError("could not draw arguments whose question hides the answer")

    return generate


_INT: dict[str, Any] = {"type": "integer"}
_NONNEG: dict[str, Any] = {"type": "integer", "minimum": 0}


# --------------------------------------------------------------------- train families


def _gen_gcd(rng: np.random.Generator, level: int) -> Args:
    lo_n, hi_n = _by_level(level, (3, 3), (4, 5), (6, 8))
    g = _ri(rng, 1, _by_level(level, 12, 200, 5000))
    top = _by_level(level, 20, 500, 100_000)
    return {"numbers": [g * _ri(rng, 1, top) for _ in range(_ri(rng, lo_n, hi_n))]}


def _solve_gcd(args: Args) -> int:
    return int(reduce(math.gcd, args["numbers"]))


def _gen_modpow(rng: np.random.Generator, level: int) -> Args:
    base_hi, exp_lo, exp_hi, mod_lo, mod_hi = _by_level(
        level,
        (20, 2, 20, 3, 100),
        (10_000, 100, 10_000, 1_000, 100_000),
        (10**12, 10**9, 10**15, 10**6, 10**12),
    )
    return {
        "base": _ri(rng, 2, base_hi),
        "exponent": _ri(rng, exp_lo, exp_hi),
        "modulus": _ri(rng, mod_lo, mod_hi),
    }


def _solve_modpow(args: Args) -> int:
    return pow(args["base"], args["exponent"], args["modulus"])


_DIGITS = "0123456789abcdef"


def _gen_base(rng: np.random.Generator, level: int) -> Args:
    lo, hi = _by_level(level, (2, 255), (1_000, 10**6), (10**9, 10**15))
    bases = [b for b in range(2, 17) if b != 10]  # base 10 would repeat the question's number
    return {"n": _ri(rng, lo, hi), "base": bases[_ri(rng, 0, len(bases) - 1)]}


def _solve_base(args: Args) -> str:
    n, base = args["n"], args["base"]
    if not 2 <= base <= 16 or n < 0:
        raise ValueError("need n >= 0 and 2 <= base <= 16")
    out = []
    while True:
        n, r = divmod(n, base)
        out.append(_DIGITS[r])
        if n == 0:
            return "".join(reversed(out))


def _gen_primes(rng: np.random.Generator, level: int) -> Args:
    lo_lo, lo_hi, w_lo, w_hi = _by_level(
        level, (0, 50, 10, 60), (100, 100_000, 200, 2_000), (100_000, 10**7, 5_000, 20_000)
    )
    lo = _ri(rng, lo_lo, lo_hi)
    return {"lo": lo, "hi": lo + _ri(rng, w_lo, w_hi)}


def _solve_primes(args: Args) -> int:
    lo, hi = max(args["lo"], 2), args["hi"]
    if hi < lo:
        return 0
    root = math.isqrt(hi)
    small = bytearray([1]) * (root + 1)
    small[:2] = b"\x00\x00"
    for p in range(2, math.isqrt(root) + 1):
        if small[p]:
            small[p * p :: p] = bytearray(len(range(p * p, root + 1, p)))
    seg = bytearray([1]) * (hi - lo + 1)
    for p in range(2, root + 1):
        if small[p]:
            start = max(p * p, (lo + p - 1) // p * p)
            if start <= hi:
                seg[start - lo :: p] = bytearray(len(range(start, hi + 1, p)))
    return seg.count(1)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _gen_rle(rng: np.random.Generator, level: int) -> Args:
    runs_lo, runs_hi, max_len, n_letters = _by_level(
        level, (2, 4, 4, 3), (5, 10, 12, 6), (12, 25, 30, 26)
    )
    parts: list[str] = []
    prev = ""
    for _ in range(_ri(rng, runs_lo, runs_hi)):
        choices = [c for c in _LETTERS[:n_letters] if c != prev]
        prev = choices[_ri(rng, 0, len(choices) - 1)]
        parts.append(prev * _ri(rng, 1, max_len))
    return {"text": "".join(parts)}


def _solve_rle(args: Args) -> str:
    text: str = args["text"]
    out: list[str] = []
    i = 0
    while i < len(text):
        j = i
        while j < len(text) and text[j] == text[i]:
            j += 1
        out.append(f"{text[i]}{j - i}")
        i = j
    return "".join(out)


_PAIRS = {")": "(", "]": "[", "}": "{"}
_BRACKETS = "()[]{}"


def _gen_brackets(rng: np.random.Generator, level: int) -> Args:
    lo, hi = _by_level(level, (1, 3), (4, 10), (15, 40))
    pairs = _ri(rng, lo, hi)
    out: list[str] = []
    stack: list[str] = []
    opened = 0
    while len(out) < 2 * pairs:
        if opened < pairs and (not stack or rng.random() < 0.5):
            ch = "([{"[_ri(rng, 0, 2)]
            stack.append(ch)
            out.append(ch)
            opened += 1
        else:
            out.append({"(": ")", "[": "]", "{": "}"}[stack.pop()])
    if rng.random() < 0.5:  # corrupt it (it may, rarely, stay balanced)
        kind = _ri(rng, 0, 2)
        i = _ri(rng, 0, len(out) - 1)
        if kind == 0:
            out[i] = _BRACKETS[_ri(rng, 0, 5)]
        elif kind == 1:
            j = i + 1 if i + 1 < len(out) else i - 1
            out[i], out[j] = out[j], out[i]
        else:
            del out[i]
            if not out:
                out.append(_BRACKETS[_ri(rng, 0, 5)])
    return {"brackets": "".join(out)}


def _solve_brackets(args: Args) -> bool:
    stack: list[str] = []
    for ch in args["brackets"]:
        if ch in "([{":
            stack.append(ch)
        elif ch in _PAIRS:
            if not stack or stack.pop() != _PAIRS[ch]:
                return False
        else:
            raise ValueError(f"not a bracket: {ch!r}")
    return not stack


_ROMAN = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]


def _gen_roman(rng: np.random.Generator, level: int) -> Args:
    lo, hi = _by_level(level, (1, 39), (40, 399), (400, 3999))
    return {"n": _ri(rng, lo, hi)}


def _solve_roman(args: Args) -> str:
    n = args["n"]
    if not 1 <= n <= 3999:
        raise ValueError("n must be in 1..3999")
    out = []
    for value, sym in _ROMAN:
        count, n = divmod(n, value)
        out.append(sym * count)
    return "".join(out)


def _gen_intervals(rng: np.random.Generator, level: int) -> Args:
    lo_n, hi_n, span, max_len = _by_level(
        level, (3, 4, 20, 5), (6, 10, 100, 15), (15, 30, 1000, 60)
    )
    out = []
    for _ in range(_ri(rng, lo_n, hi_n)):
        lo = _ri(rng, 0, span)
        out.append([lo, lo + _ri(rng, 0, max_len)])
    return {"intervals": out}


def _solve_intervals(args: Args) -> list[list[int]]:
    merged: list[list[int]] = []
    for lo, hi in sorted((int(a), int(b)) for a, b in args["intervals"]):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return merged


def _gen_days(rng: np.random.Generator, level: int) -> Args:
    y_lo, y_hi, delta = _by_level(
        level, (2000, 2030, 60), (1950, 2050, 1500), (1600, 2400, 200_000)
    )
    start = datetime.date(y_lo, 1, 1).toordinal()
    stop = datetime.date(y_hi, 12, 31).toordinal()
    a = _ri(rng, start, stop)
    b = a + _ri(rng, -delta, delta)
    return {
        "start": datetime.date.fromordinal(a).isoformat(),
        "end": datetime.date.fromordinal(b).isoformat(),
    }


def _solve_days(args: Args) -> int:
    a = datetime.date.fromisoformat(args["start"])
    b = datetime.date.fromisoformat(args["end"])
    return (b - a).days


# ------------------------------------------------------------------- heldout families


def _gen_lcs(rng: np.random.Generator, level: int) -> Args:
    lo, hi, n_letters = _by_level(level, (3, 6, 3), (8, 15, 4), (30, 60, 6))

    def word() -> str:
        return "".join(_LETTERS[_ri(rng, 0, n_letters - 1)] for _ in range(_ri(rng, lo, hi)))

    return {"a": word(), "b": word()}


def _solve_lcs(args: Args) -> int:
    a, b = args["a"], args["b"]
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b):
            cur.append(prev[j] + 1 if ca == cb else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def _gen_path(rng: np.random.Generator, level: int) -> Args:
    n_lo, n_hi, w_hi = _by_level(level, (3, 5, 9), (6, 12, 20), (20, 40, 100))
    n = _ri(rng, n_lo, n_hi)
    m_lo, m_hi = _by_level(level, (n - 1, n + 1), (n, 2 * n), (n + n // 5, 3 * n))
    source = _ri(rng, 0, n - 1)
    target = (source + _ri(rng, 1, n - 1)) % n
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    if rng.random() < 0.2:  # no path: edges only within the two sides of a random cut
        side = [_ri(rng, 0, 1) for _ in range(n)]
        side[source], side[target] = 0, 1
        pairs = [(u, v) for u, v in pairs if side[u] == side[v]]
    m = min(_ri(rng, m_lo, m_hi), len(pairs))
    picked: list[int] = [int(k) for k in rng.choice(len(pairs), size=m, replace=False)] if m else []
    edges = []
    for k in picked:
        u, v = pairs[k]
        if rng.random() < 0.5:
            u, v = v, u
        edges.append([u, v, _ri(rng, 1, w_hi)])
    return {"n": n, "edges": edges, "source": source, "target": target}


def _solve_path(args: Args) -> int:
    n = args["n"]
    adj: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for u, v, w in args["edges"]:
        adj[u].append((v, w))
        adj[v].append((u, w))
    dist = [-1] * n
    heap = [(0, args["source"])]
    while heap:
        d, u = heapq.heappop(heap)
        if dist[u] != -1:
            continue
        dist[u] = d
        if u == args["target"]:
            break
        for v, w in adj[u]:
            if dist[v] == -1:
                heapq.heappush(heap, (d + w, v))
    return dist[args["target"]]


def _gen_knapsack(rng: np.random.Generator, level: int) -> Args:
    lo, hi, w_hi, v_hi = _by_level(level, (3, 4, 10, 20), (6, 10, 30, 60), (15, 25, 100, 200))
    count = _ri(rng, lo, hi)
    weights = [_ri(rng, 1, w_hi) for _ in range(count)]
    values = [_ri(rng, 1, v_hi) for _ in range(count)]
    capacity = sum(weights) * _ri(rng, 30, 70) // 100
    return {"weights": weights, "values": values, "capacity": capacity}


def _solve_knapsack(args: Args) -> int:
    weights, values, capacity = args["weights"], args["values"], args["capacity"]
    if len(weights) != len(values):
        raise ValueError("weights and values differ in length")
    best = [0] * (capacity + 1)
    for w, v in zip(weights, values, strict=True):
        for c in range(capacity, w - 1, -1):
            if best[c - w] + v > best[c]:
                best[c] = best[c - w] + v
    return best[capacity]


def _gen_det(rng: np.random.Generator, level: int) -> Args:
    n, bound = _by_level(level, (2, 9), (3, 20), (4, 99))
    return {"matrix": [[_ri(rng, -bound, bound) for _ in range(n)] for _ in range(n)]}


def _solve_det(args: Args) -> int:
    """Fraction-free Gaussian elimination (Bareiss): exact with integers only."""
    a = [[int(x) for x in row] for row in args["matrix"]]
    n = len(a)
    if any(len(row) != n for row in a):
        raise ValueError("the matrix is not square")
    if n == 0:
        return 1
    sign, prev = 1, 1
    for k in range(n - 1):
        if a[k][k] == 0:
            for i in range(k + 1, n):
                if a[i][k] != 0:
                    a[k], a[i] = a[i], a[k]
                    sign = -sign
                    break
            else:
                return 0
        for i in range(k + 1, n):
            for j in range(k + 1, n):
                a[i][j] = (a[i][j] * a[k][k] - a[i][k] * a[k][j]) // prev
        prev = a[k][k]
    return sign * a[n - 1][n - 1]


# ----------------------------------------------------------------------- ood families

_ITEMS = [
    "apple", "banana", "bagel", "muffin", "notebook", "pencil", "eraser", "marker",
    "stapler", "sandwich", "orange juice", "yogurt", "granola bar", "candle", "soap",
    "toothbrush", "sticker", "puzzle", "kite", "yo-yo", "comic book", "postcard", "mug",
    "scarf", "glue stick", "ruler", "crayon box", "tennis ball", "water bottle", "keychain",
]  # fmt: skip


def _cents(text: str) -> int:
    whole, _, frac = text.partition(".")
    if not whole.isdigit() or len(frac) != 2 or not frac.isdigit():
        raise ValueError(f"not a price with two decimals: {text!r}")
    return int(whole) * 100 + int(frac)


def _money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def _gen_table(rng: np.random.Generator, level: int) -> Args:
    r_lo, r_hi, c_lo, c_hi, p_lo, p_hi, q_hi = _by_level(
        level, (3, 4, 25, 999, 1, 2, 3), (5, 7, 50, 2999, 2, 3, 6), (8, 12, 100, 9999, 3, 5, 12)
    )
    rows = _ri(rng, r_lo, r_hi)
    items = [_ITEMS[int(i)] for i in rng.choice(len(_ITEMS), size=rows, replace=False)]
    table = [["item", "price"]] + [[it, _money(_ri(rng, c_lo, c_hi))] for it in items]
    bought = rng.choice(rows, size=min(_ri(rng, p_lo, p_hi), rows), replace=False)
    purchases = [[items[int(i)], _ri(rng, 1, q_hi)] for i in bought]
    return {"table": table, "purchases": purchases}


def _solve_table(args: Args) -> str:
    header, *rows = args["table"]
    item_col, price_col = header.index("item"), header.index("price")
    prices = {row[item_col]: _cents(row[price_col]) for row in rows}
    return _money(sum(prices[item] * int(qty) for item, qty in args["purchases"]))


_SHAPES = ["cube", "sphere", "cylinder"]
_COLORS = ["red", "blue", "green", "yellow", "gray", "purple", "brown", "cyan"]
_RELATIONS = ["left_of", "right_of", "on_top_of", "behind"]


def _gen_scene(rng: np.random.Generator, level: int) -> Args:
    n_lo, n_hi, s_hi, n_colors = _by_level(level, (3, 5, 1, 3), (5, 7, 2, 5), (7, 9, 3, 8))
    n = _ri(rng, n_lo, n_hi)
    stacks = _ri(rng, 0, min(s_hi, n // 2))
    columns = n - stacks
    xs = [int(v) for v in rng.permutation(columns)]
    depths = [int(v) for v in rng.permutation(columns)]
    # object k < columns stands on the floor in column k; the others sit on top of one of them
    column = list(range(columns)) + [
        int(c) for c in rng.choice(columns, size=stacks, replace=False)
    ]
    ids = [int(v) for v in rng.permutation(n)]  # object k gets id ids[k]
    colors = _COLORS[:n_colors]
    objects = [
        {
            "id": i,
            "shape": _SHAPES[_ri(rng, 0, len(_SHAPES) - 1)],
            "color": colors[_ri(rng, 0, len(colors) - 1)],
            "size": ("small", "large")[_ri(rng, 0, 1)],
        }
        for i in range(n)
    ]
    relations: list[list[Any]] = []
    for a in range(n):
        for b in range(n):
            ca, cb = column[a], column[b]
            if xs[ca] < xs[cb]:
                relations.append([ids[a], "left_of", ids[b]])
            if xs[ca] > xs[cb]:
                relations.append([ids[a], "right_of", ids[b]])
            if depths[ca] > depths[cb]:
                relations.append([ids[a], "behind", ids[b]])
    for k in range(columns, n):
        relations.append([ids[k], "on_top_of", ids[column[k]]])
    order = rng.permutation(len(relations))
    relations = [relations[int(i)] for i in order]

    # the query is built around a random target object (and, mostly, one of its listed
    # relations) so that counts are rarely zero; now and then a color absent from the scene
    target = objects[_ri(rng, 0, n - 1)]
    relation: str | None = None
    anchor: int | None = None
    if rng.random() < 0.7:
        own = [r for r in relations if r[0] == target["id"]]
        if own:
            _, relation, anchor = own[_ri(rng, 0, len(own) - 1)]
    u = rng.random()
    color = None if u < 0.4 else (target["color"] if u < 0.9 else _COLORS[_ri(rng, 0, 7)])
    shape = None if rng.random() < 0.5 else target["shape"]
    query = {"color": color, "shape": shape, "relation": relation, "anchor_id": anchor}
    return {"objects": objects, "relations": relations, "query": query}


def _solve_scene(args: Args) -> int:
    query = args["query"]
    color, shape = query.get("color"), query.get("shape")
    relation, anchor = query.get("relation"), query.get("anchor_id")
    if (relation is None) != (anchor is None):
        raise ValueError("relation and anchor_id must both be given or both be null")
    facts = {(s, r, o) for s, r, o in args["relations"]}
    return sum(
        1
        for obj in args["objects"]
        if (color is None or obj["color"] == color)
        and (shape is None or obj["shape"] == shape)
        and (relation is None or (obj["id"], relation, anchor) in facts)
    )


# ------------------------------------------------------------------------- registry

_STRING_AZ: dict[str, Any] = {"type": "string", "pattern": "^[a-z]*$"}
_PAIR: dict[str, Any] = {"type": "array", "items": _INT, "minItems": 2, "maxItems": 2}
_DATE: dict[str, Any] = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
_NULLABLE_STR: dict[str, Any] = {"type": ["string", "null"]}


def _family(
    name: str,
    domain: str,
    summary: str,
    params: dict[str, dict[str, Any]],
    returns: dict[str, Any],
    generate: Generator,
    render: Callable[[Args], str],
    solve: Callable[[Args], Any],
) -> Family:
    return Family(name, domain, summary, params, returns, _no_leak(generate, render, solve), render, solve)  # fmt: skip


_ALL: list[Family] = [
    _family(
        "gcd_of_list",
        "train",
        "the greatest common divisor of a list of positive integers",
        {"numbers": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 2}},
        {"type": "integer", "minimum": 1},
        _gen_gcd,
        lambda a: f"What is the greatest common divisor of the numbers {_lit(a['numbers'])}?",
        _solve_gcd,
    ),
    _family(
        "modular_power",
        "train",
        "base raised to the exponent, reduced modulo the modulus (a value in [0, modulus))",
        {"base": _NONNEG, "exponent": _NONNEG, "modulus": {"type": "integer", "minimum": 2}},
        _NONNEG,
        _gen_modpow,
        lambda a: (
            f"What is {_lit(a['base'])} raised to the power {_lit(a['exponent'])}, "
            f"modulo {_lit(a['modulus'])}?"
        ),
        _solve_modpow,
    ),
    _family(
        "base_conversion",
        "train",
        "a non-negative integer written in a base from 2 to 16, with lowercase digits 0-9a-f",
        {"n": _NONNEG, "base": {"type": "integer", "minimum": 2, "maximum": 16}},
        {"type": "string", "pattern": "^[0-9a-f]+$"},
        _gen_base,
        lambda a: (
            f"How is the integer {_lit(a['n'])} written in base {_lit(a['base'])} "
            "(digits 0-9 then lowercase a-f, no prefix)?"
        ),
        _solve_base,
    ),
    _family(
        "count_primes_in_range",
        "train",
        "the number of primes p with lo <= p <= hi",
        {"lo": _NONNEG, "hi": _NONNEG},
        _NONNEG,
        _gen_primes,
        lambda a: (
            f"How many prime numbers are there between {_lit(a['lo'])} and {_lit(a['hi'])}, "
            "both ends included?"
        ),
        _solve_primes,
    ),
    _family(
        "run_length_encode",
        "train",
        "the run-length encoding of a lowercase string: each run as its letter then its length",
        {"text": {"type": "string", "pattern": "^[a-z]+$"}},
        {"type": "string", "pattern": "^([a-z][1-9][0-9]*)+$"},
        _gen_rle,
        lambda a: (
            f"What is the run-length encoding of the string {_lit(a['text'])}, writing each "
            "run of equal letters as the letter followed by the run's length?"
        ),
        _solve_rle,
    ),
    _family(
        "balanced_brackets",
        "train",
        "whether a string of the brackets ()[]{} is balanced and properly nested",
        {"brackets": {"type": "string", "pattern": "^[()\\[\\]{}]+$"}},
        {"type": "boolean"},
        _gen_brackets,
        lambda a: (
            f"Is the bracket string {_lit(a['brackets'])} balanced, with every bracket "
            "closed by the matching kind in the right order?"
        ),
        _solve_brackets,
    ),
    _family(
        "roman_numeral",
        "train",
        "an integer from 1 to 3999 written as an uppercase Roman numeral in standard form",
        {"n": {"type": "integer", "minimum": 1, "maximum": 3999}},
        {"type": "string", "pattern": "^[MDCLXVI]+$"},
        _gen_roman,
        lambda a: f"How is the number {_lit(a['n'])} written in standard-form Roman numerals?",
        _solve_roman,
    ),
    _family(
        "interval_merge",
        "train",
        "the union of closed integer intervals [lo, hi] as sorted, disjoint intervals "
        "(intervals that overlap or share an endpoint merge)",
        {"intervals": {"type": "array", "items": _PAIR, "minItems": 1}},
        {"type": "array", "items": _PAIR},
        _gen_intervals,
        lambda a: (
            f"What do the closed intervals {_lit(a['intervals'])} merge into, as a sorted "
            "list of disjoint [lo, hi] pairs (intervals that overlap or share an endpoint "
            "merge)?"
        ),
        _solve_intervals,
    ),
    _family(
        "days_between_dates",
        "train",
        "the number of days from the start date to the end date (end minus start; "
        "negative when the end is earlier)",
        {"start": _DATE, "end": _DATE},
        _INT,
        _gen_days,
        lambda a: (
            f"How many days are there from {_lit(a['start'])} to {_lit(a['end'])} (the "
            "second date minus the first, negative if the second is earlier)?"
        ),
        _solve_days,
    ),
    _family(
        "longest_common_subsequence_length",
        "heldout",
        "the length of a longest common subsequence of two strings",
        {"a": _STRING_AZ, "b": _STRING_AZ},
        _NONNEG,
        _gen_lcs,
        lambda a: (
            f"What is the length of the longest common subsequence of the strings "
            f"{_lit(a['a'])} and {_lit(a['b'])}?"
        ),
        _solve_lcs,
    ),
    _family(
        "shortest_path_length",
        "heldout",
        "the least total weight of a path between two nodes of an undirected weighted "
        "graph, or -1 when there is none",
        {
            "n": {"type": "integer", "minimum": 1},
            "edges": {
                "type": "array",
                "items": {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 0},
                    "minItems": 3,
                    "maxItems": 3,
                },
            },
            "source": _NONNEG,
            "target": _NONNEG,
        },
        {"type": "integer", "minimum": -1},
        _gen_path,
        lambda a: (
            f"In an undirected graph with {_lit(a['n'])} nodes numbered from 0 and the "
            f"weighted edges {_lit(a['edges'])} (each [u, v, weight]), what is the length of "
            f"the shortest path from node {_lit(a['source'])} to node {_lit(a['target'])} "
            "(-1 if there is no path)?"
        ),
        _solve_path,
    ),
    _family(
        "knapsack_max_value",
        "heldout",
        "the largest total value of a subset of items (each used at most once) whose "
        "total weight is at most the capacity",
        {
            "weights": {"type": "array", "items": {"type": "integer", "minimum": 1}},
            "values": {"type": "array", "items": _NONNEG},
            "capacity": _NONNEG,
        },
        _NONNEG,
        _gen_knapsack,
        lambda a: (
            f"Items have the weights {_lit(a['weights'])} and the values {_lit(a['values'])}. "
            f"Using each item at most once and a total weight of at most "
            f"{_lit(a['capacity'])}, what is the largest total value you can reach?"
        ),
        _solve_knapsack,
    ),
    _family(
        "matrix_determinant",
        "heldout",
        "the exact determinant of a square integer matrix (up to 4x4)",
        {
            "matrix": {
                "type": "array",
                "items": {"type": "array", "items": _INT, "minItems": 1, "maxItems": 4},
                "minItems": 1,
                "maxItems": 4,
            }
        },
        _INT,
        _gen_det,
        lambda a: f"What is the determinant of the matrix {_lit(a['matrix'])} (given as rows)?",
        _solve_det,
    ),
    _family(
        "table_question",
        "ood",
        "the total cost, with exactly two decimals, of buying given quantities of items "
        "from a price table",
        {
            "table": {
                "type": "array",
                "items": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 2,
                    "maxItems": 2,
                },
                "minItems": 2,
            },
            "purchases": {
                "type": "array",
                "items": {
                    "type": "array",
                    "prefixItems": [{"type": "string"}, {"type": "integer", "minimum": 1}],
                    "items": False,
                    "minItems": 2,
                },
                "minItems": 1,
            },
        },
        {"type": "string", "pattern": "^[0-9]+\\.[0-9]{2}$"},
        _gen_table,
        lambda a: (
            f"Here is a price table in dollars, first row the header: {_lit(a['table'])}. "
            f"Someone buys {_lit(a['purchases'])}, each entry an item and a quantity. "
            "What is the total cost in dollars, written with exactly two decimals?"
        ),
        _solve_table,
    ),
    _family(
        "scene_graph_count",
        "ood",
        "the number of objects in a scene graph that match a color/shape filter and, "
        "optionally, stand in a given relation to an anchor object",
        {
            "objects": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": _NONNEG,
                        "shape": {"type": "string"},
                        "color": {"type": "string"},
                        "size": {"enum": ["small", "large"]},
                    },
                    "required": ["id", "shape", "color", "size"],
                    "additionalProperties": False,
                },
            },
            "relations": {
                "type": "array",
                "items": {
                    "type": "array",
                    "prefixItems": [_NONNEG, {"enum": _RELATIONS}, _NONNEG],
                    "items": False,
                    "minItems": 3,
                },
            },
            "query": {
                "type": "object",
                "properties": {
                    "color": _NULLABLE_STR,
                    "shape": _NULLABLE_STR,
                    "relation": {"enum": [*_RELATIONS, None]},
                    "anchor_id": {"type": ["integer", "null"], "minimum": 0},
                },
                "required": ["color", "shape", "relation", "anchor_id"],
                "additionalProperties": False,
            },
        },
        _NONNEG,
        _gen_scene,
        lambda a: (
            f"A scene has the objects {_lit(a['objects'])} and the relations "
            f"{_lit(a['relations'])}, where [s, r, o] means object s is r object o. How many "
            f"objects match the query {_lit(a['query'])}? An object matches when its color "
            "and shape equal the query's (null matches any) and, if the relation is not "
            "null, [its id, relation, anchor_id] is one of the listed relations."
        ),
        _solve_scene,
    ),
]

FAMILIES: dict[str, Family] = {f.name: f for f in _ALL}
if len(FAMILIES) != len(_ALL):  # pragma: no cover - a duplicated name is a bug here
    raise RuntimeError("duplicate family names")


def by_domain(domain: str) -> list[Family]:
    """The families of one domain (``"train"``, ``"heldout"`` or ``"ood"``), in a fixed order."""
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; valid domains: {', '.join(DOMAINS)}")
    return [f for f in _ALL if f.domain == domain]


# ------------------------------------------------------------------------ instances


def _rng(*key: Any) -> np.random.Generator:
    digest = hashlib.sha256(json.dumps(key, separators=(",", ":")).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "big"))


def _make(family: Family, rng: np.random.Generator, level: int) -> dict[str, Any]:
    args = family.generate(rng, level)
    return {
        "args": args,
        "question": family.render(args),
        "answer": family.solve(args),
        "level": level,
        "family": family.name,
    }


def _check(seed: int, level: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")


def instance(family: Family, seed: int, level: int) -> dict[str, Any]:
    """``{"args", "question", "answer", "level", "family"}``, fully determined by
    ``(family.name, seed, level)``."""
    _check(seed, level)
    return _make(family, _rng(family.name, seed, level), level)


def instances(
    family: Family, seed: int, count: int, level: int | None = None
) -> list[dict[str, Any]]:
    """``count`` instances; ``level=None`` cycles 1, 2, 3. Each draws from its own stream
    keyed by ``(family.name, seed, level, index)``; an argument set already in the list is
    redrawn (up to 20 times, after which a repeat is kept: tiny level-1 spaces)."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index in range(count):
        lvl = LEVELS[index % len(LEVELS)] if level is None else level
        _check(seed, lvl)
        for attempt in range(20):
            item = _make(family, _rng(family.name, seed, lvl, index, attempt), lvl)
            key = _lit(item["args"])
            if key not in seen:
                break
        seen.add(key)
        out.append(item)
    return out


# ------------------------------------------------------------------------- verifier


def verify(answer: Any, expected: Any) -> bool:
    """Strict exact check: the same JSON type at every depth (a bool is not an int, an int is
    not a float, ``"3"`` is not ``3``), equal values, lists in order, dicts with equal key
    sets. No substring or numeric-tolerance credit: ``verify(6.0, 6)`` is False."""
    kind = json_kind(expected)
    if kind is None or json_kind(answer) != kind:
        return False
    if kind == "array":
        return len(answer) == len(expected) and all(
            verify(a, e) for a, e in zip(answer, expected, strict=True)
        )
    if kind == "object":
        if set(answer) != set(expected):
            return False
        return all(verify(answer[k], expected[k]) for k in expected)
    return bool(answer == expected)

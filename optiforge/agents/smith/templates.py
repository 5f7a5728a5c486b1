"""SMITH's no-learning baseline: hand-written template tools, matched by task signature.

A template covers one procedural family of the *training* set (none covers a held-out or
out-of-domain family: that is the point of the baseline). It matches a build task when
every example question contains its keywords and the kinds of the JSON literals the
question states (``literals``) start with its signature. Its code runs only in the
sandbox, like any tool.

``literals`` and ``fill`` are also the offline use policy's slot filler: a question's
JSON literals, in order, go to a tool's schema properties, each to the first remaining
literal of a compatible JSON type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from optiforge.solvers.tools import json_kind

_DEC = json.JSONDecoder()


@dataclass(frozen=True)
class Template:
    name: str
    description: str
    keywords: tuple[str, ...]
    parameters: dict[str, Any]
    code: str

    @property
    def signature(self) -> list[str]:
        return [_schema_kind(p) for p in self.parameters["properties"].values()]

    def tool(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters,
                "code": self.code}  # fmt: skip


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)}


INT = {"type": "integer"}
STR = {"type": "string"}
INTS = {"type": "array", "items": {"type": "integer"}}

TEMPLATES: list[Template] = [
    Template("gcd_of_numbers", "Greatest common divisor of a list of integers.",
             ("greatest common divisor",), _obj(numbers=INTS),
             "import math\n\ndef gcd_of_numbers(numbers):\n    g = 0\n    for x in numbers:\n"
             "        g = math.gcd(g, x)\n    return g\n"),
    Template("modular_power", "base raised to exponent, modulo modulus.", ("power", "modulo"),
             _obj(base=INT, exponent=INT, modulus=INT),
             "def modular_power(base, exponent, modulus):\n    return pow(base, exponent, modulus)\n"),
    Template("to_base", "An integer written in a base from 2 to 16 (digits 0-9a-f).",
             ("written in base",), _obj(number=INT, base=INT),
             "def to_base(number, base):\n    digits = '0123456789abcdef'\n    if number == 0:\n"
             "        return '0'\n    sign, n, out = '-' if number < 0 else '', abs(number), ''\n"
             "    while n:\n        n, r = divmod(n, base)\n        out = digits[r] + out\n"
             "    return sign + out\n"),
    Template("count_primes", "Number of primes in [lo, hi], both ends included.",
             ("prime",), _obj(lo=INT, hi=INT),
             "def count_primes(lo, hi):\n    def is_prime(n):\n        if n < 2:\n            return False\n"
             "        i = 2\n        while i * i <= n:\n            if n % i == 0:\n                return False\n"
             "            i += 1\n        return True\n    return sum(1 for n in range(lo, hi + 1) if is_prime(n))\n"),
    Template("run_length_encode", "Run-length encoding: each run as the letter then its length.",
             ("run-length",), _obj(text=STR),
             "def run_length_encode(text):\n    out, i = [], 0\n    while i < len(text):\n        j = i\n"
             "        while j < len(text) and text[j] == text[i]:\n            j += 1\n"
             "        out.append(text[i] + str(j - i))\n        i = j\n    return ''.join(out)\n"),
    Template("balanced_brackets", "Whether a string of ()[]{} brackets is balanced.",
             ("bracket", "balanced"), _obj(brackets=STR),
             "def balanced_brackets(brackets):\n    pairs = {')': '(', ']': '[', '}': '{'}\n    stack = []\n"
             "    for ch in brackets:\n        if ch in '([{':\n            stack.append(ch)\n"
             "        elif not stack or stack.pop() != pairs[ch]:\n            return False\n"
             "    return not stack\n"),
    Template("roman_numeral", "An integer 1..3999 in standard-form Roman numerals.", ("roman",),
             _obj(number=INT),
             "def roman_numeral(number):\n    vals = [(1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), "
             "(100, 'C'), (90, 'XC'),\n            (50, 'L'), (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'), "
             "(4, 'IV'), (1, 'I')]\n    out = ''\n    for v, s in vals:\n        while number >= v:\n"
             "            out += s\n            number -= v\n    return out\n"),
    Template("merge_intervals", "Closed [lo, hi] intervals merged into sorted disjoint ones.",
             ("intervals", "merge"), _obj(intervals={"type": "array", "items": INTS}),
             "def merge_intervals(intervals):\n    out = []\n    for lo, hi in sorted(intervals):\n"
             "        if out and lo <= out[-1][1]:\n            out[-1][1] = max(out[-1][1], hi)\n"
             "        else:\n            out.append([lo, hi])\n    return out\n"),
    Template("days_between", "Days from one ISO date to another (second minus first).", ("days", "from"),
             _obj(start=STR, end=STR),
             "import datetime\n\ndef days_between(start, end):\n    d = datetime.date.fromisoformat\n"
             "    return (d(end) - d(start)).days\n"),
]  # fmt: skip


def _schema_kind(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    return t if isinstance(t, str) else "any"


def _kind(value: Any) -> str:
    return json_kind(value) or "null"


def literals(question: str) -> list[Any]:
    """The JSON literals a question states, in order (a literal inside another is part of
    it; a number glued to a letter or a hyphenated range like ``0-9`` is read as text)."""
    out: list[Any] = []
    i = 0
    while i < len(question):
        ch = question[i]
        prev = question[i - 1] if i else " "
        starts = ch in '[{"' or (ch.isdigit() or ch == "-") and not (prev.isalnum() or prev in "-.")
        if starts:
            try:
                value, end = _DEC.raw_decode(question, i)
            except json.JSONDecodeError:
                i += 1
                continue
            nxt = question[end] if end < len(question) else " "
            if (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and (nxt.isalnum() or nxt == "-")
            ):
                i = end
                continue
            out.append(value)
            i = end
            continue
        i += 1
    return out


def fill(parameters: dict[str, Any], question: str) -> dict[str, Any] | None:
    """Arguments for a tool's schema from the question's literals (see the module doc);
    None when a required property finds no literal of its type."""
    lits = literals(question)
    args: dict[str, Any] = {}
    pos = 0
    required = set(parameters.get("required", []))
    for name, schema in (parameters.get("properties") or {}).items():
        want = _schema_kind(schema)
        j = next((k for k in range(pos, len(lits)) if want in ("any", _kind(lits[k]))), None)
        if j is None:
            if name in required:
                return None
            continue
        args[name] = lits[j]
        pos = j + 1
    return args


def match(examples: list[dict[str, Any]]) -> Template | None:
    """The template whose keywords every example question contains and whose signature
    the questions' literal kinds start with."""
    for t in TEMPLATES:
        ok = True
        for ex in examples:
            q = ex["question"].lower()
            kinds = [_kind(v) for v in literals(ex["question"])]
            if not all(k in q for k in t.keywords) or kinds[: len(t.signature)] != t.signature:
                ok = False
                break
        if ok:
            return t
    return None

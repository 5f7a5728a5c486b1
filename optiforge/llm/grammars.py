"""GBNF grammars for code-shaped replies (llama.cpp's grammar format).

JSON replies of the embedded model are already held to their schema by a grammar; these
hold a *code* reply to the shape an agent parses: one fenced Python block that defines the
required function, or one fenced shell block of one command. An agent passes the text
per request as ``llm.complete(..., grammar=TEXT)``; only the local model's server
enforces it (``LocalLLM``), every other provider drops the parameter (``BaseLLM``), so a
request to a hosted model is the same with or without it.

A grammar fixes the shape, not the content: the code inside can still be wrong, so the
agent's own checks stay. Every repetition is bounded: a small model inside an unbounded
rule can loop until the token limit cuts the reply off before its closing fence.
"""

from __future__ import annotations

import re

MAX_LINES = 80
"""Lines a Python block may have after its ``def`` line."""
MAX_LINE_CHARS = 160
MAX_IMPORTS = 6
"""``import`` / ``from`` (or blank) lines allowed before the ``def`` line."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{out}"'


def python_function_block(name: str, *, preamble_lines: int = 0) -> str:
    """A reply that is exactly one ```python block: up to ``MAX_IMPORTS`` import (or
    blank) lines, or with ``preamble_lines`` > 0 that many lines of any code (constants
    the agent asks for before the function), then ``def NAME(``, then at most
    ``MAX_LINES`` lines, then the closing fence.

    Lines inside the block may not start with a backtick, so the first fence line closes it.
    """
    if not _NAME.fullmatch(name):
        raise ValueError(f"python_function_block: {name!r} is not a Python identifier")
    if preamble_lines < 0:
        raise ValueError(
            f"python_function_block: preamble_lines must be >= 0, got {preamble_lines}"
        )
    n, c = MAX_LINES, MAX_LINE_CHARS
    pre = (
        f'pre ::= (line "\\n"){{0,{preamble_lines}}}'
        if preamble_lines
        else f'pre ::= ((("import " | "from ") [^\\n]{{1,{c}}})? "\\n"){{0,{MAX_IMPORTS}}}'
    )
    return "\n".join(
        [
            f'root ::= "```python\\n" pre {gbnf_literal(f"def {name}(")} rest "\\n" body "```"',
            pre,
            f"rest ::= [^\\n]{{1,{c}}}",
            f'body ::= (line "\\n"){{0,{n}}}',
            f"line ::= ([^`\\n] [^\\n]{{0,{c}}})?",
            "",
        ]
    )


def shell_command_block() -> str:
    """A reply that is exactly one ```bash block holding one non-empty command line."""
    c = 4 * MAX_LINE_CHARS
    return "\n".join(
        [
            'root ::= "```bash\\n" cmd "\\n```"',
            f"cmd ::= [^`\\n#] [^\\n]{{0,{c}}}",
            "",
        ]
    )


_TOKEN = re.compile(
    r'\s*(?:(?P<lit>"(?:\\.|[^"\\])*")|(?P<cls>\[(?:\\.|[^\]\\])*\])|(?P<name>[A-Za-z][\w-]*)'
    r"|(?P<rep>\{\d*(?:,\d*)?\})|(?P<op>[()|?*+]))"
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "]": "]", "[": "["}


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def to_regex(grammar: str) -> re.Pattern[str]:
    """A Python regex equal to a non-recursive GBNF grammar (the subset these grammars use:
    literals, character classes, groups, ``|``, ``?``, ``*``, ``+``, ``{m,n}``): the
    check of a reply's shape, from the same text the model was held to."""
    rules: dict[str, str] = {}
    for line in grammar.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, sep, body = line.partition("::=")
            if not sep:
                raise ValueError(f"to_regex: not a rule: {line!r}")
            rules[name.strip()] = body

    def expand(name: str, depth: int) -> str:
        if depth > 20:
            raise ValueError(f"to_regex: rule {name!r} is recursive")
        body, out, pos = rules[name], [], 0
        while pos < len(body):
            m = _TOKEN.match(body, pos)
            if m is None:
                if body[pos:].strip():
                    raise ValueError(f"to_regex: cannot read {body[pos:]!r}")
                break
            pos = m.end()
            if m.group("lit"):
                out.append(re.escape(_unescape(m.group("lit")[1:-1])))
            elif m.group("cls"):
                inner = m.group("cls")[1:-1]
                neg = inner.startswith("^")
                chars = _unescape(inner[1:] if neg else inner)
                esc = "".join("\\" + ch if ch in "\\]^[" else ch for ch in chars)
                out.append(f"[{'^' if neg else ''}{esc}]")
            elif m.group("name"):
                out.append(f"(?:{expand(m.group('name'), depth + 1)})")
            else:
                out.append(m.group("rep") or m.group("op").replace("(", "(?:"))
        return "".join(out)

    return re.compile(expand("root", 0), re.DOTALL)


def matches(grammar: str, text: str) -> bool:
    """Whether ``text`` is a sentence of ``grammar`` (see ``to_regex``)."""
    return to_regex(grammar).fullmatch(text) is not None


__all__ = [
    "MAX_LINES",
    "gbnf_literal",
    "matches",
    "python_function_block",
    "shell_command_block",
    "to_regex",
]

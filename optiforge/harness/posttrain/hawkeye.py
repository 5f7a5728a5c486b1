"""Hawkeye: no rows yet (``rows`` raises ``NotImplementedError``; see its message).

Measured with SmolLM2's tokenizer on the ``--model local`` cassette
(``benchmarks/cassettes/local/hawkeye.jsonl``): Hawkeye's prompts alone are 1298-1984
tokens (the task, the roofline, the current kernel, the strategy's expert example, the
rules), so no (prompt, reply) pair fits the CPU training budget of about 768 tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from optiforge.harness.posttrain.data import Row, Verdict

WHY = (
    "hawkeye: not built. Its --model local prompts are 1298-1984 tokens before any reply "
    "(over the ~768-token CPU budget), the taxonomy's expert examples are written for other ops "
    "than the dev tasks' (not valid replies to a dev task's prompt as they stand), and the autotuned "
    "variants change PARAMS only, not the strategy each prompt asks for; verifying either needs "
    "TRITON_INTERPRET runs per candidate. Left for a GPU session."
)


def rows(
    scale: int = 1, progress: Callable[[str], None] | None = None, limit: int | None = None
) -> Iterator[Row]:
    raise NotImplementedError(WHY)


def verify(
    task: str, messages: list[dict[str, Any]], reply: str, sandbox: Any | None = None
) -> Verdict:
    raise NotImplementedError(WHY)


def heldout_texts() -> list[dict[str, Any]]:
    return []

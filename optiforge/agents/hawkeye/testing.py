"""A scripted kernel writer for Hawkeye (tests and ``benchmarks/hawkeye_eval.py``).

``example_copier()`` answers Hawkeye's prompt the way a model that only knows the expert
examples would: when the example shown for the requested strategy computes the task's op
(a matmul example on a matmul task, the fused matmul + bias + ReLU example on that task,
the staged softmax on a softmax task, the vectorized axpby on an axpby task) it answers
the example's kernel; otherwise it answers the current best kernel unchanged (claiming the
strategy without applying it, which the harness's strategy check then flags). It calls no
tools. It is a scripted model, labelled so: its numbers measure the loop and the checks,
not a model's skill.
"""

from __future__ import annotations

import re
from typing import Any

from optiforge.agents.hawkeye.strategies import TAXONOMY

EXAMPLE_OPS: dict[str, tuple[str, ...]] = {
    "tiled_matmul": ("matmul",), "pipelined_matmul": ("matmul",), "persistent_matmul": ("matmul",),
    "split_k_matmul": ("matmul",), "block_ptr_matmul": ("matmul",), "fused_matmul_bias_relu": ("matmul_bias_relu",),
    "staged_softmax": ("softmax",), "vectorized_axpby": ("axpby",),
}  # fmt: skip
"""Example module -> the kernelarena ops its ``launch`` computes with the same inputs."""
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _op_of(prompt: str) -> str | None:
    from optiforge.evals.registry import get_benchmark

    return next(
        (t.op for t in get_benchmark("kernelarena").tasks("dev") if t.description in prompt), None
    )


def example_copier() -> Any:
    """A ``FunctionLLM`` writing as the module doc says."""
    from optiforge.testing.scripted import FunctionLLM

    def write(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        prompt = str(messages[-1]["content"])
        blocks = _BLOCK.findall(prompt)
        current = blocks[0] if blocks else ""
        title = re.search(r"Apply the strategy \*\*(.+?)\*\*", prompt)
        arch = re.search(r"Target architecture: (\w+)\.", prompt)
        strategy = next((s for s in TAXONOMY.values() if title and s.title == title.group(1)), None)
        op = _op_of(prompt)
        if strategy is not None and arch is not None and len(blocks) > 1:
            entry = strategy.archs.get(arch.group(1))
            if entry is not None and entry.example and op in EXAMPLE_OPS.get(entry.example, ()):
                return f"Applying {strategy.title}:\n```python\n{blocks[1]}```"
        return f"Keeping the kernel:\n```python\n{current}```"

    return FunctionLLM(write, model="scripted-example-copier")


__all__ = ["EXAMPLE_OPS", "example_copier"]

"""Post-training glue for the embedded model (issue 41).

- ``data``: verified (prompt, reply) rows per agent and reply format (``build_dataset``,
  ``write_dataset``) and ``verify_reply``, the check that admitted them (part C's reward);
- ``weights``: the shipped GGUF into torch and back through llama.cpp's converter;
- ``train``: SFT with HALO, then GRPO with verified rewards, then the GGUF and its card;
- ``capture``: the exact requests an agent sends to ``--model local``;
- one module per agent source (``evolve``, ``smith``, ...): its rows, its ``verify``
  and its held-out texts (for the leakage test).
"""

from optiforge.harness.posttrain.data import (
    SOURCES,
    Row,
    Summary,
    Verdict,
    build_dataset,
    dedup,
    heldout_texts,
    read_rows,
    verify_reply,
    write_dataset,
)

__all__ = [
    "SOURCES",
    "Row",
    "Summary",
    "Verdict",
    "build_dataset",
    "dedup",
    "heldout_texts",
    "read_rows",
    "verify_reply",
    "write_dataset",
]

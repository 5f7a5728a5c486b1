"""How a sandboxed run starts: the trusted one-line boot, the compiled init it reads, the
fresh uid/gid a run gets. Shared by cold runs (``local``) and warm ones (``warm``), which
both import it (``local`` imports ``warm``, never the other way).
"""

from __future__ import annotations

import functools
import marshal
import random
from pathlib import Path

UID_RANGE = (2_000_000_000, 2_100_000_000)
"""Fresh per-run uids/gids are drawn from here (no real account lives there)."""

BOOT = (
    # trusted: reads the sandbox init's compiled code (written by the parent) from stdin
    "import sys,marshal;r=sys.stdin.buffer.read;"
    "exec(marshal.loads(r(int.from_bytes(r(8),'little'))))"
)


@functools.cache
def init_code() -> bytes:
    """The compiled sandbox init (``_init.py``), marshalled once per process."""
    src = Path(__file__).with_name("_init.py")
    return marshal.dumps(compile(src.read_text(), str(src), "exec"))


def fresh_id() -> int:
    """A uid/gid for one run, drawn from ``UID_RANGE``."""
    return random.SystemRandom().randrange(*UID_RANGE)

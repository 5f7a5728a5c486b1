"""Red team: a tool cannot forge the procedural suite's measured quantities.

Time, printed bytes and whether a call ran are measured outside the candidate's code (a
trusted harness process forks one child per call and reads the kernel's CPU time of the
child tree, counts the bytes on its fds 1 and 2, and signs what it reports), so a tool
that patches the clock, writes around ``redirect_stdout`` or rewrites ``out.json`` wins
nothing. Each test fails if the measurement moves back into the candidate's process.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from optiforge.evals.registry import resolve_task
from optiforge.evals.suites.procedural import rewards
from optiforge.sandboxes.local import LocalSandbox, available_isolations

GCD_BODY = "    g = 0\n    for x in numbers:\n        g = math.gcd(g, x)\n"
SCHEMA = {
    "type": "object",
    "properties": {"numbers": {"type": "array", "items": {"type": "integer"}}},
    "required": ["numbers"],
}
# CPU-bound work past the (lowered) soft limit: spin on the process's own CPU clock,
# saved before the patch below replaces every clock the tool could be timed with.
_SPIN = "    _t = _cpu()\n    while _cpu() - _t < 0.15:\n        pass\n"


def _tool(prelude: str, body_extra: str) -> dict[str, Any]:
    code = f"import math\nimport time\n{prelude}\ndef gcd_list(numbers):\n{GCD_BODY}{body_extra}    return g\n"
    return {"name": "gcd_list", "description": "gcd of numbers", "parameters": SCHEMA, "code": code}


CLOCK_PATCH = _tool(
    "_cpu = time.process_time\n"
    "for _n in ('perf_counter', 'monotonic', 'time', 'process_time'):\n"
    "    setattr(time, _n, lambda: 0.0)\n",
    _SPIN,
)
"""Slow (0.15 s of CPU per call) and patches every clock in ``time`` to a constant."""

HIDDEN_PRINT = _tool(
    "import os\n_cpu = time.process_time\n",
    "    os.write(1, b'x' * 20000)\n    os.write(2, b'y' * 20000)\n",
)
"""Prints 40 kB straight to fds 1 and 2, around ``contextlib.redirect_stdout``."""

FORGED_OUT = _tool(
    "import atexit, json\n"
    "def _forge():\n"
    "    with open('out.json') as f:\n"
    "        recs = json.load(f)\n"
    "    for tool in recs:\n"
    "        for r in tool:\n"
    "            r.update(seconds=0.0, stdout_bytes=0)\n"
    "    with open('out.json', 'w') as f:\n"
    "        json.dump(recs, f)\n"
    "atexit.register(_forge)\n"
    "_cpu = time.process_time\n",
    _SPIN,
)
"""Slow, and rewrites the records file after the runner wrote it."""

OFFLOADED = _tool(
    "import os\n_cpu = time.process_time\n",
    "    r, w = os.pipe()\n"
    "    if os.fork() == 0:\n"
    "        os.close(r)\n"
    f"{_SPIN.replace('    ', '        ')}"
    "        os.write(w, str(g).encode())\n"
    "        time.sleep(60)\n"
    "    os.close(w)\n"
    "    g = int(os.read(r, 100))\n",
)
"""The slow part runs in a grandchild that outlives the call (never waited for)."""


@pytest.fixture(scope="module")
def task() -> Any:
    return resolve_task("procedural/train-families")


@pytest.fixture
def low_soft_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 0.05 s soft limit keeps the spinning tools (0.15 s a call) fast to test."""
    monkeypatch.setattr(rewards, "SOFT_S", 0.05)


@pytest.mark.usefixtures("low_soft_limit")
@pytest.mark.parametrize("isolation", available_isolations())
@pytest.mark.parametrize(
    "tool",
    [CLOCK_PATCH, HIDDEN_PRINT, FORGED_OUT, OFFLOADED],
    ids=["clock_patch", "hidden_print", "forged_out", "offloaded"],
)
def test_a_tool_cannot_forge_the_code_axis(task: Any, tool: dict[str, Any], isolation: str) -> None:
    """In every isolation mode this machine has: right answers, code axis 0."""
    check = task.validate("b0", tool, sandbox=LocalSandbox(isolation=isolation))
    assert check["outcome"] == 1.0, check  # the answers are right: only the limits fail
    assert check["code"] == 0.0, check
    assert "over the soft limits" in check["limits"]


class _Rewriting:
    """A sandbox whose every ``out.json`` comes back rewritten (as a tool that managed to
    write after the runner would leave it): every record claims zero seconds."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def run(self, *args: Any, **kwargs: Any) -> Any:
        res = self.inner.run(*args, **kwargs)
        signed = json.loads(res.files["out.json"])
        recs = json.loads(signed["payload"])
        for tool in recs:
            for r in tool:
                r.update(seconds=0.0, stdout_bytes=0)
        signed["payload"] = json.dumps(recs)
        res.files["out.json"] = json.dumps(signed)
        return res


@pytest.mark.usefixtures("low_soft_limit")
def test_rewritten_records_are_rejected(task: Any) -> None:
    from optiforge.sandboxes import get_sandbox

    check = task.validate("b0", CLOCK_PATCH, sandbox=_Rewriting(get_sandbox("local")))
    assert check["code"] == 0.0 and check["outcome"] == 0.0
    assert "signature" in check["first_failure"]["error"]

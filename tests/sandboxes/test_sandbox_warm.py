"""Warm sandboxed workers: runs forked from a zygote keep every clause of the promise."""

from __future__ import annotations

import dataclasses
import pickle
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from optiforge.evals.suites.funcfit import FuncFitBenchmark
from optiforge.sandboxes import LocalSandbox, get_sandbox
from optiforge.sandboxes.redteam import ATTACKS, WARM_ATTACKS, red_team
from optiforge.sandboxes.warm import warm_unavailable_reason

PY = sys.executable
_PROBE = LocalSandbox()
WHY_NOT = warm_unavailable_reason(_PROBE)
needs_warm = pytest.mark.skipif(WHY_NOT is not None, reason=f"no warm mode here: {WHY_NOT}")


@pytest.fixture(scope="module")
def wsb() -> Iterator[LocalSandbox]:
    sb = LocalSandbox(warm=["numpy"], max_procs=32, tmpfs_mb=64)
    yield sb
    sb.close()


@needs_warm
def test_warm_run_results_and_report(wsb: LocalSandbox) -> None:
    r = wsb.run([PY, "-c", "import sys, numpy; print(numpy.ones(3).sum(), sys.argv)"])
    assert r.ok and r.stdout.split()[0] == "3.0" and "['-c']" in r.stdout, r.stderr
    assert r.protections.warm and not r.protections.unmet()
    assert r.protections.network_how == "netns-unshare"
    assert wsb.protections().warm and not wsb.protections().unmet()


@needs_warm
def test_warm_script_files_exit_codes_and_tracebacks(wsb: LocalSandbox) -> None:
    code = textwrap.dedent(
        """
        import sys, os
        open("out.txt", "w").write(open("in.txt").read() + "!")
        print(sys.argv, os.getcwd() == os.environ["HOME"], sys.path[0] == os.getcwd())
        sys.exit(int(sys.argv[1]))
        """
    )
    r = wsb.run([PY, "s.py", "3"], files={"s.py": code, "in.txt": "hi"}, collect=["out.txt"])
    assert r.returncode == 3 and r.files["out.txt"] == "hi!", r.stderr
    assert "['s.py', '3'] True True" in r.stdout
    r = wsb.run([PY, "-c", "def g():\n    1/0\ng()"])
    assert r.returncode == 1 and "ZeroDivisionError" in r.stderr and "_init" not in r.stderr
    r = wsb.run([PY, "-m", "json.tool", "in.txt"], files={"in.txt": '{"a": 1}'})
    assert r.ok and '"a": 1' in r.stdout, r.stderr
    r = wsb.run([PY, "-c", "import atexit; atexit.register(lambda: print('bye'))"])
    assert r.ok and r.stdout == "bye\n"


@needs_warm
def test_warm_limits_apply_per_run(wsb: LocalSandbox, token: str, assert_no_leftovers) -> None:
    r = wsb.run([PY, "-c", f"while True: pass  # {token}"], timeout_s=0.8)
    # the loop never ends by itself: the bound is generous for a loaded machine
    assert r.timed_out and r.killed_by == "timeout" and r.duration_s < 15
    r = wsb.run([PY, "-c", "b = bytearray(4 * 1024**3)"], memory_mb=512)
    assert r.killed_by == "memory" and "MemoryError" in r.stderr
    r = wsb.run([PY, "-c", "import os; print(os.getuid())"])
    s = wsb.run([PY, "-c", "import os; print(os.getuid())"])
    assert r.stdout != s.stdout and int(r.stdout) >= 2_000_000_000  # a fresh uid per run
    assert wsb.run([PY, "-c", "print('still serving')"]).stdout == "still serving\n"
    assert_no_leftovers(token)


@needs_warm
def test_not_python_or_network_runs_cold(wsb: LocalSandbox) -> None:
    assert not wsb.run("echo hi").protections.warm
    assert not wsb.run([PY, "-c", "pass"], network=True).protections.warm
    assert not wsb.run([PY, "-u", "-c", "pass"]).protections.warm
    assert wsb.run(["python", "-c", "pass"]).protections.warm  # `python` is the sandbox's own


def test_falls_back_to_cold_where_the_host_cannot_isolate_forks() -> None:
    sb = LocalSandbox(warm=["numpy"])
    sb.host = dataclasses.replace(sb.host, is_root=False)
    assert warm_unavailable_reason(sb) is not None
    cold = LocalSandbox(warm=["numpy"], isolation="none")
    assert not cold.warm_active()
    assert any("warm unavailable" in n for n in cold.protections().notes)
    r = cold.run([PY, "-c", "print(1)"])
    assert r.ok and not r.protections.warm


@needs_warm
def test_a_zygote_that_cannot_start_falls_back() -> None:
    sb = LocalSandbox(warm=["optiforge_no_such_module"])
    r = sb.run([PY, "-c", "print('cold')"])
    assert r.ok and r.stdout == "cold\n" and not r.protections.warm
    assert any("warm unavailable" in n for n in r.protections.notes)
    sb.close()


@needs_warm
def test_pickled_copy_starts_its_own_zygote(wsb: LocalSandbox) -> None:
    copy = pickle.loads(pickle.dumps(wsb))
    assert copy.run([PY, "-c", "print(2)"]).protections.warm
    assert copy._warm_pool is not wsb._warm_pool
    copy.close()


@needs_warm
def test_memory_scan_control_finds_a_needle_in_its_own_run(wsb: LocalSandbox) -> None:
    """The scanner of warm_memory_scan does see what is in memory (so its 0 hits mean it)."""
    from optiforge.sandboxes import redteam

    class Once:
        python = PY

        def run(self, cmd: list[str], **kw: Any) -> Any:
            if "needles" in cmd[2]:  # plant the full needle in the scanning run itself
                cmd = [cmd[0], "-c", "planted = 'optiforge-rt-code-' + TAG + '-mark'\n" + cmd[2]]
                cmd[2] = cmd[2].replace("TAG", repr(self.tag))
            return wsb.run(cmd, **kw)

    fake = Once()
    fake.tag = "ctl123"  # type: ignore[attr-defined]
    ctx = redteam.Ctx(tag="ctl123", victim_pid=1, secret="sk-none", python=PY)
    contained, detail = redteam.warm_memory_scan(fake, ctx)
    assert not contained and "(0, 0)" not in detail, detail


@needs_warm
@pytest.mark.parametrize("attack", [a.name for a in ATTACKS + WARM_ATTACKS])
def test_attack_warm(wsb: LocalSandbox, attack: str) -> None:
    """Every attack of the battery and every warm-only attack, contained in warm mode."""
    (result,) = red_team(wsb, only=[attack], warm=True)
    assert result.passed, f"warm/{attack}: {result.detail}"
    assert not wsb.protections().unmet()


@needs_warm
def test_funcfit_scores_the_same_warm_and_cold(wsb: LocalSandbox) -> None:
    task = FuncFitBenchmark().tasks("dev")[0]
    cand = {"code": "def f(x):\n    return 3*x**2 - 2*x + 1.5\n"}
    cold = task.evaluate(cand, LocalSandbox())
    warm = task.evaluate(cand, wsb)
    assert cold.passed and warm.passed and cold.value == pytest.approx(warm.value)
    assert warm.value == pytest.approx(0.25)
    bad = task.evaluate({"code": "raise SystemExit(4)"}, wsb)
    assert not bad.passed


def test_funcfit_runs_the_sandboxes_own_interpreter() -> None:
    seen: list[list[str]] = []

    class Recorder:
        python = "/opt/some/venv/bin/python"

        def run(self, cmd: list[str], **kw: Any) -> Any:
            seen.append(cmd)
            return LocalSandbox().run([PY, *cmd[1:]], **kw)

    FuncFitBenchmark().tasks("dev")[0].evaluate({"code": "def f(x): return x"}, Recorder())
    assert seen[0][0] == "/opt/some/venv/bin/python"


def test_get_sandbox_accepts_warm() -> None:
    sb = get_sandbox("local", warm=["numpy"])
    assert isinstance(sb, LocalSandbox) and sb.warm == ["numpy"]
    sb.close()  # type: ignore[attr-defined]


def test_threads_share_one_warm_sandbox_safely() -> None:
    """The thread executor (the default for --workers) runs candidates concurrently
    through one warm sandbox: every result is its own candidate's."""
    from optiforge.sandboxes import LocalSandbox, ThreadExecutor

    sb = LocalSandbox(warm=["numpy"])
    try:
        with ThreadExecutor(4) as ex:
            codes = [f"import numpy as np; print({i} * 7, int(np.int64({i})))" for i in range(16)]
            results = ex.map(lambda c: sb.run(["python", "-c", c], timeout_s=60), codes)
        assert [r.stdout.split() for r in results] == [[str(i * 7), str(i)] for i in range(16)]
        assert all(r.returncode == 0 and r.protections.warm for r in results)
    finally:
        sb.close()

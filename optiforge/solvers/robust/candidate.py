"""Run a candidate counterpart program in a sandbox and verify what it prints.

I/O protocol for candidate programs (what an LLM is told):

- The program is one Python file (``candidate.py``), run as ``python candidate.py`` in
  a fresh working directory with no network. cvxpy, numpy and scipy are importable.
- The directory holds ``instance.json``: the ``ROProblem`` JSON (fields ``n``,
  ``lower``/``upper`` (lists, ``null`` = unbounded), ``objective`` {``c``, ``sense``
  "min"|"max", ``constant``, ``Q`` or null, ``uncertainty`` or null}, ``constraints``
  [{``a``, ``b``, ``sense`` "<="|">="|"==", ``uncertainty`` or null}],
  ``soc_constraints`` [{``A``, ``b``, ``c``, ``d``}] meaning ``||A x + b||_2 <= c^T x + d``).
  An uncertain row (``a`` its listed coefficients, ``a_bar``) must hold for every
  ``a = a_bar + P z`` with ``z`` in the set ``Z``; an uncertain objective ``c = c_bar +
  P z`` is valued at its worst case over ``Z``. ``P`` is ``n x k`` (list of ``n`` rows).
  Set objects carry ``type``:
  - box {P, rho}: ``Z = {z : max_i |z_i| <= rho}``;
  - ellipsoidal {P, rho}: ``Z = {z : ||z||_2 <= rho}``;
  - polyhedral {P, D, d}: ``Z = {z : D z <= d}`` (``D`` is ``m x k``, ``d`` length ``m``);
  - budget {delta, gamma} (Bertsimas-Sim; no ``P``): each coefficient may deviate,
    ``a_j = a_bar_j + delta_j z_j`` with ``|z_j| <= 1`` and ``sum_j |z_j| <= gamma``:
    at most ``gamma`` coefficients (fractionally) at their extremes, so ``P =
    diag(delta)``;
  - intersection {P, parts}: ``z`` in every part, each ``{type: norm_ball, norm:
    1|2|"inf", rho}`` (``||z||_norm <= rho``) or ``{type: polyhedron, D, d}``.
- The program must print, as its LAST line of stdout, one JSON object
  ``{"x": [x_1, ..., x_n], "objective": f}`` where ``x`` is its robust solution and
  ``f`` the robust (worst-case) objective value at ``x``. Anything else may be printed
  before that line. Exit code 0.
- The harness ignores the program's own claims beyond that line: it recomputes the
  objective at ``x``, checks robust feasibility row by row and compares with the
  reference optimum (``verify``).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Protocol

from optiforge.errors import SandboxError
from optiforge.solvers.robust.model import ROProblem
from optiforge.solvers.robust.verify import (
    DEFAULT_ABS_TOL,
    DEFAULT_FEAS_TOL,
    DEFAULT_REL_TOL,
    Verdict,
    verify,
)


class ExecResultLike(Protocol):
    """What ``verify_candidate_code`` reads from a sandbox result."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool


class SandboxLike(Protocol):
    """The ``optiforge.sandboxes.Sandbox`` contract, as far as this module needs it."""

    def run(
        self,
        cmd: list[str],
        *,
        files: dict[str, str | bytes] | None,
        timeout_s: float,
        memory_mb: int,
        network: bool = False,
    ) -> Any: ...


_WORKDIR_PATH = re.compile(r'File "(?:[^"]*/)?([^"/]+)"')
"""A traceback line's file path; the directory part is dropped."""


def parse_candidate_output(stdout: str | bytes) -> dict[str, Any] | None:
    """The last stdout line that is a JSON object with ``x`` and ``objective``, else ``None``."""
    if isinstance(stdout, bytes):
        stdout = stdout.decode("utf-8", errors="replace")
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "x" in obj and "objective" in obj:
            return obj
        return None
    return None


def _rejected(reason: str, rel_tol: float, abs_tol: float, feas_tol: float) -> Verdict:
    return Verdict(
        correct=False,
        robust_feasible=False,
        nominal_feasible=False,
        objective_consistent=False,
        objective_match=False,
        reasons=[reason],
        rel_tol=rel_tol,
        abs_tol=abs_tol,
        feas_tol=feas_tol,
    )


def verify_candidate_code(
    problem: ROProblem,
    code: str,
    sandbox: SandboxLike | None = None,
    *,
    reference_objective: float | None = None,
    timeout_s: float = 60.0,
    memory_mb: int = 2048,
    python: str = sys.executable,
    rel_tol: float = DEFAULT_REL_TOL,
    abs_tol: float = DEFAULT_ABS_TOL,
    feas_tol: float = DEFAULT_FEAS_TOL,
    instance_json: str | None = None,
) -> Verdict:
    """Run candidate ``code`` (see the module's I/O protocol) in ``sandbox``; verify its answer.

    instance_json: the ``instance.json`` the program reads (default ``problem``'s JSON).
    A text-only task passes the model the agent wrote, so the ground truth ``problem`` is
    never shown to the program; the answer is still verified against ``problem``.
    sandbox: anything with ``run(cmd, *, files, timeout_s, memory_mb, network)``
    returning ``returncode/stdout/stderr/timed_out``; ``None`` raises ``SandboxError``
    (candidate code is untrusted and never runs outside a sandbox).
    python: interpreter used inside the sandbox (must see cvxpy).
    """
    if sandbox is None:
        raise SandboxError("verify_candidate_code needs a sandbox: candidate code is untrusted")
    tol = {"rel_tol": rel_tol, "abs_tol": abs_tol, "feas_tol": feas_tol}
    data = problem.to_json() if instance_json is None else instance_json
    files: dict[str, str | bytes] = {"candidate.py": code, "instance.json": data}
    res = sandbox.run(
        [python, "candidate.py"],
        files=files,
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        network=False,
    )
    if getattr(res, "timed_out", False):
        return _rejected(f"candidate program timed out after {timeout_s:g} s", **tol)
    if res.returncode != 0:
        err = res.stderr.decode() if isinstance(res.stderr, bytes) else str(res.stderr)
        # Tracebacks name the run's work dir, a fresh random path: keep the file name only,
        # so the same failure gives the same reason (and the same re-ask prompt) every run.
        tail = _WORKDIR_PATH.sub(r'File "\1"', " | ".join(err.strip().splitlines()[-3:]))
        return _rejected(f"candidate program failed: exit code {res.returncode}: {tail}", **tol)
    out = parse_candidate_output(res.stdout)
    if out is None:
        return _rejected(
            'candidate output has no final JSON line {"x": [...], "objective": f}', **tol
        )
    objective = out["objective"]
    if not isinstance(objective, int | float) or isinstance(objective, bool):
        return _rejected("malformed candidate: objective is not a number", **tol)
    return verify(
        problem,
        out["x"],
        float(objective),
        reference_objective=reference_objective,
        rel_tol=rel_tol,
        abs_tol=abs_tol,
        feas_tol=feas_tol,
    )

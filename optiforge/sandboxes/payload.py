"""Ship trusted library code into a sandbox run as plain files.

A sandbox sees the interpreter and its third-party libraries, never the optiforge
package itself (its suites hold answer keys and reference solutions). A harness program
that needs a piece of optiforge inside the sandbox (the GP code, say) gets exactly that
piece as files of the run: ``package_files("optiforge.errors", "optiforge.solvers.gp")``
returns ``{relative path: source}`` for the named modules or packages plus the
``__init__.py`` of every parent package, ready for ``Sandbox.run(files=...)``. The run's
own work dir is on ``sys.path`` (``python -m pkg.mod`` or a script there), so the copies
import under their usual names.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from optiforge.errors import SandboxError

_ROOT = Path(__file__).resolve().parents[1]
"""The ``optiforge`` package directory."""

_FORBIDDEN = ("optiforge.evals", "optiforge.agents", "optiforge.testing")
"""Packages that hold tasks, answer keys or reference solutions: never shipped."""


def package_files(*modules: str) -> dict[str, str]:
    """``{work-dir relative path: source}`` for ``modules`` (dotted names) and their parents.

    A package brings every ``.py`` file under it; a module brings its one file. Shipping
    anything under ``optiforge.evals``, ``optiforge.agents`` or ``optiforge.testing`` is
    refused: those hold what a candidate must not read.
    """
    out: dict[str, str] = {}
    for name in modules:
        out.update(_files_of(name))
    return out


@functools.cache
def _files_of(name: str) -> dict[str, str]:
    if not (name == "optiforge" or name.startswith("optiforge.")):
        raise SandboxError(f"package_files ships optiforge modules only, not {name!r}")
    if any(name == f or name.startswith(f + ".") for f in _FORBIDDEN):
        raise SandboxError(f"{name} holds tasks or answer keys and is never shipped to a sandbox")
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SandboxError(f"no such module: {name}")
    origin = Path(spec.origin).resolve()
    base = _ROOT.parent
    files: dict[str, str] = {}
    if spec.submodule_search_locations:  # a package: all of its .py files
        for path in sorted(origin.parent.rglob("*.py")):
            files[path.relative_to(base).as_posix()] = path.read_text()
    else:
        files[origin.relative_to(base).as_posix()] = origin.read_text()
    parts = name.split(".")
    for i in range(1, len(parts)):
        init = base.joinpath(*parts[:i], "__init__.py")
        files[init.relative_to(base).as_posix()] = init.read_text()
    return files

"""Ratchets: counts that may only fall, and rules with a named allow-list.

- No import circle between optiforge modules outside ``ALLOWED_CIRCLES``. Every import
  counts: module-level, inside a function (a lazy import hides a circle, it does not close
  it) and under ``if TYPE_CHECKING:``. Close a circle by moving code.
- No import of another module's ``_private`` names (``from x import _y``, or ``m._y`` on a
  module ``m`` imported by name) outside ``ALLOWED_PRIVATE_IMPORTS``.
- The ``getattr``/``hasattr`` probes in ``optiforge/agents`` (the kit included) and
  ``optiforge/harness``, and the parameters typed exactly ``Any`` in ``optiforge/agents``,
  stay at their ceilings: above fails (declare the member on a Protocol, use the real
  type), below fails too until the ceiling is lowered to the new count (one line here).

The counting is ``benchmarks/kit_counts.py``'s (the same definitions it prints).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _kit_counts import kc

ROOT = Path(__file__).resolve().parent.parent

# ---- ceilings: lower them when a change brings a count down (never raise them) ----------
PROBES_CEILING = 70
"""getattr/hasattr calls in optiforge/agents/** and optiforge/harness/**."""
ANY_PARAMS_CEILING = 94
"""Parameters annotated exactly ``Any`` in optiforge/agents/**."""

# ---- import circles allowed, each with why (a frozenset of the circle's modules) --------
# None: issue 43 closed the last five (kit outcome/run/search, autorem x2, cli main/pipeline,
# pipelines optimize/steps/tune). A new entry needs a why no move of code can answer.
ALLOWED_CIRCLES: dict[frozenset[str], str] = {}

# ---- private imports allowed: (importing file, imported module, name) -> why --------------
ALLOWED_PRIVATE_IMPORTS: dict[tuple[str, str, str], str] = {}


@pytest.fixture(scope="module")
def checkout() -> object:
    return kc.Checkout.load(ROOT)


def test_no_import_circle_outside_the_allow_list(checkout: object) -> None:
    circles = {
        frozenset(c) for c in kc.import_circles(checkout, function_level=True, type_checking=True)
    }
    new = [sorted(c) for c in circles - set(ALLOWED_CIRCLES)]
    assert new == [], (
        "import circle(s) between modules (imports inside functions and under TYPE_CHECKING "
        "count): close each by moving code to a module both can import:\n"
        + "\n".join("  " + " <-> ".join(c) for c in new)
    )
    gone = [sorted(c) for c in set(ALLOWED_CIRCLES) - circles]
    assert gone == [], "allowed circle(s) no longer exist: remove them from ALLOWED_CIRCLES:\n" + (
        "\n".join("  " + " <-> ".join(c) for c in gone)
    )


def test_no_import_of_another_modules_private_names(checkout: object) -> None:
    found = kc.private_name_uses(checkout)
    bad = sorted(
        f"{f}:{line} uses {m}.{n}"
        for f, m, n, line in found
        if (f, m, n) not in ALLOWED_PRIVATE_IMPORTS
    )
    assert bad == [], (
        "import(s) of another module's private names: make the name public (drop the "
        "underscore) where it is shared, or move it to the module that uses it:\n" + "\n".join(bad)
    )
    used = {(f, m, n) for f, m, n, _line in found}
    stale = sorted(str(k) for k in set(ALLOWED_PRIVATE_IMPORTS) - used)
    assert stale == [], "remove from ALLOWED_PRIVATE_IMPORTS (no longer used):\n" + "\n".join(stale)


def _ratchet(name: str, count: int, ceiling: int, advice: str) -> None:
    where = f"tests/test_ratchets.py: {name}"
    assert count <= ceiling, f"{count} > {ceiling} ({where}): {advice}"
    assert count == ceiling, (
        f"the count fell to {count} (ceiling {ceiling}): lower the ratchet, set {where} = {count}"
    )


def test_probes_in_agents_harness_and_kit_only_fall(checkout: object) -> None:
    _ratchet(
        "PROBES_CEILING",
        kc.probes(checkout, "optiforge.agents", "optiforge.harness"),
        PROBES_CEILING,
        "a new getattr/hasattr probe; declare the member on the Protocol or model it reads",
    )


def test_any_parameters_in_agents_only_fall(checkout: object) -> None:
    exact, _task, _mention = kc.any_params(checkout, "optiforge.agents")
    _ratchet(
        "ANY_PARAMS_CEILING",
        exact,
        ANY_PARAMS_CEILING,
        "a new parameter typed Any; give it its real type (a task family Protocol, the config)",
    )


def test_the_circle_finder_sees_a_lazy_import_circle(tmp_path: Path) -> None:
    """The counting itself: a circle closed only by an import inside a function is found."""
    pkg = tmp_path / "optiforge"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from optiforge.b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text("def g():\n    from optiforge.a import f\n    return 1\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from optiforge.a import f\n"
    )
    (pkg / "d.py").write_text(
        "from optiforge import _e\nimport optiforge.c as cc\nx = cc._hidden\n"
    )
    (pkg / "_e.py").write_text("")
    co = kc.Checkout.load(tmp_path)
    assert kc.import_circles(co, function_level=False) == []
    assert kc.import_circles(co, function_level=True) == [["optiforge.a", "optiforge.b"]]
    found = kc.private_name_uses(co)
    assert {(f, m, n) for f, m, n, _ in found} == {("optiforge/d.py", "optiforge.c", "_hidden")}

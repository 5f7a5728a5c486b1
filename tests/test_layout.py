"""Repository layout rules that pytest itself would only report as a collection error."""

from collections import Counter
from pathlib import Path


def test_test_module_basenames_are_unique() -> None:
    # tests/ has no __init__.py files (rootdir-relative imports), so two test modules with
    # the same file name collide at collection time.
    names = Counter(p.name for p in Path(__file__).parent.rglob("*.py") if p.name != "conftest.py")
    assert [n for n, c in names.items() if c > 1] == []

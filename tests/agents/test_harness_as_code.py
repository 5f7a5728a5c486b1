"""The harness as code: files round-trip, versions, patches and diffs."""

from __future__ import annotations

from pathlib import Path

import pytest

from optiforge.agents.kit.harness import HOOKS, Harness, Patch
from optiforge.errors import ConfigError

BASE = Harness(system_prompt="You run shell commands.", instance_template="Task: {instruction}")


def test_files_round_trip_and_version(tmp_path: Path) -> None:
    folder = BASE.save(tmp_path / "h")
    assert sorted(p.name for p in folder.iterdir()) == [
        "harness.json",
        "instance_template.md",
        "system_prompt.md",
    ]
    back = Harness.load(folder)
    assert back == BASE and back.version == BASE.version
    assert BASE.apply(Patch(target="max_steps", value=20, why="long tasks")).version != BASE.version
    with pytest.raises(ConfigError, match="not a harness folder"):
        Harness.load(tmp_path)


def test_patches_set_append_remove_and_diff() -> None:
    h = BASE.apply(
        Patch(target="hooks", op="append", value="verify_before_submit", why="submitted unchecked")
    )
    assert h.hooks == ["verify_before_submit"]
    h2 = h.apply(
        Patch(target="system_prompt", op="append", value="Check the output file.", why="x")
    )
    assert h2.system_prompt.endswith("Check the output file.")
    d = h.diff(h2)
    assert "a/system_prompt.md" in d and "+Check the output file." in d and "harness.json" not in d
    assert (
        h2.apply(Patch(target="hooks", op="remove", value="verify_before_submit", why="y")).hooks
        == []
    )


@pytest.mark.parametrize(
    ("patch", "msg"),
    [
        (Patch(target="max_steps", value=0, why="x"), "invalid harness"),
        (Patch(target="hooks", op="append", value="teleport", why="x"), "invalid harness"),
        (Patch(target="instance_template", value="no placeholder", why="x"), "invalid harness"),
        (Patch(target="max_steps", op="append", value=1, why="x"), "cannot append"),
        (Patch(target="tools", op="remove", value="nope", why="x"), "cannot remove"),
    ],
)
def test_bad_patches_are_refused_with_a_reason(patch: Patch, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        BASE.apply(patch)


def test_a_patch_names_a_part_and_a_reason() -> None:
    with pytest.raises(ConfigError, match="no part 'colour'"):
        BASE.apply(Patch(target="colour", value=1, why="x"))
    with pytest.raises(ValueError):
        Patch(target="Bad Part!", value=1, why="x")
    with pytest.raises(ValueError):
        Patch(target="max_steps", value=1, why="")
    assert set(HOOKS) == {"list_files_first", "verify_before_submit", "reread_instruction"}

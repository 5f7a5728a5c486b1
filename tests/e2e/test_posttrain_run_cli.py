"""``optiforge posttrain run``: bad input is one line and a non-zero exit, before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from optiforge.cli.main import main


def test_missing_data_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ex:
        main(["posttrain", "run", "--data", str(tmp_path / "none"), "--out", str(tmp_path / "w")])
    assert ex.value.code != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "no training data" in err or "posttrain extra" in err


def test_bad_method_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ex:
        main(["posttrain", "run", "--data", str(tmp_path), "--out", str(tmp_path / "w"),
              "--method", "fancy"])  # fmt: skip
    assert ex.value.code != 0
    assert "method" in capsys.readouterr().err

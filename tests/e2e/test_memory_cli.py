"""The ``memory`` typer sub-app: stats, search, show, export, import."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from optiforge.cli.memory import app
from optiforge.errors import MemoryStoreError
from optiforge.memory import Candidate, Experience, Store

runner = CliRunner()


def _run(*args: str) -> str:
    res = runner.invoke(app, list(args), catch_exceptions=True)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    assert res.exit_code == 0, res.output
    return res.output


def test_cli_round_trip(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    s = Store(url, embedder=None)
    e = s.add_experience(
        Experience(agent="k", task_signature="conv2d nhwc", lesson="use implicit gemm")
    )
    s.add_candidate(Candidate(agent="k", task="conv2d", code="kernel()"))
    out = _run("--memory", url, "--no-embed", "stats")
    assert "experiences" in out and "fts5" in out
    out = _run("--memory", url, "--no-embed", "search", "implicit gemm", "--k", "3")
    assert e in out and "lexical" in out
    out = _run("--memory", url, "--no-embed", "show", e)
    assert "use implicit gemm" in out
    path = tmp_path / "out.jsonl"
    out = _run("--memory", url, "--no-embed", "export", str(path))
    assert "exported 2 records" in out and path.is_file()
    url2 = f"sqlite:///{tmp_path / 'n.db'}"
    assert "imported 2 records" in _run("--memory", url2, "--no-embed", "import", str(path))
    assert "skipped 2" in _run("--memory", url2, "--no-embed", "import", str(path))
    assert Store(url2, embedder=None).get(e) == s.get(e)


def test_cli_errors_are_memory_errors(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    Store(url, embedder=None).close()
    with pytest.raises(MemoryStoreError, match="unknown memory id 'exp_nope'"):
        _run("--memory", url, "--no-embed", "show", "exp_nope")
    with pytest.raises(MemoryStoreError, match="unknown --kind"):
        _run("--memory", url, "--no-embed", "search", "x", "--kind", "bogus")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("[1, 2]\n")
    with pytest.raises(MemoryStoreError, match="bad.jsonl:1: expected a JSON object"):
        _run("--memory", url, "--no-embed", "import", str(bad))


def test_cli_search_filters_by_provenance(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with Store(url, embedder=None) as s:
        trusted = s.add_experience(
            Experience(agent="k", task_signature="t", lesson="tile gemm", provenance="measured")
        )
        tainted = s.add_experience(
            Experience(agent="k", task_signature="t", lesson="tile gemm", provenance="candidate")
        )
    out = _run("--memory", url, "--no-embed", "search", "tile gemm", "--provenance", "trusted")
    assert trusted in out and tainted not in out and "measured" in out
    out = _run("--memory", url, "--no-embed", "search", "tile gemm", "--provenance", "candidate")
    assert tainted in out and trusted not in out
    with pytest.raises(MemoryStoreError, match="unknown provenance 'bogus'"):
        _run("--memory", url, "--no-embed", "search", "x", "--provenance", "bogus")


def test_read_only_commands_create_no_database(tmp_path: Path) -> None:
    """``stats`` on a memory that does not exist says so in one line (exit 0) and creates
    nothing; ``search`` / ``show`` / ``export`` fail with one line."""
    db = tmp_path / "sub" / "m.db"
    url = f"sqlite:///{db}"
    res = runner.invoke(app, ["--memory", url, "--no-embed", "stats"])
    assert res.exit_code == 0
    assert res.output.strip() == f"no memory at {db} yet (nothing has been recorded)"
    for args in (["search", "x"], ["show", "exp_x"], ["export", str(tmp_path / "o.jsonl")]):
        with pytest.raises(MemoryStoreError, match="no memory at .* yet"):
            _run("--memory", url, "--no-embed", *args)
    assert not db.exists() and not db.parent.exists()
    assert not (tmp_path / "o.jsonl").exists()

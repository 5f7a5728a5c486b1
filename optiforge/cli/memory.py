"""``optiforge memory ...``: inspect, search, export and import the experience memory.

The lead mounts ``app`` as the ``memory`` sub-command. Errors are raised as
``MemoryStoreError`` with one-line messages; the top-level CLI prints them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console
from rich.table import Table

from optiforge.errors import MemoryStoreError

if TYPE_CHECKING:  # the store (SQLAlchemy, ~0.35 s) loads when a command runs, not on --help
    from optiforge.memory.store import Store

app = typer.Typer(
    help="Inspect, search, export and import the experience memory.",
    no_args_is_help=True,
)


class _Opts:
    """Options from the group callback, shared by every sub-command."""

    def __init__(self, url: str | None, embed: bool) -> None:
        self.url = url
        self.embed = embed

    def resolved_url(self) -> str:
        from optiforge.memory.scope import scoped_url

        url = scoped_url(self.url or "global", None)
        if url is None:
            raise MemoryStoreError("--memory none: there is no memory to inspect")
        return url

    def missing(self) -> Path | None:
        """The memory's SQLite file when it does not exist yet (see ``missing_sqlite_file``)."""
        return missing_sqlite_file(self.resolved_url())

    def store(self, *, read_only: bool = False) -> Store:
        """The store; ``read_only``: a missing SQLite file is an error, not created."""
        from optiforge.memory.store import Store

        url = self.resolved_url()
        missing = missing_sqlite_file(url) if read_only else None
        if missing is not None:
            raise MemoryStoreError(f"no memory at {missing} yet (nothing has been recorded)")
        return Store(url, embedder="auto" if self.embed else None)


def missing_sqlite_file(url: str) -> Path | None:
    """The file of a SQLite ``url`` when it does not exist (None: it exists, it is
    in-memory, or the database is not SQLite). Opening a store creates the file, so a
    read-only command checks first."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        u = make_url(url)
    except ArgumentError:
        return None  # the store reports a bad URL itself
    db = u.database or ""
    if u.get_backend_name() != "sqlite" or db in ("", ":memory:") or "mode=memory" in db:
        return None
    path = Path(db).expanduser()
    return None if path.exists() else path


@app.callback()
def _main(
    ctx: typer.Context,
    memory: Annotated[
        str | None,
        typer.Option(
            "--memory",
            help="global (default: $OPTIFORGE_MEMORY or ~/.optiforge/memory.db), "
            "project:NAME, a run directory (its memory.db), or a SQLAlchemy URL.",
        ),
    ] = None,
    embed: Annotated[
        bool,
        typer.Option(
            "--embed/--no-embed",
            help="Use the bundled MiniLM model when installed (--no-embed: lexical only).",
        ),
    ] = True,
) -> None:
    """Experience memory commands."""
    ctx.obj = _Opts(memory, embed)


def _console() -> Console:
    return Console(soft_wrap=False, width=120)


def _short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


@app.command()
def stats(ctx: typer.Context) -> None:
    """Record counts, embedding coverage and back end."""
    missing = ctx.obj.missing()
    if missing is not None:  # an empty memory is a state, not an error: exit 0, create nothing
        Console(stderr=True, soft_wrap=True, highlight=False).print(
            f"no memory at {missing} yet (nothing has been recorded)"
        )
        return
    with ctx.obj.store() as store:
        st = store.stats()
    table = Table(title="optiforge memory", show_header=False)
    for key, val in st.items():
        table.add_row(key, json.dumps(val) if isinstance(val, dict) else str(val))
    _console().print(table)


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Number of results.")] = 5,
    kind: Annotated[
        str, typer.Option("--kind", help="experience | candidate | tool | block")
    ] = "experience",
    method: Annotated[str, typer.Option("--method", help="auto | embedding | lexical")] = "auto",
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's records.")] = None,
    provenance: Annotated[
        list[str] | None,
        typer.Option(
            "--provenance",
            help="Only records of this provenance (repeatable): measured | agent | distilled "
            "| candidate | unknown, or 'trusted' for measured and agent.",
        ),
    ] = None,
) -> None:
    """Top-k records most relevant to QUERY."""
    from optiforge.memory.provenance import TRUSTED
    from optiforge.memory.records import RECORD_TYPES

    if kind not in RECORD_TYPES:
        raise MemoryStoreError(f"unknown --kind {kind!r}; use one of {', '.join(RECORD_TYPES)}")
    if method not in ("auto", "embedding", "lexical"):
        raise MemoryStoreError(f"unknown --method {method!r}; use auto, embedding or lexical")
    m: Literal["auto", "embedding", "lexical"] = method  # type: ignore[assignment]
    provs: set[str] | None = None
    if provenance:
        provs = set()
        for p in provenance:
            provs |= TRUSTED if p == "trusted" else {p}
    with ctx.obj.store(read_only=True) as store:
        hits = store.search(query, k=k, kind=kind, agent=agent, method=m, provenance=provs)  # type: ignore[arg-type]
    table = Table(title=f"{len(hits)} hit(s) for {query!r}")
    for col in ("#", "score", "method", "id", "agent", "provenance", "text"):
        table.add_column(col, overflow="fold" if col == "id" else "ellipsis")
    for i, h in enumerate(hits, start=1):
        rec = h.record
        agent_name = getattr(rec, "agent", None) or getattr(rec, "author_agent", None) or ""
        table.add_row(
            str(i),
            f"{h.score:.4f}",
            h.method,
            rec.id,
            agent_name,
            rec.provenance,
            _short(rec.search_text()),
        )
    _console().print(table)


@app.command()
def show(ctx: typer.Context, record_id: Annotated[str, typer.Argument(metavar="ID")]) -> None:
    """Print one record (any kind) as JSON."""
    with ctx.obj.store(read_only=True) as store:
        rec = store.get(record_id)
    _console().print_json(rec.model_dump_json())


@app.command("export")
def export_(ctx: typer.Context, file: Annotated[Path, typer.Argument(metavar="FILE")]) -> None:
    """Write the whole memory to a JSONL FILE."""
    with ctx.obj.store(read_only=True) as store:
        counts = store.export_jsonl(file)
    _console().print(f"exported {sum(counts.values())} records to {file}: {json.dumps(counts)}")


@app.command("import")
def import_(ctx: typer.Context, file: Annotated[Path, typer.Argument(metavar="FILE")]) -> None:
    """Load a JSONL FILE (ids already present are skipped); records are re-embedded."""
    with ctx.obj.store() as store:
        counts = store.import_jsonl(file)
    added = sum(v for k, v in counts.items() if k != "skipped")
    _console().print(
        f"imported {added} records from {file} (skipped {counts['skipped']}): {json.dumps(counts)}"
    )

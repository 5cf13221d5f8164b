"""The NetBox import set: ``netbox/NN-<kind>.csv`` in NetBox's import order and ``netbox/README.md``.

Each file is one NetBox bulk import (Import button of that object's list, CSV format); the tables come
from :func:`twin.emit.netbox_objects.import_set`, which ``twin netbox push`` writes through the REST API too.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from twin.compiler.design import Design
from twin.csvfmt import table as csv_table
from twin.emit.netbox_objects import Table, long_names, tables

CHUNK = 100_000  # rows rendered at a time


def table_csv(table: Table) -> bytes:
    return csv_table(table.columns, table.rows)


def _chunks(table: Table, tally: list) -> Iterator[bytes]:
    """The table's CSV (the bytes of :func:`table_csv`: the excel dialect quotes field by field, the header is
    written once) as it is rendered, ``CHUNK`` rows at a time as its rows come (:func:`twin.emit.netbox_objects.tables`),
    never every row in memory at once; counts its rows and the names NetBox refuses into ``tally`` ([rows,
    set of names]) as it goes."""
    if isinstance(table.rows, tuple) and len(table.rows) <= CHUNK:
        tally[0] += len(table.rows)
        tally[1].update(long_names([table]))
        yield table_csv(table)
        return
    head = csv_table(table.columns, [])
    yield head
    rows = iter(table.rows)
    while chunk := tuple(islice(rows, CHUNK)):
        part = Table(table.stem, table.model, table.path, table.columns, chunk)
        tally[0] += len(chunk)
        tally[1].update(long_names([part]))
        yield table_csv(part)[len(head):]


def readme(site: str, tables: list[Table], counts: list[int] | None = None, problems: list[str] | None = None) -> str:
    """The import order; ``counts`` (the tables' rows) and ``problems`` (:func:`long_names`) where the
    tables' rows were iterators, read once."""
    lines = [
        f"# NetBox import set of {site}",
        "",
        "Load the files in this order, each through NetBox's bulk import (the object list's Import",
        "button, or the page below, format CSV). Objects are tagged `twin`; names are site-qualified.",
        "Files marked shared hold catalog objects every twin site uses: skip the rows NetBox already",
        "has (a second site's import of them is refused as a duplicate).",
        "",
        "| file | NetBox object | import page | rows |",
        "|---|---|---|---|",
    ]
    for t, n in zip(tables, counts or [len(t.rows) for t in tables], strict=True):
        lines.append(f"| `{t.stem}.csv` | {t.model}{' (shared)' if t.shared else ''} | `{t.path}` | {n} |")
    lines += ["", "Or write the whole design through the REST API, idempotently:",
              f"`TWIN_NETBOX_TOKEN=... twin netbox push sites/{site}.yaml --url URL` (or `--token-file FILE`; never the",
              "token on the command line)."]
    problems = long_names(tables) if problems is None else problems
    if problems:
        lines += ["", "NetBox will refuse these names (shorten the site name):", ""] + [f"- {p}" for p in problems]
    return "\n".join(lines) + "\n"


def emit(design: Design) -> dict[str, bytes]:
    """Every file whole (render() and diff read them; the build writes :func:`emit_stream`'s chunks)."""
    return {rel: b"".join(chunks) for rel, chunks in emit_stream(design)[1]}


def emit_stream(design: Design) -> tuple[dict[str, bytes], Iterator[tuple[str, Iterator[bytes]]]]:
    """:func:`emit` for a build writing to disk: each file as chunks of bytes written as they are rendered, the
    tables made one after another and the README last (:func:`twin.output.write_stream`), never a whole file
    in memory (the 2-plane gigawatt site's interfaces: 1.4 GB of CSV). Each file's chunks are read to the
    end before the next name is asked for (:func:`twin.build._write_emitters`)."""

    def files() -> Iterator[tuple[str, Iterator[bytes]]]:
        done, counts, problems = [], [], set()
        for t in tables(design):
            tally = [0, problems]
            yield f"netbox/{t.stem}.csv", _chunks(t, tally)
            done.append(Table(t.stem, t.model, t.path, t.columns, (), t.shared))
            counts.append(tally[0])
        if done:
            yield "netbox/README.md", iter([readme(design.name, done, counts, sorted(problems)).encode("utf-8")])

    return {}, files()


emit.stream = emit_stream  # the build's way (twin.build._write_emitters); render() and diff read emit's bytes

"""The NetBox import set: ``netbox/NN-<kind>.csv`` in NetBox's import order and ``netbox/README.md``.

Each file is one NetBox bulk import (Import button of that object's list, CSV format); the tables come
from :func:`twin.emit.netbox_objects.import_set`, which ``twin netbox push`` writes through the REST API too.
"""

from __future__ import annotations

from itertools import islice

from twin.compiler.design import Design
from twin.csvfmt import table as csv_table
from twin.emit.netbox_objects import Table, long_names, tables

CHUNK = 100_000  # rows rendered at a time


def table_csv(table: Table) -> bytes:
    return csv_table(table.columns, table.rows)


def rendered(table: Table) -> tuple[bytes, int, list[str]]:
    """(the CSV, its rows, its names NetBox refuses), rendered ``CHUNK`` rows at a time as its rows come
    (:func:`twin.emit.netbox_objects.tables`): the same bytes as :func:`table_csv` (the excel dialect
    quotes field by field; the header is written once), without every row in memory at once."""
    if isinstance(table.rows, tuple) and len(table.rows) <= CHUNK:
        return table_csv(table), len(table.rows), long_names([table])
    head = len(csv_table(table.columns, []))
    out, n, problems, rows = bytearray(csv_table(table.columns, [])), 0, set(), iter(table.rows)
    while chunk := tuple(islice(rows, CHUNK)):
        out += memoryview(table_csv(Table(table.stem, table.model, table.path, table.columns, chunk)))[head:]
        problems.update(long_names([Table(table.stem, table.model, table.path, table.columns, chunk)]))
        n += len(chunk)
    return bytes(out), n, sorted(problems)


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
    files, done, counts, problems = {}, [], [], set()
    for t in tables(design):  # each table rendered, its rows dropped, before the next is made
        files[f"netbox/{t.stem}.csv"], n, long = rendered(t)
        done.append(Table(t.stem, t.model, t.path, t.columns, (), t.shared))
        counts.append(n)
        problems.update(long)
    if not done:
        return {}
    files["netbox/README.md"] = readme(design.name, done, counts, sorted(problems)).encode("utf-8")
    return files

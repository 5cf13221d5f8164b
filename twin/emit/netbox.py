"""The NetBox import set: ``netbox/NN-<kind>.csv`` in NetBox's import order and ``netbox/README.md``.

Each file is one NetBox bulk import (Import button of that object's list, CSV format); the tables come
from :func:`twin.emit.netbox_objects.import_set`, which ``twin netbox push`` writes through the REST API too.
"""

from __future__ import annotations

from twin.compiler.design import Design
from twin.csvfmt import table as csv_table
from twin.emit.netbox_objects import Table, import_set, long_names


def table_csv(table: Table) -> bytes:
    return csv_table(table.columns, table.rows)


def readme(site: str, tables: list[Table]) -> str:
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
    for t in tables:
        lines.append(f"| `{t.stem}.csv` | {t.model}{' (shared)' if t.shared else ''} | `{t.path}` | {len(t.rows)} |")
    lines += ["", "Or write the whole design through the REST API, idempotently:",
              f"`TWIN_NETBOX_TOKEN=... twin netbox push sites/{site}.yaml --url URL` (or `--token-file FILE`; never the",
              "token on the command line)."]
    problems = long_names(tables)
    if problems:
        lines += ["", "NetBox will refuse these names (shorten the site name):", ""] + [f"- {p}" for p in problems]
    return "\n".join(lines) + "\n"


def emit(design: Design) -> dict[str, bytes]:
    tables = import_set(design)
    if not tables:
        return {}
    files = {f"netbox/{t.stem}.csv": table_csv(t) for t in tables}
    files["netbox/README.md"] = readme(design.name, tables).encode("utf-8")
    return files

"""Both lab sites' import sets through a real NetBox's bulk-import pages, as a user would load them.

Used by test_netbox_live's ``loaded`` fixture, and run ahead by tests/netbox_warm.py as soon as the
session's NetBox is up: the minutes NetBox spends importing (its own process, the second core) then
overlap the rest of the suite. The NetBox tests run last, so nothing else has touched the server when
the fixture reads the result.
"""

from __future__ import annotations

from pathlib import Path

from twin.emit.netbox import table_csv
from twin.emit.netbox_objects import Table, import_set

SITES = Path(__file__).resolve().parent.parent / "sites"
LOADED = ("lab-2zone", "lab-ib")
SHARED_KEY = {"extras.tag": ("slug", "/api/extras/tags/"), "dcim.manufacturer": ("name", "/api/dcim/manufacturers/"),
              "dcim.devicetype": ("model", "/api/dcim/device-types/"), "dcim.devicerole": ("name", "/api/dcim/device-roles/")}


def rows_to_send(netbox, t: Table) -> list[tuple[str, ...]]:
    """A shared file's rows NetBox already has (made by an earlier site's import) are left out, as the
    import set's README says; every other row is sent."""
    if not t.shared:
        return list(t.rows)
    col, path = SHARED_KEY[t.model]
    have = {o[col] for o in netbox.api_all(path)}
    return [r for r in t.rows if dict(zip(t.columns, r))[col] not in have]


def load_all(netbox) -> dict:
    """Both lab sites, every file through the bulk-import page: {(site, file): (rows sent, ok, errors)}.
    Each site is compiled here on its own (twin.load: no shared build folder with the test session)."""
    import twin

    session = netbox.session()
    out = {}
    for site in LOADED:
        for t in import_set(twin.load(SITES / f"{site}.yaml")):
            rows = rows_to_send(netbox, t)
            if not rows:
                out[(site, t.stem)] = (0, True, [])
                continue
            ok, errors = netbox.bulk_import(session, t.path, table_csv(Table(t.stem, t.model, t.path, t.columns, tuple(rows))).decode())
            out[(site, t.stem)] = (len(rows), ok, errors)
    return out

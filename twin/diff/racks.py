"""Racks that moved: placement/floor.csv of both sides held rack by rack (``twin diff``).

A rack keeps its id across a change that leaves its zone and number alone, so a rack at another hall,
row or slot has moved; a rack only one side has was added or removed. The CSV comes from a folder, so
it is read as untrusted text: rows without the columns twin writes are not counted, and the answer
says how many.
"""

from __future__ import annotations

import csv
import io

COLUMNS = ("hall", "row", "slot", "rack")


def positions(data: bytes) -> tuple[dict[str, tuple[str, str, str]], int]:
    """rack id -> (hall, row, slot), and the rows that were not a rack (bad or missing columns)."""
    out: dict[str, tuple[str, str, str]] = {}
    bad = 0
    reader = csv.DictReader(io.StringIO(data.decode("utf-8", "replace")))
    if reader.fieldnames is None or not set(COLUMNS) <= set(reader.fieldnames):
        return {}, 0
    for row in reader:
        if any(not isinstance(row.get(c), str) or not row[c] for c in COLUMNS):
            bad += 1
            continue
        out[row["rack"]] = (row["hall"], row["row"], row["slot"])
    return out, bad


def moved(old: bytes, new: bytes) -> dict:
    """{moved, added, removed, unreadable_rows, examples}: racks at another position, only on the new side,
    only on the old side; a few moved racks as "id: hall row r slot s -> ...".

    >>> a = b"hall,row,slot,rack\\nh,1,1,r1\\nh,1,2,r2\\n"
    >>> b = b"hall,row,slot,rack\\nh,1,1,r1\\nh,2,5,r2\\nh,2,6,r3\\n"
    >>> {k: v for k, v in moved(a, b).items() if k != "examples"}
    {'moved': 1, 'added': 1, 'removed': 0, 'unreadable_rows': 0}
    """
    pa, ba = positions(old)
    pb, bb = positions(new)
    both = sorted(set(pa) & set(pb))
    went = [r for r in both if pa[r] != pb[r]]
    ex = [f"{r}: {pa[r][0]} row {pa[r][1]} slot {pa[r][2]} -> {pb[r][0]} row {pb[r][1]} slot {pb[r][2]}" for r in went[:3]]
    return {"moved": len(went), "added": len(set(pb) - set(pa)), "removed": len(set(pa) - set(pb)), "unreadable_rows": ba + bb,
            "examples": ex}

"""``cabling/cables.csv`` read back into a :class:`~twin.asbuilt.plan.Plan`: every row's two ends, each
device's hall, row, rack and U checked once (names, whole numbers, one place per device), every label
recomputed from its columns, one cable per port, ids unique; each problem located at its row and column.
"""

from __future__ import annotations

import csv
import io

from twin.asbuilt.files import Folder, Problems, line_col
from twin.asbuilt.plan import NAME, Device, Plan, all_names, whole
from twin.emit.cabling import CABLE_COLUMNS


def read_cables(plan: Plan, reader: Folder) -> None:
    """Read the cable schedule. Tens of thousands of rows name a few thousand devices, so each
    device's columns are checked once (cached by their values) and each label is its device's
    checked prefix plus the port."""
    rel = "cabling/cables.csv"
    text = reader.text(rel)
    if text is None:
        return
    shown, problems = reader.shown(rel), reader.problems
    rows = csv.reader(io.StringIO(text))
    if next(rows, []) != CABLE_COLUMNS:
        problems.error(shown, 1, 1, "not twin's cable schedule header", ",".join(CABLE_COLUMNS))
        return
    col = {c: i for i, c in enumerate(CABLE_COLUMNS)}
    sides = [tuple(col[f"{s}_{k}"] for k in ("device", "hall", "row", "rack", "u", "port", "label")) for s in "ab"]
    prefixes: dict[tuple, str] = {}
    ports: dict[str, int] = {}  # port name -> first line (names are checked once, after the loop)
    at, ids = plan.at, plan.ids
    width = len(CABLE_COLUMNS)
    for n, row in enumerate(rows, start=2):
        if len(row) != width:
            problems.error(shown, n, 1, f"{len(row)} fields", f"{width} ({','.join(CABLE_COLUMNS)})")
            continue
        cid = row[0]
        ends = []
        for side, (di, hi, ri, ki, ui, pi, li) in zip("ab", sides):
            key = (row[di], row[hi], row[ri], row[ki], row[ui])
            pre = prefixes.get(key)
            if pre is None:
                pre = prefixes[key] = _device(plan, key, side, row, n, col, shown, problems)
            if not pre:
                break
            dev, port = row[di], row[pi]
            if row[li] != pre + port:
                _bad(problems, shown, n, row, col, f"{side}_label", "disagrees with its own columns", pre + port)
                break
            if (dev, port) in at:
                _bad(problems, shown, n, row, col, f"{side}_port", f"{dev} {port} ends two cables ({ids[at[(dev, port)]]} and {cid})", "one cable per port")
                break
            ports.setdefault(port, n)
            ends.append((dev, port))
        if len(ends) != 2:
            continue
        i = len(ids)
        ids.append(cid)
        plan.tier.append(row[1])
        plan.a.append(ends[0])
        plan.b.append(ends[1])
        plan.labels.append((row[sides[0][6]], row[sides[1][6]]))
        at[ends[0]] = at[ends[1]] = i
    if len(set(ids)) != len(ids) or not all_names(ids):
        bad = next(c for k, c in enumerate(ids) if not NAME.match(c) or c in ids[:k])
        problems.error(shown, *line_col(text, text.find("\n" + bad + ",") + 1), f"cable id {bad!r} is repeated or not an id", "unique ids such as L000001")
    for port, n in ports.items():
        if not NAME.match(port):
            problems.error(shown, n, 1, f"port {port!r} is not a name", "letters, digits and . _ : / @ + -")
    if not ids and not problems.errors:
        problems.error(shown, 1, 1, "no cables", "at least one cable row")


def _bad(problems: Problems, shown: str, n: int, row: list[str], col: dict[str, int], field: str, what: str, expected: str) -> None:
    at = 1 + sum(len(f) + 1 for f in row[:col[field]])
    problems.error(shown, n, at, f"{field} {row[col[field]]!r}: {what}", expected)


def _device(plan: Plan, key: tuple, side: str, row: list[str], n: int, col: dict[str, int], shown: str, problems: Problems) -> str:
    """A device's columns checked once: names, whole numbers, one place per device. Its label
    prefix (``hall/Rrow/rack/Uu/device/``), or "" when they are wrong."""
    dev, hall, r, rack, u = key
    for k, v in (("device", dev), ("hall", hall), ("rack", rack)):
        if not NAME.match(v):
            _bad(problems, shown, n, row, col, f"{side}_{k}", "not a name", "letters, digits and . _ : / @ + -")
            return ""
    if not (whole(r) and whole(u)):
        _bad(problems, shown, n, row, col, f"{side}_row" if not whole(r) else f"{side}_u",
             "row and U must be whole numbers of at most 6 digits", "e.g. 3 and 47")
        return ""
    known = plan.devices.get(dev)
    if known is not None and (known.hall, known.row, known.rack, known.u) != (hall, int(r), rack, int(u)):
        _bad(problems, shown, n, row, col, f"{side}_rack", f"{dev} stands at two places",
             f"{known.hall}/R{known.row:02d}/{known.rack}/U{known.u:02d} as in an earlier row")
        return ""
    plan.devices[dev] = Device("", -1, hall, int(r), rack, int(u), None)
    return f"{hall}/R{int(r):02d}/{rack}/U{int(u):02d}/{dev}/"

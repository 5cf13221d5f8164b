"""Cabling artifacts: the cable schedule and per-row pull sheets.

- ``cabling/cables.csv``: one row per cable (= link id) with both ends, media, lengths and labels;
- ``cabling/pull-<hall>-row<NN>.csv``: the cables a team pulls from one row (a cable belongs to the
  row of its lower-level end: the GPU rack for NIC and rack-switch cables, the CTSW/spine rack above);
- ``cabling/breakouts.csv`` (only where a switch's cages hold several ports, e.g. a QM9700's twin-port
  OSFP or an SN5600 run 2 x 400G): per used port its cage, lanes and breakout mode (a tier's own mode where
  ``fabric.cages`` states one: an SN5600 leaf's up cages whole at 800G), and what sits at
  each end (a twin-port module in the cage, the far end's transceiver, or the cable assembly);

NetBox gets the cables with everything they connect in ``netbox/`` (:mod:`twin.emit.netbox`).

A label reads ``hall/row/rack/U/device/port``, e.g. ``dh1/R03/dh1-z1-r005/U47/dh1-z1-r005-rtsw/Ethernet17``.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter

import numpy as np

from twin.compiler.design import Design
from twin.csvfmt import Coded, columns_in_chunks
from twin.csvfmt import columns as csv_columns
from twin.emit.breakouts import COLUMNS as BREAKOUT_COLUMNS
from twin.emit.breakouts import breakout_columns

CABLE_COLUMNS = [
    "cable_id", "tier", "medium", "kind", "stock_length_m", "length_m", "route_m",
    "a_device", "a_port", "a_hall", "a_row", "a_rack", "a_u",
    "b_device", "b_port", "b_hall", "b_row", "b_rack", "b_u",
    "a_label", "b_label",
]
PULL_COLUMNS = ["cable_id", "medium", "stock_length_m", "from", "to", "tier"]


def _m(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _meters(values: np.ndarray) -> Coded:
    """:func:`_m` of each value, as codes into the distinct values' text (each float told apart by its bits:
    a schedule's ~3.4M lengths take a few hundred)."""
    distinct, codes = np.unique(np.ascontiguousarray(values, dtype=np.float64).view(np.int64), return_inverse=True)
    return Coded(codes.reshape(-1), [_m(v) for v in distinct.view(np.float64).tolist()])


class _Ends:
    """Every device that ends a cable, numbered (``index``), as the CSVs write where it stands: per device its
    rack (a number), its U and its label up to the port; per rack its hall, row and id and its (hall, row)."""

    def __init__(self, design: Design):
        positions = {r.id: r.position for r in design.placement.racks}
        self.index: dict[str, int] = {}
        rack, u, self.label = [], [], []
        self.hall, self.row, self.rack, self.where = [], [], [], []  # per rack
        racks: dict[str, tuple[int, str]] = {}  # rack id -> (number, label up to the U)
        rows: dict[tuple[str, str], int] = {}
        for n, d in design.fabric.graph._node.items():
            if d["role"] == "server":
                continue
            r = racks.get(d["rack"])
            if r is None:
                p = positions[d["rack"]]
                r = racks[d["rack"]] = (len(racks), f"{p.hall}/R{p.row:02d}/{d['rack']}/U")
                self.hall.append(p.hall)
                self.row.append(str(p.row))
                self.rack.append(d["rack"])
                self.where.append(rows.setdefault((p.hall, str(p.row)), len(rows)))
            self.index[n] = len(self.index)
            rack.append(r[0])
            u.append(d["u"])
            self.label.append(f"{r[1]}{d['u']:02d}/{n}/")
        self.rows = list(rows)  # (hall, row) by number
        self.rack_of, self.u = np.array(rack, dtype=np.int64), np.array(u, dtype=np.int64)

    def columns(self, devices: list[str]) -> tuple[np.ndarray, list]:
        """(each device's number, its hall, row, rack and U as :class:`~twin.csvfmt.Coded` columns)."""
        at = np.fromiter(map(self.index.__getitem__, devices), dtype=np.int64, count=len(devices))
        rack = self.rack_of[at]
        top = int(self.u.max()) + 1 if len(self.u) else 1
        return at, [Coded(rack, self.hall), Coded(rack, self.row), Coded(rack, self.rack),
                    Coded(self.u[at], [str(i) for i in range(top)])]


def emit(design: Design) -> dict[str, bytes]:
    """Every file whole (render() and diff read them; the build writes :func:`emit_stream`'s)."""
    pulls, large = emit_stream(design)
    files = {rel: b"".join(chunks) for rel, chunks in large}
    files.update(pulls)
    return files


def emit_stream(design: Design) -> tuple[dict[str, bytes], Iterator[tuple[str, Iterator[bytes]]]]:
    """The pull sheets as bytes, and ``cables.csv`` then ``breakouts.csv`` as chunks written as they are rendered
    (:func:`twin.output.write_stream`): never a whole file of the ~3.4M cables of the 2-plane gigawatt site in
    memory, and the breakouts' columns made once the schedule's are freed. Built column by column (maps, NumPy
    gathers and joins in C, no Python step per cable; a column of few distinct values as codes into them,
    :class:`~twin.csvfmt.Coded`); a pull sheet's rows are its cables in the schedule's order."""
    plan = design.cabling
    if plan is None:
        return {}, iter(())
    media = design.spec.catalog.media
    names = list(plan.media)
    kinds = [media[name].kind for name in names]
    cables = design.fabric.cables()
    n = len(cables)
    ids, a, a_port, b, b_port, _, tier = (np.fromiter(map(itemgetter(k), cables), dtype=object, count=n) if k != 5 else None
                                          for k in range(7))
    del cables
    assert ids.tolist() == list(plan.ids), "the plan lists the cables in the fabric's order"
    m = np.asarray(plan.medium, dtype=np.int64)
    name, kind = Coded(m, names), Coded(m, kinds)
    stock, length, route = _meters(plan.stock), _meters(plan.length), _meters(plan.route)
    ends = _Ends(design)
    ai, (ah, ar, ark, au) = ends.columns(a.tolist())
    bi, (bh, br, brk, bu) = ends.columns(b.tolist())
    label = np.array(ends.label, dtype=object)
    a_label = np.array(list(map(str.__add__, label[ai].tolist(), a_port.tolist())), dtype=object)
    b_label = np.array(list(map(str.__add__, label[bi].tolist(), b_port.tolist())), dtype=object)
    del label
    pulls, pull = {}, [ids, name, stock, a_label, b_label, tier]
    for (hall, row), at in _rows_of(np.array(ends.where, dtype=np.int64)[ends.rack_of[ai]], ends.rows):
        pulls[f"cabling/pull-{hall}-row{int(row):02d}.csv"] = csv_columns(PULL_COLUMNS, [col[at] for col in pull])
    del pull, ends, ai, bi
    cols = [ids, tier, name, kind, stock, length, route, a, a_port, ah, ar, ark, au, b, b_port, bh, br, brk, bu, a_label, b_label]
    del ids, tier, name, kind, stock, length, route, a, a_port, ah, ar, ark, au, b, b_port, bh, br, brk, bu, a_label, b_label
    return pulls, _large(design, cols)


def _large(design: Design, cols: list) -> Iterator[tuple[str, Iterator[bytes]]]:
    """``cables.csv`` from ``cols``, then (its columns dropped) ``breakouts.csv``; each read to the end by the
    writer before the next is asked for."""
    yield "cabling/cables.csv", columns_in_chunks(CABLE_COLUMNS, cols)
    fields = [cols[i] for i in (0, 7, 8, 13, 14)]  # id, a, a_port, b, b_port: the breakouts' too
    del cols
    breakouts = breakout_columns(design, text=True, fields=fields)
    del fields
    if breakouts and len(breakouts[0]):
        yield "cabling/breakouts.csv", columns_in_chunks(BREAKOUT_COLUMNS, breakouts)


emit.stream = emit_stream  # the build's way (twin.build._write_emitters)


def _rows_of(keys: np.ndarray, rows: list[tuple[str, str]]) -> list[tuple[tuple[str, str], np.ndarray]]:
    """The cables of each (hall, row) (``keys``: each cable's number into ``rows``), in the schedule's order, by
    hall and row number: one stable sort."""
    if not len(keys):
        return []
    order = np.argsort(keys, kind="stable")
    starts = np.flatnonzero(np.diff(keys[order], prepend=-1))
    ends = [*starts[1:].tolist(), len(keys)]
    groups = [(rows[keys[order[s]]], order[s:e]) for s, e in zip(starts.tolist(), ends, strict=True)]
    return sorted(groups, key=lambda kv: (kv[0][0], int(kv[0][1])))


def breakout_rows(design: Design, text: bool = False) -> list[list]:
    """One row per cabled port of a split cage, in switch and port order: which cage and lanes, the mode,
    and what each end of its cable carries (``text``: the cage and the port in it as the CSV spells them);
    :func:`twin.emit.breakouts.breakout_columns` as rows."""
    cols = breakout_columns(design, text)
    return [list(row) for row in zip(*cols, strict=True)] if cols else []

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
from itertools import count, repeat

import numpy as np

from twin.compiler.design import Design
from twin.compiler.fabric.ports import _index, cage_mode, cage_of
from twin.csvfmt import columns as csv_columns
from twin.csvfmt import columns_in_chunks, table_in_chunks

CABLE_COLUMNS = [
    "cable_id", "tier", "medium", "kind", "stock_length_m", "length_m", "route_m",
    "a_device", "a_port", "a_hall", "a_row", "a_rack", "a_u",
    "b_device", "b_port", "b_hall", "b_row", "b_rack", "b_u",
    "a_label", "b_label",
]
PULL_COLUMNS = ["cable_id", "medium", "stock_length_m", "from", "to", "tier"]
BREAKOUT_COLUMNS = ["switch", "cage", "mode", "port", "port_in_cage", "lanes", "speed_gbps", "cable_id", "medium",
                    "switch_end", "peer", "peer_port", "far_end"]


def _m(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _meters(values: list[float]) -> list[str]:
    """:func:`_m` of each value, through ``map`` (C loops, no Python call per value)."""
    text = map(str.rstrip, map("{:.2f}".format, values), repeat("0"))
    return list(map(str.rstrip, text, repeat(".")))


def _ends(design: Design) -> dict[str, tuple[str, str, str, str, str]]:
    """(hall, row, rack, U, label up to the port) of every device that ends a cable, as the CSVs write them."""
    g = design.fabric.graph
    racks = {r.id: r for r in design.placement.racks}
    out = {}
    for n, d in g.nodes(data=True):
        if d["role"] == "server":
            continue
        p = racks[d["rack"]].position
        out[n] = (p.hall, str(p.row), d["rack"], str(d["u"]), f"{p.hall}/R{p.row:02d}/{d['rack']}/U{d['u']:02d}/{n}/")
    return out


def emit(design: Design) -> dict[str, bytes]:
    """Every file whole (render() and diff read them; the build writes :func:`emit_stream`'s)."""
    pulls, large = emit_stream(design)
    files = {rel: b"".join(chunks) for rel, chunks in large}
    files.update(pulls)
    return files


def emit_stream(design: Design) -> tuple[dict[str, bytes], Iterator[tuple[str, Iterator[bytes]]]]:
    """The pull sheets as bytes, and ``cables.csv`` then ``breakouts.csv`` as chunks written as they are rendered
    (:func:`twin.output.write_stream`): never a whole file of the ~3.4M cables of the 2-plane gigawatt site in
    memory, and the breakouts' rows made once the schedule's columns are freed. Built column by column (maps
    and joins in C, no Python step per cable); a pull sheet's rows are its cables in the schedule's order."""
    plan = design.cabling
    if plan is None:
        return {}, iter(())
    media = design.spec.catalog.media
    ends = _ends(design)
    names = list(plan.media)
    kinds = [media[name].kind for name in names]
    cables = design.fabric.cables()
    ids, a, a_port, b, b_port, _, tier, _ = (zip(*cables, strict=True) if cables else ((),) * 8)
    assert list(ids) == list(plan.ids), "the plan lists the cables in the fabric's order"
    m = plan.medium.tolist()
    name, kind = list(map(names.__getitem__, m)), list(map(kinds.__getitem__, m))
    stock, length, route = _meters(plan.stock.tolist()), _meters(plan.length.tolist()), _meters(plan.route.tolist())
    ah, ar, ark, au, a_at = zip(*map(ends.__getitem__, a), strict=True) if cables else ((),) * 5
    bh, br, brk, bu, b_at = zip(*map(ends.__getitem__, b), strict=True) if cables else ((),) * 5
    a_label, b_label = list(map(str.__add__, a_at, a_port)), list(map(str.__add__, b_at, b_port))
    pulls, pull = {}, [ids, name, stock, a_label, b_label, tier]
    for (hall, row), at in _rows_of(list(zip(ah, ar))):
        pulls[f"cabling/pull-{hall}-row{int(row):02d}.csv"] = csv_columns(PULL_COLUMNS, [list(map(col.__getitem__, at)) for col in pull])
    del pull
    cols = [ids, tier, name, kind, stock, length, route, a, a_port, ah, ar, ark, au, b, b_port, bh, br, brk, bu, a_label, b_label]
    del ids, tier, name, kind, stock, length, route, a, a_port, ah, ar, ark, au, b, b_port, bh, br, brk, bu, a_label, b_label
    return pulls, _large(design, cols)


def _large(design: Design, cols: list) -> Iterator[tuple[str, Iterator[bytes]]]:
    """``cables.csv`` from ``cols``, then (its columns dropped) ``breakouts.csv``; each read to the end by the
    writer before the next is asked for."""
    yield "cabling/cables.csv", columns_in_chunks(CABLE_COLUMNS, cols)
    del cols
    breakouts = breakout_rows(design, text=True)
    if breakouts:
        yield "cabling/breakouts.csv", table_in_chunks(BREAKOUT_COLUMNS, breakouts)


emit.stream = emit_stream  # the build's way (twin.build._write_emitters)


def _rows_of(keys: list[tuple[str, str]]) -> list[tuple[tuple[str, str], list[int]]]:
    """The cables of each (hall, row), in the schedule's order, by hall and row number: the keys numbered
    by their first cable (dict.setdefault through map), then one stable sort."""
    if not keys:
        return []
    first = np.fromiter(map({}.setdefault, keys, count()), dtype=np.int64, count=len(keys))
    order = np.argsort(first, kind="stable")
    starts = np.flatnonzero(np.diff(first[order], prepend=-1))
    groups = [(keys[order[s]], order[s:e].tolist()) for s, e in zip(starts.tolist(), [*starts[1:].tolist(), len(keys)], strict=True)]
    return sorted(groups, key=lambda kv: (kv[0][0], int(kv[0][1])))


def breakout_rows(design: Design, text: bool = False) -> list[list]:
    """One row per cabled port of a split cage, in switch and port order: which cage and lanes, the mode,
    and what each end of its cable carries (``text``: the cage and the port in it as the CSV spells them).

    One pass over the cables, not over each switch's edges: a port's cage, lanes and mode depend on its
    model, name and speed alone, and what each end carries on the medium and (for a twin-port module at the
    switch) the peer's kind, so each is worked out once per distinct key (the gigawatt site's ~2M ports
    take a few dozen)."""
    spec, fabric, plan = design.spec, design.fabric, design.cabling
    nodes = fabric.graph._node  # node -> its attribute dict (plain lookups, not the view's)
    media = spec.catalog.media
    split: dict[str, dict[str, int]] = {}  # a switch of split cages -> its model's port index (name -> 0-based)
    for n, d in nodes.items():
        if d.get("level", -1) >= 1 and spec.switch(d["model"]).ports_per_cage > 1:
            split[n] = _index(spec.switch(d["model"]))
    if not split:
        return []
    ports: dict[str, list[tuple]] = {n: [] for n in split}  # (port index, port, cable, medium, peer, peer port, speed)
    for lk, name in zip(fabric.cables(), map(plan.media.__getitem__, plan.medium.tolist()), strict=True):
        if lk.a in split:
            ports[lk.a].append((split[lk.a][lk.a_port], lk.a_port, lk.id, name, lk.b, lk.b_port, lk.speed))
        if lk.b in split:
            ports[lk.b].append((split[lk.b][lk.b_port], lk.b_port, lk.id, name, lk.a, lk.a_port, lk.speed))
    switch_models = spec.catalog.switches

    def kind(peer: str) -> tuple:
        """(takes a module of this many ports or None, is a NIC)"""
        d = nodes[peer]
        model = d.get("model")
        if d.get("level", -1) >= 1 and model in switch_models:
            return (spec.switch(model).ports_per_cage, d.get("role") == "nic")
        return (d.get("ports", 1) if d.get("role") == "nic" else None, d.get("role") == "nic")

    places: dict[str, dict] = {}  # a model's name -> {port: (cage, mode, sub, lanes, speed text, speed)}
    carries: dict[tuple, tuple[str, str]] = {}  # (medium, model's cage ports, peer's kind) -> (here, there)
    alone: dict[tuple, tuple[str, str] | None] = {}  # (medium, cage ports) -> (here, there) where the peer does not matter
    rows = []
    append = rows.append
    for n in sorted(ports):
        model_name = nodes[n]["model"]
        model = spec.switch(model_name)
        ppc, place = model.ports_per_cage, places.setdefault(model_name, {})
        mine = ports[n]
        mine.sort()  # port order = cage order (ports are unique: the index decides)
        for _, port, lid, name, peer, peer_port, speed in mine:
            at = place.get(port)
            if at is None or at[5] != speed:  # a tier in a wider mode (fabric.cages): the port is its cage's r logical ports
                cage, sub, (first, last) = cage_of(model, port, speed)
                at = (str(cage) if text else cage, cage_mode(model, speed), str(sub) if text else sub, f"{first}-{last}",
                      f"{speed / 1e9:g}", speed)
                place.setdefault(port, at)
            ends = alone.get((name, ppc), False)
            if ends is False:
                med = media[name]
                ends = alone[(name, ppc)] = None if med.module_ports > 1 and ppc == med.module_ports else _carries(med, name, ppc, (None, False))
            if ends is None:  # a twin-port module in this cage: the far end's depends on the peer
                pk = kind(peer)
                ends = carries.get((name, ppc, pk))
                if ends is None:
                    ends = carries[(name, ppc, pk)] = _carries(media[name], name, ppc, pk)
            append([n, at[0], at[1], port, at[2], at[3], at[4], lid, name, ends[0], peer, peer_port, ends[1]])
    return rows


def _carries(med, name: str, cage_ports: int, peer: tuple) -> tuple[str, str]:
    """(what the switch's end carries, what the peer's does) of a cable of medium ``med`` (a twin-port
    module where the end takes one: twin.compiler.fabric.bom.module_ends)."""
    mp = med.module_ports
    if mp > 1 and cage_ports == mp:
        here = f"{name} (one module for the cage's {mp} ports)"
        there = f"{name} (one module for the {'NIC' if peer[1] else 'cage'}'s {mp} ports)" if peer[0] == mp else med.far_end
        return here, there
    if med.pluggable:
        return name, name
    return f"{name} assembly", f"{name} assembly"

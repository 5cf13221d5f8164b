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

from itertools import repeat

from twin.compiler.design import Design
from twin.compiler.fabric.bom import module_ends
from twin.compiler.fabric.ports import cage_mode, cage_of
from twin.csvfmt import table as csv_table

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
    plan = design.cabling
    if plan is None:
        return {}
    fabric = design.fabric
    media = design.spec.catalog.media
    ends = _ends(design)
    kinds = [(name, media[name].kind) for name in plan.media]
    stock, length, route = _meters(plan.stock.tolist()), _meters(plan.length.tolist()), _meters(plan.route.tolist())
    cables = fabric.cables()
    assert [lk.id for lk in cables] == list(plan.ids), "the plan lists the cables in the fabric's order"
    rows = []
    pulls: dict[tuple[str, str], list[tuple[str, ...]]] = {}  # (hall, row) -> its pull sheet
    for i, (lk, m) in enumerate(zip(cables, plan.medium.tolist(), strict=True)):
        name, kind = kinds[m]
        ah, ar, ark, au, a_at = ends[lk.a]
        bh, br, brk, bu, b_at = ends[lk.b]
        a_label, b_label = a_at + lk.a_port, b_at + lk.b_port
        rows.append((lk.id, lk.tier, name, kind, stock[i], length[i], route[i],
                     lk.a, lk.a_port, ah, ar, ark, au, lk.b, lk.b_port, bh, br, brk, bu, a_label, b_label))
        pulls.setdefault((ah, ar), []).append((lk.id, name, stock[i], a_label, b_label, lk.tier))
    files = {"cabling/cables.csv": csv_table(CABLE_COLUMNS, rows)}
    breakouts = breakout_rows(design)
    if breakouts:
        files["cabling/breakouts.csv"] = csv_table(BREAKOUT_COLUMNS, breakouts)
    for (hall, row), rows in sorted(pulls.items(), key=lambda kv: (kv[0][0], int(kv[0][1]))):
        files[f"cabling/pull-{hall}-row{int(row):02d}.csv"] = csv_table(PULL_COLUMNS, rows)
    return files


def breakout_rows(design: Design) -> list[list]:
    """One row per cabled port of a split cage, in switch and port order: which cage and lanes, the mode,
    and what each end of its cable carries."""
    spec, fabric, plan = design.spec, design.fabric, design.cabling
    g = fabric.graph
    media = spec.catalog.media
    medium = {lid: plan.media[plan.medium[i]] for i, lid in enumerate(plan.ids)}
    rows = []
    for n in sorted(x for x, d in g.nodes(data=True) if d.get("level", -1) >= 1):
        model = spec.switch(g.nodes[n]["model"])
        if model.ports_per_cage == 1:
            continue
        for port, (lid, peer, peer_port) in sorted(fabric.ports(n).items(), key=lambda p: cage_of(model, p[0])):
            if lid not in medium:
                continue
            speed = fabric.link(lid).speed  # a tier in a wider mode (fabric.cages): the port is its cage's r logical ports
            cage, sub, (first, last) = cage_of(model, port, speed)
            name = medium[lid]
            med = media[name]
            ends = {dev for dev, _ in module_ends(spec, fabric, fabric.link(lid), med.module_ports)} if med.module_ports > 1 else set()
            if n in ends:
                here = f"{name} (one module for the cage's {med.module_ports} ports)"
                there = (f"{name} (one module for the {'NIC' if g.nodes[peer].get('role') == 'nic' else 'cage'}'s {med.module_ports} ports)"
                         if peer in ends else med.far_end)
            elif med.pluggable:
                here = there = name
            else:
                here = there = f"{name} assembly"
            rows.append([n, cage, cage_mode(model, speed), port, sub, f"{first}-{last}", f"{speed / 1e9:g}", lid, name,
                         here, peer, peer_port, there])
    return rows

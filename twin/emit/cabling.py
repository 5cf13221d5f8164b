"""Cabling artifacts: the cable schedule and per-row pull sheets.

- ``cabling/cables.csv``: one row per cable (= link id) with both ends, media, lengths and labels;
- ``cabling/pull-<hall>-row<NN>.csv``: the cables a team pulls from one row (a cable belongs to the
  row of its lower-level end: the GPU rack for NIC and rack-switch cables, the CTSW/spine rack above);
- ``cabling/breakouts.csv`` (only where a switch's cages hold several ports, e.g. a QM9700's twin-port
  OSFP or an SN5600 run 2 x 400G): per used port its cage, lanes and breakout mode, and what sits at
  each end (a twin-port module in the cage, the far end's transceiver, or the cable assembly);

NetBox gets the cables with everything they connect in ``netbox/`` (:mod:`twin.emit.netbox`).

A label reads ``hall/row/rack/U/device/port``, e.g. ``dh1/R03/dh1-z1-r005/U47/dh1-z1-r005-rtsw/Ethernet17``.
"""

from __future__ import annotations

import csv
import io

from twin.compiler.design import Design
from twin.compiler.fabric.bom import module_end
from twin.compiler.fabric.ports import cage_mode, cage_of

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


def _ends(design: Design) -> dict[str, tuple[str, int, str, int]]:
    """(hall, row, rack, U) of every device that ends a cable."""
    g = design.fabric.graph
    racks = {r.id: r for r in design.placement.racks}
    out = {}
    for n, d in g.nodes(data=True):
        if d["role"] == "server":
            continue
        r = racks[d["rack"]]
        out[n] = (r.position.hall, r.position.row, d["rack"], d["u"])
    return out


def emit(design: Design) -> dict[str, bytes]:
    plan = design.cabling
    if plan is None:
        return {}
    fabric = design.fabric
    media = design.spec.catalog.media
    ends = _ends(design)
    cables_buf = io.StringIO()
    cw = csv.writer(cables_buf, lineterminator="\n")
    cw.writerow(CABLE_COLUMNS)
    pulls: dict[tuple[str, int], list[list[str]]] = {}
    for i, lk in enumerate(fabric.cables()):
        assert lk.id == plan.ids[i]
        name = plan.media[plan.medium[i]]
        med = media[name]
        ah, ar, ark, au = ends[lk.a]
        bh, br, brk, bu = ends[lk.b]
        a_label = f"{ah}/R{ar:02d}/{ark}/U{au:02d}/{lk.a}/{lk.a_port}"
        b_label = f"{bh}/R{br:02d}/{brk}/U{bu:02d}/{lk.b}/{lk.b_port}"
        stock = _m(plan.stock[i])
        cw.writerow([lk.id, lk.tier, name, med.kind, stock, _m(plan.length[i]), _m(plan.route[i]),
                     lk.a, lk.a_port, ah, ar, ark, au, lk.b, lk.b_port, bh, br, brk, bu, a_label, b_label])
        pulls.setdefault((ah, ar), []).append([lk.id, name, stock, a_label, b_label, lk.tier])
    files = {
        "cabling/cables.csv": cables_buf.getvalue().encode("utf-8"),
    }
    breakouts = breakout_rows(design)
    if breakouts:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(BREAKOUT_COLUMNS)
        w.writerows(breakouts)
        files["cabling/breakouts.csv"] = buf.getvalue().encode("utf-8")
    for (hall, row), rows in sorted(pulls.items()):
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(PULL_COLUMNS)
        w.writerows(rows)
        files[f"cabling/pull-{hall}-row{row:02d}.csv"] = buf.getvalue().encode("utf-8")
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
            cage, sub, (first, last) = cage_of(model, port)
            name = medium[lid]
            med = media[name]
            if med.module_ports > 1 and module_end(spec, fabric, fabric.link(lid), med.module_ports) is not None:
                here, there = f"{name} (one module for the cage's {med.module_ports} ports)", med.far_end
            elif med.pluggable:
                here = there = name
            else:
                here = there = f"{name} assembly"
            rows.append([n, cage, cage_mode(model), port, sub, f"{first}-{last}", f"{model.port_speed / 1e9:g}", lid, name,
                         here, peer, peer_port, there])
    return rows

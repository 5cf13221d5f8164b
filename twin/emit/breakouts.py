"""``cabling/breakouts.csv``'s columns (:mod:`twin.emit.cabling`), made column by column.

A row per cabled port of a split cage, in switch and port order. What a row says of its port (cage, mode,
port in the cage, lanes, speed) depends on the switch's model, the port and the link's speed alone, and what
each end of its cable carries on the medium, the model's cage and (for a twin-port module at the switch)
the peer's kind: each is worked out once per distinct key and the rows take theirs by NumPy codes (the
gigawatt site's ~3M ports take a few dozen keys), with no Python step per port.
"""

from __future__ import annotations

from itertools import repeat
from operator import itemgetter

import numpy as np

from twin.compiler.design import Design
from twin.compiler.fabric.ports import _index, cage_mode, cage_of
from twin.csvfmt import Coded

COLUMNS = ["switch", "cage", "mode", "port", "port_in_cage", "lanes", "speed_gbps", "cable_id", "medium",
           "switch_end", "peer", "peer_port", "far_end"]


def breakout_columns(design: Design, text: bool = False, fields: list[np.ndarray] | None = None) -> list | None:
    """The 13 columns (:data:`COLUMNS`) of one row per cabled port of a split cage, in switch and port order,
    each a list or a :class:`~twin.csvfmt.Coded` column; None without split cages. ``text``: the cage and
    the port in it as the CSV spells them (else ints). ``fields``: the cables' ids, a, a_port, b and b_port
    as object arrays where the caller has them (the cable schedule's)."""
    spec, fabric, plan = design.spec, design.fabric, design.cabling
    nodes = fabric.graph._node  # node -> its attribute dict (plain lookups, not the view's)
    media = spec.catalog.media
    model_of: dict[str, str] = {}  # a switch of split cages -> its model's name
    for n, d in nodes.items():
        if d.get("level", -1) >= 1 and spec.switch(d["model"]).ports_per_cage > 1:
            model_of[n] = d["model"]
    if not model_of:
        return None
    switches = sorted(model_of)
    rank = {n: i for i, n in enumerate(switches)}
    models = sorted(set(model_of.values()))
    model_code = {m: i for i, m in enumerate(models)}
    sw_model = np.array([model_code[model_of[n]] for n in switches], dtype=np.int64)

    cables = fabric.cables()
    n = len(cables)
    field = fields or [np.fromiter(map(itemgetter(k), cables), dtype=object, count=n) for k in range(5)]
    ends = []  # per side (a, b): (rows of the cables it ends at a split switch, the switch's rank)
    for k in (1, 3):
        r = np.fromiter(map(rank.get, field[k].tolist(), repeat(-1)), dtype=np.int64, count=n)
        at = np.flatnonzero(r >= 0)
        ends.append((at, r[at]))
    (ja, ra), (jb, rb) = ends
    cab, sw = np.concatenate([ja, jb]), np.concatenate([ra, rb])
    port = np.concatenate([field[2][ja], field[4][jb]])
    peer = np.concatenate([field[3][ja], field[1][jb]])
    peer_port = np.concatenate([field[4][ja], field[2][jb]])
    ids = field[0][cab]
    del field
    mc = sw_model[sw]
    pidx = np.empty(len(cab), dtype=np.int64)  # the port's 0-based index in its model (its cage order)
    for i, m in enumerate(models):
        mine = np.flatnonzero(mc == i)
        pidx[mine] = np.fromiter(map(_index(spec.switch(m)).__getitem__, port[mine]), dtype=np.int64, count=len(mine))
    order = np.lexsort((pidx, sw))  # by switch, then port (a switch's ports are unique: the index decides)
    cab, sw, port, peer, peer_port, mc, pidx, ids = (x[order] for x in (cab, sw, port, peer, peer_port, mc, pidx, ids))

    # where the port sits: one key per (model, port, speed)
    speed_all = np.fromiter(map(itemgetter(5), cables), dtype=np.float64, count=n)
    speeds, speed_code = np.unique(speed_all[cab].view(np.int64), return_inverse=True)  # by their bits: exact
    speeds = speeds.view(np.float64).tolist()
    width = int(pidx.max()) + 1 if len(pidx) else 1
    _, first, place = np.unique((mc * width + pidx) * len(speeds) + speed_code, return_index=True, return_inverse=True)
    at = []
    for row in first.tolist():
        model, speed = spec.switch(models[mc[row]]), speeds[speed_code[row]]
        cage, sub, (lo, hi) = cage_of(model, port[row], speed)
        at.append((str(cage) if text else cage, cage_mode(model, speed), str(sub) if text else sub, f"{lo}-{hi}",
                   f"{speed / 1e9:g}"))

    # what each end carries: one key per (medium, model, the peer's kind)
    medium = plan.medium[cab].astype(np.int64)
    peer_kind, kind_of = _kinds(spec, nodes, peer)
    key = (medium * len(models) + mc) * len(kind_of) + peer_kind
    _, efirst, carried = np.unique(key, return_index=True, return_inverse=True)
    carry = [_carries(media[plan.media[medium[r]]], plan.media[medium[r]], spec.switch(models[mc[r]]).ports_per_cage,
                      kind_of[peer_kind[r]]) for r in efirst.tolist()]
    names = list(plan.media)
    cols = [Coded(sw, switches)]
    cols += [Coded(place, [a[i] for a in at]) for i in range(2)]
    cols += [port.tolist(), *(Coded(place, [a[i] for a in at]) for i in range(2, 5)),
             ids.tolist(), Coded(medium, names), Coded(carried, [c[0] for c in carry]),
             peer.tolist(), peer_port.tolist(), Coded(carried, [c[1] for c in carry])]
    if not text:  # ints in the cage and the port in it: not CSV text, kept as lists
        cols[1], cols[4] = list(cols[1]), list(cols[4])
    return cols


def _kinds(spec, nodes: dict, peers: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """(each peer's kind as a code, the kinds): a kind is (takes a module of this many ports or None, is a
    NIC), worked out once per distinct peer."""
    switch_models = spec.catalog.switches
    rows = peers.tolist()
    distinct = list(dict.fromkeys(rows))
    attrs = list(map(nodes.__getitem__, distinct))
    got = [list(map(dict.get, attrs, repeat(k), repeat(v))) for k, v in (("level", -1), ("model", None), ("role", None), ("ports", 1))]
    table: dict[tuple, int] = {}
    codes: dict[tuple, int] = {}  # (level, model, role, ports) -> the kind's code
    for attr in dict.fromkeys(zip(*got)):
        level, model, role, ports = attr
        nic = role == "nic"
        if level >= 1 and model in switch_models:
            k = (spec.switch(model).ports_per_cage, nic)
        else:
            k = (ports if nic else None, nic)
        codes[attr] = table.setdefault(k, len(table))
    of = dict(zip(distinct, map(codes.__getitem__, zip(*got))))
    return np.fromiter(map(of.__getitem__, rows), dtype=np.int64, count=len(rows)), list(table)


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

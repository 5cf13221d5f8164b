"""The bill of materials, counted from the fabric graph and the cable plan (never from formulas).

Counting convention (also printed in the report):

- switches: one line per model, every switch node of the graph (rack switches included);
- endpoints: one line per fabric attachment (subnet managers, storage, gateways), every endpoint node;
- pluggable optics (``kind: optic``): two transceivers per link, one per end, plus one fiber cable of
  the link's stock length; a twin-port module (``module_ports`` 2: an 800G OSFP serving a cage split
  2 x 400G) counts once per cage it fills, at a switch of split cages and at a NIC of split ports (a
  ConnectX-8's one 800G cage carrying both planes), and a link end with no such cage gets the module's
  ``far_end`` transceiver;
- DAC, AEC and AOC are cable assemblies with their ends built in: one item per link, no transceivers;
- host edges (server to NIC, inside the server) are not cables and are not counted; NICs are part of
  the server;
- power: switch typical power from the catalog plus every powered cable end (optic, AEC, AOC);
- a campus link between buildings: its two transceivers, a patch cord at each end (fiber at stock
  length), and its share of its building pair's trunk; the trunk cables (``trunk``) and the patch
  panels at both entrances (``panel``) are counted per building pair.
- a link without a length (a fabric-only study, :mod:`twin.compiler.study`): its cable is counted with no
  stock length, no mass and no price where the price is per metre;
- price (USD, ``None`` where the catalog has none): a switch's ``price``; a transceiver's ``price``; a
  fiber's ``price_per_metre`` x its stock length; a DAC, AEC or AOC assembly's ``price`` plus its
  ``price_per_metre`` x its stock length; a campus trunk and patch panel have none (not in the catalog).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from twin.compiler.fabric.cabling import CablePlan
from twin.compiler.fabric.graph import Fabric
from twin.compiler.fabric.ports import cage_of
from twin.compiler.resolve.spec import Spec


@dataclass(frozen=True)
class BomLine:
    category: str  # "switch", "endpoint", "transceiver", "cable"; a campus adds "trunk" and "panel"
    item: str  # catalog name
    description: str
    length_m: float | None
    quantity: int
    unit_power_w: float
    source: str
    unit_mass_kg: float = 0.0  # a switch's mass; a cable's is its length x the medium's weight_per_metre
    unit_price: float | None = None  # USD; None when the catalog gives no price

    @property
    def total_power_w(self) -> float:
        return self.quantity * self.unit_power_w

    @property
    def total_price(self) -> float | None:
        return None if self.unit_price is None else self.quantity * self.unit_price

    @property
    def total_mass_kg(self) -> float:
        return self.quantity * self.unit_mass_kg


def bill(spec: Spec, fabric: Fabric, plan: CablePlan) -> tuple[BomLine, ...]:
    """The BOM pass: switches by model, transceivers by type, cables by medium and stock length."""
    lines: list[BomLine] = []
    roles = set(fabric.roles)
    models = Counter(d["model"] for _, d in fabric.graph.nodes(data=True) if d["role"] in roles)
    for name in sorted(models):
        m = spec.switch(name)
        desc = m.description or f"{m.vendor} {name}"
        lines.append(BomLine("switch", name, desc, None, models[name], m.power, m.source, m.weight, m.price))
    endpoints = Counter(d["model"] for _, d in fabric.graph.nodes(data=True) if d["role"] == "endpoint")
    for a in spec.fabric.attachments:
        if endpoints[a.name]:
            desc = a.description or f"{a.kind} ({a.ports} x {a.speed / 1e9:g}G)"
            lines.append(BomLine("endpoint", a.name, desc, None, endpoints[a.name], a.power, a.source, a.weight))
    local = np.ones(len(plan.ids), dtype=bool)  # cables with one stock length (not a campus link's patch + trunk)
    if plan.campus is not None:
        local[plan.campus.index] = False
    for i, name in enumerate(plan.media):
        sel = plan.medium == i
        n = int(sel.sum())
        if not n:
            continue
        med = spec.catalog.media[name]
        lengths, counts = np.unique(plan.stock[sel & local], return_counts=True)
        if med.pluggable and med.module_ports > 1:
            cages, ends = module_cages(spec, fabric, [plan.ids[j] for j in np.flatnonzero(sel)], med.module_ports)
            far = spec.catalog.media[med.far_end]
            lines.append(BomLine("transceiver", name, f"twin-port {name}, one module per cage of {med.module_ports} x {med.speed / 1e9:g}G: {module_places(fabric, cages)}", None,
                                 len(cages), med.power_per_end, med.source, 0.0, med.price))
            if ends:
                lines.append(BomLine("transceiver", med.far_end, f"{far.description or med.far_end}: the far end of {name} links at an end "
                                     "with no twin-port cage", None, ends, far.power_per_end, far.source, 0.0, far.price))
            for length, c in zip(lengths.tolist(), counts.tolist()):
                lines.append(BomLine("cable", f"{med.fiber}-{med.connector or 'fiber'}".lower().replace(" ", "-"), f"{med.fiber.upper()} fiber {med.connector} for {name}", _known(length), c, 0.0, med.source,
                                     _mass(length, med.weight_per_metre), _at(length, med.price_per_metre)))
        elif med.pluggable:
            lines.append(BomLine("transceiver", name, med.description or f"{name} ({med.connector})", None, 2 * n, med.power_per_end, med.source, 0.0, med.price))
            for length, c in zip(lengths.tolist(), counts.tolist()):
                lines.append(BomLine("cable", f"{med.fiber}-{med.connector or 'fiber'}".lower().replace(" ", "-"), f"{med.fiber.upper()} fiber {med.connector} for {name}", _known(length), c, 0.0, med.source,
                                     _mass(length, med.weight_per_metre), _at(length, med.price_per_metre)))
        else:
            for length, c in zip(lengths.tolist(), counts.tolist()):
                price = None if med.price is None else _at(length, med.price_per_metre, med.price)
                lines.append(BomLine("cable", name, med.description or name, _known(length), c, 2 * med.power_per_end, med.source,
                                     _mass(length, med.weight_per_metre), price))
    if plan.campus is not None:
        lines += campus_lines(spec, plan)
    return tuple(_merge(lines))


def module_end(spec: Spec, fabric: Fabric, link, ports: int) -> tuple[str, str] | None:
    """(switch, port) of a link's end whose switch model has ``ports`` ports per cage (where a twin-port
    module sits), or None."""
    g = fabric.graph
    for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
        model = g.nodes[node].get("model")
        if g.nodes[node].get("level", -1) >= 1 and model in spec.catalog.switches and spec.switch(model).ports_per_cage == ports:
            return node, port
    return None


def nic_module(fabric: Fabric, link, ports: int) -> str | None:
    """The NIC end of a link whose NIC has ``ports`` ports in its one cage (a ConnectX-8's 800G cage split
    2 x 400G, one port per plane): one twin-port module there carries all of them. None otherwise."""
    g = fabric.graph
    for node in (link.a, link.b):
        if g.nodes[node].get("role") == "nic" and g.nodes[node].get("ports", 1) == ports:
            return node
    return None


def module_ends(spec: Spec, fabric: Fabric, link, ports: int) -> list[tuple[str, int]]:
    """(device, cage) of every end of a link that holds a twin-port module of ``ports`` ports: a switch
    whose cages hold that many ports (the cage's number), a NIC of that many ports (cage 0)."""
    g = fabric.graph
    out = []
    for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
        model = g.nodes[node].get("model")
        if g.nodes[node].get("level", -1) >= 1 and model in spec.catalog.switches and spec.switch(model).ports_per_cage == ports:
            out.append((node, cage_of(spec.switch(model), port)[0]))
        elif g.nodes[node].get("role") == "nic" and g.nodes[node].get("ports", 1) == ports:
            out.append((node, 0))
    return out


def module_cages(spec: Spec, fabric: Fabric, link_ids: list[str], ports: int) -> tuple[set[tuple[str, int]], int]:
    """(the (device, cage) every twin-port module fills, far-end transceivers) over the given links: one
    module per cage used at every end that takes one (a switch of split cages, a NIC of split ports); an
    end that takes none gets the medium's ``far_end`` transceiver; a link with no such end takes a module
    of its own and a far end."""
    out: set[tuple[str, int]] = set()
    far = 0
    for lid in link_ids:
        ends = module_ends(spec, fabric, fabric.link(lid), ports)
        out.update(ends)
        if not ends:
            out.add((lid, 0))
        far += 2 - max(1, len(ends))
    return out, far


def module_places(fabric: Fabric, cages: set[tuple[str, int]]) -> str:
    """Where a twin-port medium's modules sit, by end: in the cages of each switch model, in NIC cages (a NIC's
    ports in one cage: one module carries them all), or on links with neither (a module of their own)."""
    g = fabric.graph
    where: Counter = Counter()
    for node, _ in cages:
        d = g.nodes[node] if node in g else None
        where["in NIC cages (one module per NIC, all its ports)" if d is not None and d.get("role") == "nic" else
              f"in {d['model']} cages" if d is not None else "on links with no twin-port cage at either end"] += 1
    return ", ".join(f"{n:,} {w}" for w, n in sorted(where.items()))


@dataclass(frozen=True)
class PortCount:
    """One link tier counted twice: per link (twin's unit) and per cage port of its twin-port modules."""

    tier: str
    links: int
    per_port: int  # a twin-port module's links are one cable of its port; every other link one cable
    port_speed: float  # bit/s of the module's port (module_ports x the medium's speed), or of the link's own port


def port_counts(spec: Spec, fabric: Fabric, plan: CablePlan) -> list[PortCount]:
    """Cables per link tier as NVIDIA's SuperPOD tables count them where a twin-port module carries two
    links (an 800G port split 2 x 400G): one cable per module at the link's lower end, beside twin's one
    per link. Empty when the two counts are the same everywhere (no twin-port module in the plan)."""
    media = spec.catalog.media
    used = set(np.unique(plan.medium).tolist()) if len(plan.ids) else set()
    twin = {i for i, name in enumerate(plan.media) if media[name].module_ports > 1 and i in used}
    if not twin:
        return []
    links: Counter = Counter()
    singles: Counter = Counter()
    modules: dict[str, set] = {}
    speed: dict[str, float] = {}
    for j, lid in enumerate(plan.ids):
        tier = plan.tiers[j]
        links[tier] += 1
        m = int(plan.medium[j])
        if m not in twin:  # one cable of one port at the link's speed (800G on a tier whose cages run whole)
            singles[tier] += 1
            speed[tier] = max(speed.get(tier, 0.0), fabric.link(lid).speed)
            continue
        med = media[plan.media[m]]
        lk = fabric.link(lid)
        ends = module_ends(spec, fabric, lk, med.module_ports)
        lower = next((e for e in ends if e[0] == lk.a), ends[0] if ends else (lid, 0))
        modules.setdefault(tier, set()).add(lower)
        speed[tier] = max(speed.get(tier, 0.0), med.speed * med.module_ports)
    out = [PortCount(t, links[t], singles[t] + len(modules.get(t, ())), speed.get(t, 0.0)) for t in sorted(links)]
    return out if any(c.per_port != c.links for c in out) else []


def _known(length: float) -> float | None:
    """A stock length, or None for a link without one (a fabric-only study: NaN)."""
    return None if length != length else length


def _mass(length: float, per_metre: float) -> float:
    """kg of a cable of ``length``; 0 for a link without a length (a fabric-only study: its mass is not counted)."""
    return 0.0 if length != length else length * per_metre


def _at(length: float, per_metre: float, base: float = 0.0) -> float | None:
    """``base + length x per_metre`` to the cent, or None where it depends on a length a fabric-only study has not."""
    if length != length:
        return base if not per_metre else None
    return _cents(base + length * per_metre)


def _cents(usd: float) -> float:
    """A unit price rounded to the cent, so bom.csv and its sums do not carry float noise."""
    return round(usd, 2)


def campus_lines(spec: Spec, plan: CablePlan) -> list[BomLine]:
    """Links between buildings: two patch cords each (fiber of the optic's kind at stock length), the
    trunk cables of each building pair and the patch panels at both entrances."""
    cc, media, tr = plan.campus, spec.catalog.media, spec.campus.trunk
    out = []
    medium = plan.medium[cc.index]
    for i in np.unique(medium).tolist():
        med = media[plan.media[i]]
        lengths, counts = np.unique(cc.patch_stock[medium == i].ravel(), return_counts=True)
        item = f"{med.fiber}-{med.connector or 'fiber'}".lower().replace(" ", "-")
        for length, c in zip(lengths.tolist(), counts.tolist()):
            out.append(BomLine("cable", item, f"{med.fiber.upper()} fiber {med.connector} for {plan.media[i]}", length, c, 0.0, med.source,
                               length * med.weight_per_metre, _cents(length * med.price_per_metre)))
    src = "campus.trunk (fibers per cable and panel, spare share: assumed unless the site sets them)"
    panels = 0
    for t in cc.trunks:
        out.append(BomLine("trunk", f"smf-trunk-{tr.fibers_per_cable}f", f"{tr.fibers_per_cable}-fiber single-mode trunk {t.a}-{t.b}",
                           t.route_m, t.cables, 0.0, src))
        panels += 2 * t.panels
    out.append(BomLine("panel", f"patch-panel-{tr.fibers_per_panel}f", f"patch panel of {tr.fibers_per_panel} fibers at a building entrance",
                       None, panels, 0.0, src))
    return out


def _merge(lines: list[BomLine]) -> list[BomLine]:
    """Fiber of the same type, length and price ordered for two optic types is one line."""
    out: dict[tuple, BomLine] = {}
    for ln in lines:
        key = (ln.category, ln.item, ln.length_m, ln.unit_price)
        if key in out:
            o = out[key]
            desc = o.description if ln.description == o.description else o.description.split(" for ")[0]
            out[key] = BomLine(o.category, o.item, desc, o.length_m, o.quantity + ln.quantity, o.unit_power_w, o.source, o.unit_mass_kg, o.unit_price)
        else:
            out[key] = ln
    order = {"switch": 0, "endpoint": 1, "transceiver": 2, "cable": 3, "trunk": 4, "panel": 5}
    return sorted(out.values(), key=lambda ln: (order[ln.category], ln.item, ln.length_m or 0.0, ln.unit_price or 0.0))


def cable_mass(lines: tuple[BomLine, ...]) -> float:
    """kg of cable the trays carry (every cable's stock length x its medium's mass per metre)."""
    return sum(ln.total_mass_kg for ln in lines if ln.category == "cable")


def network_power(lines: tuple[BomLine, ...]) -> dict[str, float]:
    """Watts by category and in total (switches + powered cable ends)."""
    out = {c: sum(ln.total_power_w for ln in lines if ln.category == c) for c in ("switch", "endpoint", "transceiver", "cable")}
    out["total"] = sum(out.values())
    return out


def network_price(lines: tuple[BomLine, ...]) -> dict[str, float]:
    """USD by category and in total; items without a price count zero (``unpriced`` names them)."""
    out = {c: sum((ln.total_price or 0.0 for ln in lines if ln.category == c), 0.0) for c in ("switch", "transceiver", "cable")}
    out["total"] = sum(out.values())
    return out


def unpriced(lines: tuple[BomLine, ...]) -> list[str]:
    """Catalog items of the bill that have no price (their cost is missing from every capex figure)."""
    return sorted({ln.item for ln in lines if ln.unit_price is None})

"""The campus in report.md and ``cabling/trunks.csv``: buildings, routes, the campus tier, optics and
trunks, lossless headroom against buffers, latency by distance, collectives across buildings.

Both emit nothing for a site of one building.
"""

from __future__ import annotations

import csv
import io

import numpy as np

from twin.analysis import headroom as distance
from twin.compiler.design import Design
from twin.compiler.resolve.planes import spec_plane_ports
from twin.emit import buildings
from twin.emit.markdown import pct, table
from twin.lang.units import kw
from twin.physics import FIBER_DELAY_S_PER_M, HEADROOM_SHARE, PFC_RESPONSE_S

TRUNK_COLUMNS = ["building_a", "building_b", "route_m", "route", "one_way_us", "links", "optics", "fibers_in_use",
                 "fibers_with_spare", "trunk_cables", "fibers_per_cable", "panels_per_end", "fibers_per_panel"]
# [meta-ncclx]: rough one-way latencies of the Llama 4 generation's fabric, for comparison
PUBLISHED_US = {"another rack of the zone": "~35 (CTSW)", "another zone of the building": "~75 (ATSW)", "building": "up to ~150"}


def trunks_csv(design: Design) -> dict[str, bytes]:
    cc = design.cabling.campus if design.cabling is not None else None
    if cc is None:
        return {}
    tr = design.spec.campus.trunk
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(TRUNK_COLUMNS)
    for t in cc.trunks:
        w.writerow([t.a, t.b, f"{t.route_m:.1f}", t.how, f"{t.delay_s * 1e6:.2f}", t.links,
                    " ".join(f"{n}:{k}" for n, k in t.media.items()), t.fibers, t.fibers_spare, t.cables,
                    tr.fibers_per_cable, t.panels, tr.fibers_per_panel])
    return {"cabling/trunks.csv": buf.getvalue().encode("utf-8")}


def _km(m: float) -> str:
    return f"{m / 1000:,.2f} km"


def section(d: Design) -> str | None:
    cp = d.spec.campus
    if cp is None or d.fabric is None or d.cabling is None:
        return None
    out = ["## Campus\n"]
    out.append(_buildings(d))
    out.append(buildings.section(d))
    out.append(_tier(d))
    out.append(_routes(d))
    out.append(_headroom(d))
    out.append(_latency(d))
    out.append(_collectives(d))
    return "\n".join(out)


def _buildings(d: Design) -> str:
    cp, b = d.spec.campus, d.budget
    rows = []
    for bp in cp.buildings:
        it = sum(hb.it_power for hb in b.halls if hb.name in bp.halls)
        fac = sum(hb.facility_power for hb in b.halls if hb.name in bp.halls)
        loc = f"{bp.location[0] / 1000:g}, {bp.location[1] / 1000:g} km" if bp.location else "-"
        rows.append([bp.name, loc, len(bp.halls), len(bp.zones), f"{len(bp.zones) * d.spec.racks_per_zone * d.spec.rack.gpus:,}",
                     kw(it), f"{kw(fac)} (PUE {bp.pue:g})", kw(bp.utility), pct(fac / bp.utility)])
    return ("Buildings: every AI zone stays in one hall of one building; zones fill the buildings in order within "
            "their halls and their own feeds.\n\n" + table(
                ["building", "location", "halls", "AI zones", "GPUs", "IT load", "facility", "feed", "used"], rows, "llrrrrrrr"))


def _tier(d: Design) -> str:
    cp, shape = d.spec.campus, d.spec.shape
    info = shape.campus
    b = shape.boundary(cp.tier)
    at = shape.tier("atsw")
    if cp.topology == "full-mesh":
        how = (f"full mesh: ATSW k of each building to ATSW k of every other, {', '.join(f'{cp.buildings[x].name}-{cp.buildings[y].name} {m}' for (x, y), m in sorted(info.pair_links.items()))} "
               "links per ATSW pair")
    else:
        how = f"campus spine: {cp.spine_count} x {cp.spine_model} (level 4) in {cp.buildings[cp.spine_building].name}; every ATSW has {max(info.atsw_up)} uplinks"
    P = d.spec.shape.planes  # every plane has the same campus tier: a building's capacity is P times one plane's
    inj = d.spec.racks_per_zone * d.spec.rack.nics * d.spec.shape.boundaries[0].speed * spec_plane_ports(d.spec) * P
    rows = []
    for bp in cp.buildings:
        cap = info.atsw_per_building * info.atsw_up[bp.index] * b.speed * P
        layer = f"{info.atsw_per_building} x {at.model}" + (f" per plane, {P} planes" if P > 1 else "")
        rows.append([bp.name, layer, f"{max(info.atsw_down[bp.index])}", f"{info.atsw_up[bp.index]}",
                     f"{cap / 1e12:,.1f} Tbit/s", f"1/{len(bp.zones) * inj / cap:.2f}" if cap else "-"])
    text = (f"Campus tier: {how}; requested {b.requested:g}:1 (an ATSW's links from its zones : its campus links), built "
            f"{b.built:.2f}:1, {b.links:,} links at {b.speed / 1e9:g}G. eBGP: each building's ATSW layer is one ASN "
            "(level3 pool, in building order)" + (", the campus spine one more (level4)" if cp.topology == "spine" else "")
            + "; an ATSW gives the campus tier only its own building's routes."
            + (f" Each of the {P} planes has its own ATSW layer in every building and its own campus tier (the links above"
               " count every plane; no link joins two planes)." if P > 1 else "") + "\n\n")
    return text + table(["building", "ATSW layer", "links from zones per ATSW", "campus links per ATSW", "capacity out of the building",
                         "of its GPUs' injection"], rows, "llrrrr")


def _routes(d: Design) -> str:
    cc, tr = d.cabling.campus, d.spec.campus.trunk
    rows = []
    for t in cc.trunks:
        rows.append([f"{t.a}-{t.b}", _km(t.route_m), t.how, f"{t.delay_s * 1e6:.1f} us", f"{t.links:,}",
                     ", ".join(f"{k:,} x {n}" for n, k in t.media.items()), f"{t.fibers:,} / {t.fibers_spare:,}",
                     f"{t.cables:,}", f"{t.panels:,}"])
    return ("\nRoutes and trunks. A link between buildings is a patch cord at each end (rise, tray to the hall door, on to "
            "the building's fiber entrance; 10 % + 1.5 m slack, stock length) and fibers of the trunk between entrances; "
            "its optic is the first allowed one whose reach covers the whole run (DR4 500 m, FR4 2 km, LR4 10 km, ZR 80 km). "
            f"Fibers per link: the optic connector's positions (MPO-12: 12, LC duplex: 2); trunks of {tr.fibers_per_cable} "
            f"fibers with {tr.spare:.0%} spare; panels of {tr.fibers_per_panel} fibers at each entrance. File: `cabling/trunks.csv`.\n\n"
            + table(["route", "length", "from", "trunk delay (one way)", "links", "optics", "fibers (in use / with spare)", "trunk cables",
                     "panels per end"], rows, "lrlrrlrrr"))


def _headroom(d: Design) -> str:
    h = distance.headroom(d)
    rows = []
    for p in h["pairs"]:
        rows.append([f"{p.a}-{p.b}", f"{p.length_m:,.0f} m", f"{2 * p.one_way_us:.1f} us", f"{p.xoff_bytes / 1e6:.2f} MB",
                     (f"{p.room_bytes / 1e6:.2f} MB" if p.room_bytes > 0 else "none: its other ports fill the pool") + f" ({p.switch})",
                     "fits" if p.fits else "**does not fit**", _km(p.reach_m)])
    names, need, pool = h["names"], h["need"], h["pool"]
    atsw = [i for i, n in enumerate(names) if d.fabric.graph.nodes[n]["level"] >= 3]
    over = [names[i] for i in atsw if np.isfinite(pool[i]) and need[i] > pool[i]]
    mtu = d.spec.fabric.qos.mtu
    return ("\nLossless (PFC) headroom on the links between buildings: a port must absorb what arrives after it sends PAUSE, "
            f"line rate x (round trip at {FIBER_DELAY_S_PER_M * 1e9:g} ns/m + {PFC_RESPONSE_S * 1e6:g} us response) + 2 x MTU "
            f"({mtu} B), the xoff of the port's SONiC buffer profile (cable length in whole metres). A switch's ports share one "
            f"headroom pool of at most {HEADROOM_SHARE:.0%} of its buffer; a link fits when the pool at each end holds every port's "
            "xoff at once. Room per port: what the tightest end switch's other ports leave of its pool to this route's ports; "
            "lossless reach: the length whose xoff fills that room.\n\n"
            + table(["route", "longest link", "round trip", "xoff per port", "room per port (tightest switch)", "verdict", "lossless reach"],
                    rows, "lrrrlll")
            + (f"\n\nSwitches of the ATSW and campus tiers whose ports' xoff together exceed the pool: {len(over)}"
               + (f" ({', '.join(over[:6])}{', ...' if len(over) > 6 else ''})" if over else "") + ".\n"))


def _latency(d: Design) -> str:
    rows = []
    for r in distance.latency_ladder(d):
        ref = PUBLISHED_US.get(r["to"], PUBLISHED_US["building"] if r["to"].startswith("building") else "-")
        rows.append([r["to"], r["rack"], f"{r['one_way_us']:.1f}", f"{r['propagation_us']:.1f}", f"{r['forwarding_us']:.1f}", ref])
    return ("\nOne-way latency from the first rack's NIC, fastest path: propagation of every cable at its ordered length and "
            "each switch's forwarding latency from the catalog. The published figures ([meta-ncclx], rough, end to end with "
            "NICs, software and queues) are for comparison, not calibration.\n\n"
            + table(["to", "rack", "one way (us)", "propagation (us)", "forwarding (us)", "published (us)"], rows, "llrrrl"))


def _collectives(d: Design) -> str:
    rows = []
    for r in distance.cross_building_rings(d):
        for s in r["sizes"]:
            rows.append([r["ring"], r["gpus"], f"{r['latency_us']:.1f}", _size(s["bytes"]), f"{s['time_us']:,.0f}",
                         f"{s['busbw_GBps']:.1f}", pct(s["latency_share"])])
    return (f"\nRing AllReduce (twin, flow level, E-ECMP) on {distance.REPORT_RACKS} racks of one building, then on "
            f"{distance.REPORT_RACKS} racks of every building: each of the ring's 2(n-1) steps waits for its slowest hop, so "
            "the route between buildings sets the latency share. `twin simulate` with a scenario runs whole jobs across buildings.\n\n"
            + table(["ring", "GPUs", "step latency (us)", "size", "time (us)", "busbw GB/s", "latency share"], rows, "lrrrrrr"))


def _size(b: int) -> str:
    return f"{b / 2**30:g} GiB" if b >= 2**30 else f"{b / 2**20:g} MiB"

"""Per-switch configuration intent: everything a target needs, computed once from the fabric graph.

Targets never look at the graph: who peers with whom on which port at which speed, addresses, ASNs,
ECMP width and policies are resolved here, once per build, in one pass over the links (O(links)). A
template (FRR, EOS) or the SONiC builder is then a plain rendering of these dictionaries, so the
targets cannot disagree with each other. Every port's speed is its link's ``speed`` in the graph.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twin.compiler.address import ULA, Addressing
from twin.compiler.config import buffers
from twin.compiler.fabric.graph import Fabric, spine_group
from twin.compiler.resolve.spec import Spec

if TYPE_CHECKING:
    from twin.compiler.fabric.cabling import CablePlan

LEVEL_ROLE = {1: "rtsw", 2: "ctsw", 3: "atsw", 4: "cssw"}
HOST_IF = "Vlan1000"  # the rack's GPU subnet: a VLAN over the server-facing ports (SVI gateway)


def linux_ifname(port: str) -> str:
    """FRR runs on Linux: '/' is not allowed in interface names (EOS 'Ethernet3/1' -> 'Ethernet3_1')."""
    return port.replace("/", "_")


@dataclass(frozen=True)
class Intent:
    switches: dict[str, dict]  # name -> template context of that switch
    site: dict  # shared context: routing, qos, pools


def ecmp_widths(fabric) -> dict[str, int]:
    """The ECMP width each switch needs in a Clos: the larger of its uplink count (every remote
    destination is reached through all of them at equal AS-path length) and the links it has to one
    destination below (parallel links to a leaf; for the top tier, all links into one zone).

    lab-2zone: an RTSW has 16 uplinks (16); a CTSW has 4 links to each RTSW and 8 ATSW uplinks (8); an
    ATSW has no uplinks and 16 links into each zone (4 CTSWs x 4) (16). On a campus, an ATSW's links to
    the ATSW of another building (full mesh) or a campus spine's links into one building count like
    the links into one zone.

    >>> from twin import load
    >>> w = ecmp_widths(load("sites/lab-2zone.yaml").fabric)
    >>> w["lab1-z1-r001-rtsw"], w["z1-ctsw-01"], w["atsw-01"]
    (16, 8, 16)
    """
    g = fabric.graph
    up: Counter = Counter()
    down: dict[str, Counter] = defaultdict(Counter)
    for lk in fabric.cables():
        la, lb = g.nodes[lk.a].get("level", 0), g.nodes[lk.b].get("level", 0)
        if la < 1 or lb < 1:
            continue
        if la == lb:  # a campus mesh link: the racks of the peer's building are reached over all of them
            for me, peer in ((lk.a, lk.b), (lk.b, lk.a)):
                down[me][("building", g.nodes[peer].get("building"))] += 1
            continue
        lo, hi = (lk.a, lk.b) if la < lb else (lk.b, lk.a)
        up[lo] += 1
        top = g.nodes[hi].get("level")
        group = spine_group(g.nodes[lo]) if top == 3 else (("building", g.nodes[lo].get("building")) if top == 4 else lo)
        down[hi][group] += 1
    return {n: max([up.get(n, 0)] + list(down.get(n, Counter()).values()) + [1]) for n in fabric.switches()}


def build_intent(spec: Spec, fabric: Fabric, addr: Addressing | None, cabling: CablePlan) -> Intent | None:
    """The config-intent pass: per-switch context for every config target (None when not routed).

    Every port (a neighbour's or a server's) carries its cable's length in whole metres (``cable_m``)
    and the PFC headroom its lossless priority group reserves (``xoff``, bytes), both from
    :func:`twin.compiler.config.buffers.plan`, the model the distance verdict reads too."""
    if addr is None:
        return None
    hr = buffers.plan(spec, fabric, cabling)
    row = {link: i for i, link in enumerate(hr.ids)}

    def cable(link: str) -> dict:
        i = row[link]
        return {"cable_m": int(hr.metres[i]), "xoff": int(hr.xoff[i])}
    f = spec.fabric
    g = fabric.graph
    r = f.routing
    widths = ecmp_widths(fabric)
    sw: dict[str, dict] = {}
    for n in fabric.switches():
        node = g.nodes[n]
        level = node["level"]
        role = LEVEL_ROLE[level]
        width = widths[n] if r.ecmp_width is None else min(widths[n], r.ecmp_width)
        sw[n] = dict({
            "name": n,
            "role": role,
            "level": level,
            "zone": node.get("zone"),
            "building": node.get("building"),
            "model": node["model"],
            "asn": addr.asn[n],
            "router_id": addr.loopback[n].split("/")[0],
            "loopback": addr.loopback[n],
            "loopback6": addr.loopback6.get(n),
            "neighbors": [],
            "groups": {},
            "host": None,
            "maximum_paths": width,
            "originate": [addr.loopback[n]],
            "originate6": [addr.loopback6[n]] if n in addr.loopback6 else [],
        })
    server_ports: dict[str, list[dict]] = defaultdict(list)
    for lk in fabric.cables():
        if lk.a not in sw or lk.b not in sw:
            if lk.b in sw and lk.a not in sw:
                server_ports[lk.b].append(dict({
                    "link": lk.id, "port": lk.b_port, "peer": lk.a, "peer_port": lk.a_port, "speed": int(lk.speed), **cable(lk.id),
                }))
            continue
        for me, my_port, peer, peer_port, end in ((lk.a, lk.a_port, lk.b, lk.b_port, 0), (lk.b, lk.b_port, lk.a, lk.a_port, 1)):
            ctx = sw[me]
            prole = sw[peer]["role"]
            group = prole.upper()
            direction = "up" if sw[peer]["level"] > ctx["level"] else ("down" if sw[peer]["level"] < ctx["level"] else "lateral")
            ctx["groups"].setdefault(group, {"name": group, "role": prole, "direction": direction, "peer_asn": set()})
            ctx["groups"][group]["peer_asn"].add(sw[peer]["asn"])
            ip = ip6 = peer_ip = peer_ip6 = None
            if lk.id in addr.p2p:
                ip, peer_ip = addr.p2p[lk.id][end], addr.p2p[lk.id][1 - end]
            if lk.id in addr.p2p6:
                ip6, peer_ip6 = addr.p2p6[lk.id][end], addr.p2p6[lk.id][1 - end]
            ctx["neighbors"].append(dict({
                "link": lk.id,
                "port": my_port,
                "ifname": linux_ifname(my_port),
                "address": ip,
                "address6": ip6,
                "peer": peer,
                "peer_port": peer_port,
                "peer_ip": peer_ip.split("/")[0] if peer_ip else None,
                "peer_ip6": peer_ip6.split("/")[0] if peer_ip6 else None,
                "peer_asn": sw[peer]["asn"],
                "group": group,
                "speed": int(lk.speed),
                **cable(lk.id),
            }))
    for n, subnet in addr.rack_subnet.items():
        ctx = sw[n]
        ctx["host"] = dict({
            "ifname": HOST_IF,
            "vlan": int(HOST_IF[4:]),
            "subnet": subnet,
            "gateway": addr.rack_gateway[n],
            "subnet6": addr.rack_subnet6.get(n),
            "gateway6": addr.rack_gateway6.get(n),
            "ports": [p["port"] for p in server_ports.get(n, [])],
        })
        ctx["originate"] = [subnet] + ctx["originate"]
        if n in addr.rack_subnet6:
            ctx["originate6"] = [addr.rack_subnet6[n]] + ctx["originate6"]
    atsw_asns = sorted({a for n, a in addr.asn.items() if sw[n]["level"] == 3})
    campus_asns = sorted({a for n, a in addr.asn.items() if sw[n]["level"] >= 3})  # every building's ATSW layer, a campus spine
    for ctx in sw.values():
        ctx["groups"] = [
            dict({**grp, "peer_asn": sorted(grp["peer_asn"])}) for _, grp in sorted(ctx["groups"].items(), key=lambda kv: (kv[1]["direction"] != "down", kv[0]))
        ]
        ctx["server_ports"] = server_ports.get(ctx["name"], [])
    qos = f.qos
    ecn = qos.ecn
    site = dict({
        "name": spec.name,
        "unnumbered": addr.unnumbered,
        "ipv6": addr.ipv6,
        "bfd": r.bfd,
        "hash_fields": list(r.hash_fields),
        "pools": dict(addr.pools),
        "ula": str(ULA),
        "atsw_asns": atsw_asns,
        "campus_asns": campus_asns,
        "mtu": qos.mtu,
        "pfc_priority": qos.pfc_priority,
        "lossless_dscp": list(qos.lossless_dscp),
        "control_dscp": qos.control_dscp,
        "control_priority": 6 if qos.pfc_priority != 6 else 5,
        "ecn": None if ecn is None else dict({
            "min_bytes": int(ecn.min_threshold), "max_bytes": int(ecn.max_threshold),
            "probability": int(round(ecn.max_probability * 100)),
        }),
        "dcqcn": qos.dcqcn,
        "pfc_watchdog_ms": None if qos.pfc_watchdog is None else int(round(qos.pfc_watchdog * 1000)),
    })
    return Intent(sw, site)

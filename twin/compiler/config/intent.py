"""Per-switch configuration intent: everything a target needs, computed once from the fabric graph.

Targets never look at the graph: who peers with whom on which port at which speed, addresses, ASNs,
ECMP width and policies are resolved here, once per build, in one pass over the links (O(links)). A
template (FRR, EOS) or the SONiC builder is then a plain rendering of these records (one frozen
:class:`SwitchIntent` per switch, read by attribute), so the targets cannot disagree with each other.
Every port's speed is its link's ``speed`` in the graph.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from twin.compiler.address import ULA, Addressing
from twin.compiler.config import buffers
from twin.compiler.fabric.graph import Fabric, spine_group
from twin.compiler.resolve.spec import Spec
from twin.heap import collector_paused

if TYPE_CHECKING:
    from twin.compiler.fabric.cabling import CablePlan

LEVEL_ROLE = {1: "rtsw", 2: "ctsw", 3: "atsw", 4: "cssw"}
GROUP = {level: role.upper() for level, role in LEVEL_ROLE.items()}  # a BGP peer group is named by the peers' role
HOST_IF = "Vlan1000"  # the rack's GPU subnet: a VLAN over the server-facing ports (SVI gateway)


def linux_ifname(port: str) -> str:
    """FRR runs on Linux: '/' is not allowed in interface names (EOS 'Ethernet3/1' -> 'Ethernet3_1')."""
    return port.replace("/", "_")


def _direction(mine: int, peer: int) -> str:
    """Where a peer of level ``peer`` is seen from a switch of level ``mine``."""
    return "up" if peer > mine else ("down" if peer < mine else "lateral")


class _LinuxNames(dict):
    """port -> :func:`linux_ifname`, each port name worked out once (a few hundred names over 280K ends)."""

    def __missing__(self, port: str) -> str:
        name = self[port] = linux_ifname(port)
        return name


class Neighbor(NamedTuple):
    """One routed link of a switch, seen from its end."""

    link: str  # link id (the cable's)
    port: str
    ifname: str  # the port as a Linux interface name (FRR)
    address: str | None  # this end's /31 (None: unnumbered)
    address6: str | None
    peer: str
    peer_port: str
    peer_ip: str | None
    peer_ip6: str | None
    peer_asn: int
    group: str  # the peer group: the peer's role, upper case
    speed: int  # bit/s, the link's
    cable_m: int  # the cable's length, whole metres (its lossless headroom is sized for it)
    xoff: int  # bytes the port's lossless priority group reserves (twin.compiler.config.buffers)


class PeerGroup(NamedTuple):
    """The peers of one role: one BGP peer group."""

    name: str  # the role, upper case
    role: str
    direction: str  # "up", "down" or "lateral" (a campus mesh)
    peer_asn: tuple[int, ...]  # sorted


class ServerPort(NamedTuple):
    """A port facing a GPU NIC or a fabric attachment (not routed: a member of the rack VLAN)."""

    link: str
    port: str
    peer: str
    peer_port: str
    speed: int  # bit/s
    cable_m: int  # the cable's length, whole metres
    xoff: int  # bytes the port's lossless priority group reserves (twin.compiler.config.buffers)


class HostSubnet(NamedTuple):
    """A leaf's rack subnet: a VLAN over its server-facing ports with the gateway on its SVI."""

    ifname: str
    vlan: int
    subnet: str
    gateway: str
    subnet6: str | None
    gateway6: str | None
    ports: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SwitchIntent:
    """Everything a config target needs about one switch."""

    name: str
    role: str  # rtsw, ctsw, atsw, cssw: by level (the templates' names)
    level: int
    zone: int | None
    building: int | None
    model: str
    asn: int
    router_id: str
    loopback: str
    loopback6: str | None
    neighbors: tuple[Neighbor, ...]  # in link order
    groups: tuple[PeerGroup, ...]  # the groups below first, then by name
    host: HostSubnet | None
    maximum_paths: int  # the ECMP width configured
    originate: tuple[str, ...]  # prefixes announced (the rack subnet first, then the loopback)
    originate6: tuple[str, ...]
    server_ports: tuple[ServerPort, ...]


@dataclass(frozen=True)
class Intent:
    switches: dict[str, SwitchIntent]  # name -> that switch's intent
    site: dict  # shared context: routing, qos, pools


def ecmp_widths(fabric, level: dict[str, int] | None = None) -> dict[str, int]:
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

    ``level``: switch -> level, when the caller has it already.
    """
    nodes = fabric.graph._node  # node -> its attribute dict: plain lookups, not the view's
    if level is None:  # switch -> its level (``level >= 1``); servers, NICs and endpoints (-1, 0) are not in it
        level = {n: nodes[n]["level"] for n in fabric.switches()}
    up: Counter = Counter()
    down: dict[str, Counter] = defaultdict(Counter)
    for lk in fabric.cables():
        a, b = lk.a, lk.b
        la, lb = level.get(a, 0), level.get(b, 0)
        if la < 1 or lb < 1:
            continue
        if la == lb:  # a campus mesh link: the racks of the peer's building are reached over all of them
            down[a][("building", nodes[b].get("building"))] += 1
            down[b][("building", nodes[a].get("building"))] += 1
            continue
        lo, hi, top = (a, b, lb) if la < lb else (b, a, la)
        up[lo] += 1
        group = spine_group(nodes[lo]) if top == 3 else (("building", nodes[lo].get("building")) if top == 4 else lo)
        down[hi][group] += 1
    return {n: max([up.get(n, 0)] + list(down.get(n, Counter()).values()) + [1]) for n in fabric.switches()}


def build_intent(spec: Spec, fabric: Fabric, addr: Addressing | None, cabling: CablePlan) -> Intent | None:
    """The config-intent pass: per-switch context for every config target (None when not routed).

    Every port (a neighbour's or a server's) carries its cable's length in whole metres (``cable_m``)
    and the PFC headroom its lossless priority group reserves (``xoff``, bytes), both from
    :func:`twin.compiler.config.buffers.plan`, the model the distance verdict reads too."""
    if addr is None:
        return None
    with collector_paused():  # ~400K tuples, none cyclic: collections would only rescan the fabric graph under them
        return _build_intent(spec, fabric, addr, cabling)


def _build_intent(spec: Spec, fabric: Fabric, addr: Addressing, cabling: CablePlan) -> Intent:
    hr = buffers.plan(spec, fabric, cabling)  # per cable, in the order of fabric.cables() (plan checks it)

    f = spec.fabric
    g = fabric.graph
    r = f.routing
    asn, level = addr.asn, {}
    for n in fabric.switches():
        level[n] = g.nodes[n]["level"]
    widths = ecmp_widths(fabric, level)
    neighbors: dict[str, list[Neighbor]] = {n: [] for n in level}
    groups: dict[str, dict[str, tuple[str, str, set]]] = {n: {} for n in level}  # name -> (role, direction, peer ASNs)
    server_ports: dict[str, list[ServerPort]] = defaultdict(list)
    new = tuple.__new__  # a NamedTuple from its fields in order, without its keyword-parsing __new__ (280K ends at 100K GPUs)
    p2p, p2p6 = addr.p2p, addr.p2p6 or None
    ifnames = _LinuxNames()
    for lk, metres, xoff in zip(fabric.cables(), hr.metres.tolist(), hr.xoff.tolist(), strict=True):
        a, b = lk.a, lk.b
        la, lb = level.get(a), level.get(b)
        if la is None or lb is None:
            if lb is not None:
                server_ports[b].append(new(ServerPort, (lk.id, lk.b_port, a, lk.a_port, int(lk.speed), metres, xoff)))
            continue
        lid, a_port, b_port = lk.id, lk.a_port, lk.b_port
        speed = int(lk.speed)
        ip_a = ip_b = ip6_a = ip6_b = bare_a = bare_b = bare6_a = bare6_b = None
        ips = p2p.get(lid)
        if ips is not None:
            ip_a, ip_b = ips
            bare_a, bare_b = ip_a.split("/")[0], ip_b.split("/")[0]
        if p2p6 is not None and lid in p2p6:
            ip6_a, ip6_b = p2p6[lid]
            bare6_a, bare6_b = ip6_a.split("/")[0], ip6_b.split("/")[0]
        asn_a, asn_b = asn[a], asn[b]
        group_a, group_b = GROUP[la], GROUP[lb]
        # a's end: b is its peer (in the group of b's role), then b's end
        try:
            groups[a][group_b][2].add(asn_b)
        except KeyError:
            groups[a][group_b] = (LEVEL_ROLE[lb], _direction(la, lb), {asn_b})
        neighbors[a].append(new(Neighbor, (lid, a_port, ifnames[a_port], ip_a, ip6_a, b, b_port, bare_b, bare6_b, asn_b, group_b, speed,
                                           metres, xoff)))
        try:
            groups[b][group_a][2].add(asn_a)
        except KeyError:
            groups[b][group_a] = (LEVEL_ROLE[la], _direction(lb, la), {asn_a})
        neighbors[b].append(new(Neighbor, (lid, b_port, ifnames[b_port], ip_b, ip6_b, a, a_port, bare_a, bare6_a, asn_a, group_a, speed,
                                           metres, xoff)))
    sw: dict[str, SwitchIntent] = {}
    for n in fabric.switches():
        node = g.nodes[n]
        host = None
        originate, originate6 = [addr.loopback[n]], [addr.loopback6[n]] if n in addr.loopback6 else []
        if n in addr.rack_subnet:
            subnet = addr.rack_subnet[n]
            host = HostSubnet(HOST_IF, int(HOST_IF[4:]), subnet, addr.rack_gateway[n], addr.rack_subnet6.get(n),
                              addr.rack_gateway6.get(n), tuple(p.port for p in server_ports.get(n, [])))
            originate.insert(0, subnet)
            if n in addr.rack_subnet6:
                originate6.insert(0, addr.rack_subnet6[n])
        sw[n] = SwitchIntent(
            name=n, role=LEVEL_ROLE[level[n]], level=level[n], zone=node.get("zone"), building=node.get("building"),
            model=node["model"], asn=asn[n], router_id=addr.loopback[n].split("/")[0], loopback=addr.loopback[n],
            loopback6=addr.loopback6.get(n), neighbors=tuple(neighbors[n]),
            groups=tuple(PeerGroup(name, role, direction, tuple(sorted(asns)))
                         for name, (role, direction, asns) in sorted(groups[n].items(), key=lambda kv: (kv[1][1] != "down", kv[0]))),
            host=host, maximum_paths=widths[n] if r.ecmp_width is None else min(widths[n], r.ecmp_width),
            originate=tuple(originate), originate6=tuple(originate6), server_ports=tuple(server_ports.get(n, [])),
        )
    atsw_asns = sorted({a for n, a in asn.items() if level[n] == 3})
    campus_asns = sorted({a for n, a in asn.items() if level[n] >= 3})  # every building's ATSW layer, a campus spine
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

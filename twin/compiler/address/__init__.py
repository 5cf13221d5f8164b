"""ASN and IP plans for routed (RoCE) fabrics, RFC 7938 style.

Why this shape: with one ASN per spine tier of a zone (CTSW), one per rack switch and one for the whole
aggregation tier (ATSW), BGP's own AS-path loop check stops a route from going down into a zone and
back up, so paths are valley-free without per-prefix policy, and multipath-relax lets equal-length
paths through different ASNs share ECMP. A campus gives each building's ATSW layer its own ASN
(``level3`` pool, in building order) and a campus spine one more (``level4``), so routes cross
between buildings and the loop check keeps a building's routes from coming back into it. Addresses are handed out in link-id / name order, so the plan
is a pure function of the fabric graph: the same spec always gives the same addresses.

Example (lab-2zone)::

    >>> from twin import load
    >>> a = load("sites/lab-2zone.yaml").addressing
    >>> a.asn["z1-ctsw-01"], a.rack_subnet["lab1-z1-r001-rtsw"]
    (4201000000, '10.0.0.0/27')
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from twin.compiler.fabric.graph import spine_group
from twin.compiler.resolve.pools import rack_span, smallest_prefix, subnet_size
from twin.lang.diagnostics import InfeasibleError

if TYPE_CHECKING:
    from twin.compiler.fabric.graph import Fabric
    from twin.compiler.resolve.spec import Spec

# ASN pools are named by tier level (twin.lang.site.models.Routing.asn_pools)
POOL_OF_LEVEL = {1: "level1", 2: "level2", 3: "level3", 4: "level4"}
ULA = ipaddress.IPv6Network("fd00:7477:696e::/48")  # fixed ULA block for the IPv6 option ("twin")


@dataclass(frozen=True)
class Addressing:
    asn: dict[str, int]  # switch -> ASN
    loopback: dict[str, str]  # switch -> "a.b.c.d/32"
    p2p: dict[str, tuple[str, str]]  # link id -> (a end "x/31", b end "y/31"); empty when unnumbered
    rack_subnet: dict[str, str]  # leaf switch -> its GPU NIC subnet "n/len"
    rack_gateway: dict[str, str]  # leaf switch -> gateway on that subnet "g/len"
    unnumbered: bool
    ipv6: bool
    loopback6: dict[str, str] = field(default_factory=dict)
    p2p6: dict[str, tuple[str, str]] = field(default_factory=dict)
    rack_subnet6: dict[str, str] = field(default_factory=dict)
    rack_gateway6: dict[str, str] = field(default_factory=dict)
    pools: dict[str, str] = field(default_factory=dict)  # name -> CIDR, for policies (prefix lists)

    def role_asn(self, switch: str) -> int:
        return self.asn[switch]

    def pool_use(self) -> dict[str, tuple[int, int]]:
        """Pool name -> (addresses handed out, addresses in the pool): the report's table and the verdicts."""
        # each rack subnet is an IPv4 CIDR this pass wrote: 2^(32 - prefix length) addresses
        used = {"loopback_pool": len(self.loopback), "p2p_pool": 2 * len(self.p2p),
                "rack_pool": sum(1 << (32 - int(s.rpartition("/")[2])) for s in self.rack_subnet.values())}
        return {name: (used[name], ipaddress.ip_network(cidr).num_addresses) for name, cidr in sorted(self.pools.items())}


def _net(text: str, name: str) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(text, strict=True)
    except ValueError as e:
        raise InfeasibleError([f"routing.{name} '{text}' is not an IPv4 network: {e}"]) from None


def _check_overlaps(nets: dict[str, ipaddress.IPv4Network]) -> None:
    items = sorted(nets.items())
    problems = []
    for i, (a, na) in enumerate(items):
        for b, nb in items[i + 1:]:
            if na.overlaps(nb):
                problems.append(f"routing.{a} {na} overlaps routing.{b} {nb}")
    if problems:
        raise InfeasibleError(problems)


def _check_asn_pools(pools) -> None:
    names = sorted(pools)
    problems = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            pa, pb = pools[a], pools[b]
            if pa.first <= pb.last and pb.first <= pa.last:
                problems.append(f"routing.asn_pools.{a} ({pa.first}-{pa.last}) overlaps routing.asn_pools.{b} ({pb.first}-{pb.last})")
    if problems:
        raise InfeasibleError(problems)


def dotted(a: int) -> str:
    """An IPv4 address (an int) in dotted decimal, as ``str(ipaddress.IPv4Address(a))`` writes it, without
    building the object (a 100K-GPU fabric has ~600K addresses; the objects were most of this pass).

    >>> dotted(167772161), dotted(3232235775)
    ('10.0.0.1', '192.168.0.255')
    """
    return f"{a >> 24}.{a >> 16 & 255}.{a >> 8 & 255}.{a & 255}"


def dotted_run(start: int, count: int, step: int, suffix: str) -> list[str]:
    """``dotted(start + k * step) + suffix`` for k < count: the first three octets formatted once per /24.

    >>> dotted_run(167772414, 3, 1, "/32")
    ['10.0.0.254/32', '10.0.0.255/32', '10.0.1.0/32']
    """
    out: list[str] = []
    a, end = start, start + count * step
    while a < end:
        stop = min(end, (a >> 8) + 1 << 8)  # the end of a's /24
        prefix = f"{a >> 24}.{a >> 16 & 255}.{a >> 8 & 255}."
        run = range(a, stop, step)
        out += [f"{prefix}{x & 255}{suffix}" for x in run]
        a = run[-1] + step
    return out


def plan(spec: Spec, fabric: Fabric | None) -> Addressing | None:
    """The addressing pass: None for InfiniBand (OpenSM assigns LIDs) or when there is no fabric."""
    if fabric is None or spec.fabric.technology.value != "roce":
        return None
    r = spec.fabric.routing
    g = fabric.graph
    pools = {"loopback_pool": _net(r.loopback_pool, "loopback_pool"), "rack_pool": _net(r.rack_pool, "rack_pool")}
    if not r.unnumbered:
        pools["p2p_pool"] = _net(r.p2p_pool, "p2p_pool")
    _check_overlaps(pools)
    _check_asn_pools(r.asn_pools)

    switches = [n for n in fabric.switches()]
    levels = {n: g.nodes[n]["level"] for n in switches}

    # ---- ASNs: leaf one each; spine one per zone; top tier one for all.
    asn: dict[str, int] = {}
    used: dict[str, int] = {}
    zone_asn: dict[object, int] = {}
    for n in switches:
        pool_name = POOL_OF_LEVEL.get(levels[n])
        if pool_name is None:
            raise InfeasibleError([f"{n}: no ASN pool for a level-{levels[n]} switch"])
        pool = r.asn_pools[pool_name]
        if pool_name == "level1":
            idx = used.get(pool_name, 0)
            used[pool_name] = idx + 1
        elif pool_name == "level2":
            z = spine_group(g.nodes[n])  # one ASN per AI zone, or per pod of a tree of 3+ tiers
            if z not in zone_asn:
                zone_asn[z] = len(zone_asn)
            idx = zone_asn[z]
        elif pool_name == "level3":
            idx = g.nodes[n].get("building") or 0  # a campus: one ASN per building's ATSW layer
        else:
            idx = 0
        if pool.first + idx > pool.last:
            need = {"level1": sum(1 for x in switches if levels[x] == 1), "level2": len({spine_group(g.nodes[x]) for x in switches if levels[x] == 2}),
                    "level3": len({g.nodes[x].get("building") for x in switches if levels[x] == 3}), "level4": 1}[pool_name]
            raise InfeasibleError([
                f"routing.asn_pools.{pool_name} ({pool.first}-{pool.last}) has {pool.last - pool.first + 1} ASNs; "
                f"the fabric needs {need}"
            ])
        asn[n] = pool.first + idx

    # ---- loopbacks
    lo_net = pools["loopback_pool"]
    if len(switches) > lo_net.num_addresses - 2:
        raise InfeasibleError([(f"routing.loopback_pool {lo_net} has {lo_net.num_addresses - 2} addresses; the fabric has {len(switches)} switches:"
                                f" use a /{smallest_prefix(len(switches) + 2)} or larger")])
    lo_base = int(lo_net.network_address) + 1
    loopback = dict(zip(switches, dotted_run(lo_base, len(switches), 1, "/32"), strict=True))

    # ---- point-to-point links between switches (link-id order); NICs per leaf on the way
    cables = fabric.cables()
    nics_per_leaf: dict[str, int] = {n: 0 for n in switches if levels[n] == 1}
    routed = []
    for lk in cables:
        if lk.a in levels:
            if lk.b in levels:
                routed.append(lk)
        elif lk.b in nics_per_leaf:
            nics_per_leaf[lk.b] += 1
    p2p: dict[str, tuple[str, str]] = {}
    if not r.unnumbered:
        pn = pools["p2p_pool"]
        if 2 * len(routed) > pn.num_addresses:
            raise InfeasibleError([(f"routing.p2p_pool {pn} holds {pn.num_addresses // 2} /31 links; the fabric has {len(routed)} switch-to-switch links:"
                                    f" use a /{smallest_prefix(2 * len(routed))} or larger")])
        base = int(pn.network_address)
        ends = zip(dotted_run(base, len(routed), 2, "/31"), dotted_run(base + 1, len(routed), 2, "/31"), strict=True)
        p2p = dict(zip([lk.id for lk in routed], ends, strict=True))

    # ---- GPU NIC subnet per leaf (the rack switch): sized for its NICs + network, broadcast, gateway
    rack_net = pools["rack_pool"]
    rack_subnet: dict[str, str] = {}
    rack_gateway: dict[str, str] = {}
    cursor = int(rack_net.network_address)
    end = int(rack_net.broadcast_address) + 1
    for n, nics in nics_per_leaf.items():
        size = subnet_size(nics)
        cursor = (cursor + size - 1) // size * size
        if cursor + size > end:
            span = rack_span(tuple(nics_per_leaf.values()))
            raise InfeasibleError([(f"routing.rack_pool {rack_net} is exhausted after {len(rack_subnet)} of {len(nics_per_leaf)} rack subnets"
                                    f" (/{32 - size.bit_length() + 1} each): use a /{smallest_prefix(span)} or larger")])
        plen = 32 - (size.bit_length() - 1)
        rack_subnet[n] = f"{dotted(cursor)}/{plen}"
        rack_gateway[n] = f"{dotted(cursor + 1)}/{plen}"
        cursor += size

    extra: dict = {}
    if r.ipv6:
        base6 = int(ULA.network_address)
        extra["loopback6"] = {n: f"{ipaddress.IPv6Address(base6 | (0xFFFF << 64) | i + 1)}/128" for i, n in enumerate(switches)}
        extra["rack_subnet6"] = {n: f"{ipaddress.IPv6Address(base6 | ((i + 1) << 64))}/64" for i, n in enumerate(nics_per_leaf)}
        extra["rack_gateway6"] = {n: f"{ipaddress.IPv6Address(base6 | ((i + 1) << 64) | 1)}/64" for i, n in enumerate(nics_per_leaf)}
        if not r.unnumbered:
            p2pbase = base6 | (0xFFFE << 64)
            extra["p2p6"] = {lk.id: (f"{ipaddress.IPv6Address(p2pbase + 2 * i)}/127", f"{ipaddress.IPv6Address(p2pbase + 2 * i + 1)}/127") for i, lk in enumerate(routed)}
    return Addressing(
        asn=asn, loopback=loopback, p2p=p2p, rack_subnet=rack_subnet, rack_gateway=rack_gateway,
        unnumbered=r.unnumbered, ipv6=r.ipv6, pools={k: str(v) for k, v in pools.items()}, **extra,
    )

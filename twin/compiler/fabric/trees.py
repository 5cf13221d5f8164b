"""The fat-tree families on the graph: plain fat-tree, rail-optimized and rail-only.

All three are the same folded Clos (:mod:`twin.compiler.resolve.fat_tree`); they differ only in which leaf a NIC
lands on and in how many trees there are:

- fat-tree: NICs in site order, h = k/2 per leaf;
- rail-optimized: servers in groups of h; leaf ``group * g + i`` takes NIC i of every server in the
  group (g NICs per server), so a leaf is one rail of a group and same-rank GPUs talk in one hop; on a
  rack-scale system (``rack_scale``) the hosts are its compute trays, so rail i is GPU position i of a tray;
- rail-only: K = hb_domain rails; rail r (the NICs whose GPU has rank r in its NVLink domain) is its
  own fat-tree, named ``rail<r+1>-leaf-0001``..., with no switch joining two rails (cross-rail
  traffic is forwarded over NVLink inside the domain).

Rails that share switches (``shape.rails_per_switch`` R > 1, :mod:`twin.compiler.resolve.tree_sizing`):
rail-only rails of one tier go R to a switch, ``rails<a>-<b>-leaf-0001`` for rails a..b, each rail on
its own run of ports (rail a first); rail-optimized groups shrink to h/R servers and leaf
``group * g/R + i // R`` takes NICs i of rails ``R * (i // R)``... of every server in the group. A
shared leaf carries ``rail`` (its first rail) and ``rails`` (R); the twin keeps the rails of a shared
rail-only switch apart (one partition per rail).

A tier in a wider breakout mode (``fabric.cages``, :mod:`twin.compiler.resolve.cage_modes`) joins every ``r``
links of a pair of switches into one link on a whole port. Switches hang on the placement's "fabric" network
racks in build order (leaves, then upper tiers).
"""

from __future__ import annotations

import math
from collections import Counter

from twin.compiler.fabric.attach import add_attachments
from twin.compiler.fabric.graph import Builder, Fabric
from twin.compiler.fabric.hosts import add_hosts
from twin.compiler.fabric.mount import Mounter
from twin.compiler.place.model import Placement
from twin.compiler.place.naive import system_racks
from twin.compiler.resolve.cage_modes import factors
from twin.compiler.resolve.fat_tree import TreeShape, boundary, role_names
from twin.compiler.resolve.planes import plane_prefix, spec_plane_ports
from twin.compiler.resolve.spec import Spec
from twin.compiler.resolve.tree_sizing import rail_hosts


def site_nics(b: Builder, spec: Spec, placement: Placement, speed: float, hb_domain: int | None) -> list[str]:
    """Every NIC of the site in (rack, server, gpu) order; the last rack may be part-filled."""
    servers_left = math.ceil(spec.gpus / spec.chassis.gpus) if spec.chassis.gpus else 0
    nics: list[str] = []
    first = 0
    for unit in system_racks(spec, placement.racks):  # a rack, or a rack pair holding one system (NVL36x2)
        n = min(spec.rack_type.servers, servers_left)
        if n <= 0:
            break
        nics.extend(add_hosts(b, spec, unit[0], speed, servers=n, first_server=first, hb_domain=hb_domain, pair=unit[1:]))
        servers_left -= n
        first += n
    return nics


def add_tree(b: Builder, ts: TreeShape, attach: list[tuple[tuple[str, str], int]], spec: Spec, mounter: Mounter,
             speed: float, prefix: str = "", rail: int | None = None, leaf_rails: int | None = None, packed: int = 1,
             plane: int | None = None) -> None:
    """Switches of one tree, NIC links (``attach`` = ((nic, port), leaf index)) and the tier boundaries.

    ``rail`` tags every switch (rail-only), ``leaf_rails`` the leaves by their rail (rail-optimized:
    leaf i of a group carries rail ``(i mod leaf_rails) * packed``); ``packed`` > 1 adds ``rails``;
    ``plane`` (0-based) tags every switch of a plane of a multi-plane fabric."""
    f = spec.fabric
    model = spec.switch(f.switch)
    roles = role_names(ts.tiers)
    ids: list[list[str]] = []
    for t, count in enumerate(ts.switches):
        w = max(4, len(str(count)))
        tier = []
        for i in range(count):
            sid = f"{prefix}{roles[t]}-{i + 1:0{w}d}"
            rack, u = mounter.mount(sid, model)
            r = rail if rail is not None else ((i % leaf_rails) * packed if leaf_rails and t == 0 else None)
            extra = {"rail": r} if r is not None else {}
            if t == 1 and ts.tiers >= 3:
                extra["pod"] = i // (ts.radix // 2)  # the spines of one pod: their own ASN under eBGP
            if packed > 1 and r is not None:
                extra["rails"] = packed
            if plane is not None:
                extra["plane"] = plane
            b.switch(sid, f.switch, model, role=roles[t], level=t + 1, hall=rack.hall, zone=None, rack=rack.id, u=u, **extra)
            tier.append(sid)
        ids.append(tier)
    leaf_tier = f"nic-{roles[0]}"
    for (nic, port), leaf in attach:
        lid = ids[0][leaf]
        b.link(nic, port, lid, b.port(lid), speed, leaf_tier)
    wide = factors(spec)
    for t in range(1, ts.tiers):
        lower, upper, tier = ids[t - 1], ids[t], f"{roles[t - 1]}-{roles[t]}"
        r = wide.get(tier, 1)
        if r == 1:
            for lo, hi in boundary(ts, t):
                b.uplink(lower[lo], upper[hi], model.port_speed, tier)
            continue
        run: Counter = Counter()  # a tier in a wider mode: every r-th link of a pair of switches is one port
        for lo, hi in boundary(ts, t):
            run[lo, hi] += 1
            if run[lo, hi] % r == 0:
                b.whole(lower[lo], upper[hi], r * model.port_speed, tier, r)


def plane_endpoints(nics: list[str], plane: int, per_plane: int) -> list[tuple[str, str]]:
    """The (NIC, port) endpoints of one plane, NIC by NIC: NIC ports ``plane * per_plane + 1``... go to
    plane ``plane`` (``port1`` on a single-plane fabric of single-port NICs).

    >>> plane_endpoints(["n1", "n2"], 1, 1)
    [('n1', 'port2'), ('n2', 'port2')]
    """
    return [(nic, f"port{plane * per_plane + j + 1}") for nic in nics for j in range(per_plane)]


def synthesize(spec: Spec, placement: Placement) -> Fabric:
    """The tree, once per plane (``plane<p>-`` before its switch names on a multi-plane fabric)."""
    f = spec.fabric
    ts = spec.shape.tree
    R = spec.shape.rails_per_switch
    k = ts.radix
    h = max(1, k // 2)
    speed = spec.shape.boundaries[0].speed
    P, pp = spec.shape.planes, spec_plane_ports(spec)
    b = Builder()
    mounter = Mounter(placement, "fabric", None)
    per_leaf = k if ts.tiers == 1 else h
    nics = site_nics(b, spec, placement, spec.nic_speed, f.hb_domain if spec.family.rails_apart else None)
    for p in range(P):
        plane = p if P > 1 else None
        pre = plane_prefix(p, P)
        if spec.family.rails_apart:
            K = f.hb_domain
            for grp in range(spec.shape.trees):
                rails = range(grp * R, grp * R + R)
                members = plane_endpoints([nic for r in rails for nic in nics[r::K]], p, pp)
                attach = [(nic, e // per_leaf) for e, nic in enumerate(members)]
                prefix = f"rail{grp + 1}-" if R == 1 else f"rails{rails[0] + 1}-{rails[-1] + 1}-"
                add_tree(b, ts, attach, spec, mounter, speed, prefix=pre + prefix, rail=rails[0], packed=R, plane=plane)
        elif spec.family.rail_groups:
            g = rail_hosts(spec)[0]  # NIC ports per server on a plane, or per compute tray of a rack-scale system
            ends = plane_endpoints(nics, p, pp)
            if ts.tiers == 1:
                attach = [(nic, 0) for nic in ends]
            else:
                group, leaves = max(1, h // R), max(1, g // R)
                attach = [(nic, (e // g // group) * leaves + (e % g) // R) for e, nic in enumerate(ends)]
            add_tree(b, ts, attach, spec, mounter, speed, prefix=pre, leaf_rails=max(1, g // R) if ts.tiers > 1 else None,
                     packed=R, plane=plane)
        else:
            attach = [(nic, e // per_leaf) for e, nic in enumerate(plane_endpoints(nics, p, pp))]
            add_tree(b, ts, attach, spec, mounter, speed, prefix=pre, plane=plane)
    add_attachments(b, spec, placement)
    return b.build(f.family.value, f.technology.value, spec.shape.boundary_names, spec.shape.roles)

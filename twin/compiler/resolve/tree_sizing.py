"""Sizing of the tree families (fat-tree, rail-optimized, rail-only) as reference designs size them.

Pure arithmetic on the spec, read only by :mod:`twin.compiler.resolve.shape` (the one owner of every sizing
fact); the fabric pass builds what the shape says. Three rules live here, each with its reason:

- **Even uplink splits.** The top tier of a tree needs at least ``ceil(m / 2)`` switches for ``m``
  switches below it (every top port faces down). Reference designs take the smallest count at or
  above that minimum over which each lower switch's ``h = k/2`` uplinks divide evenly (a divisor of
  h, or h or more switches, one link each), and leave the spare ports free: an uneven split (32
  uplinks over 12 spines: 3 links to 8 of them, 2 to the other 4) gives ECMP and adaptive routing
  unequal weights and makes the spines with more links hot spots. :func:`even_count`.
- **Pinned counts.** ``fabric.atsw.count`` pins the top tier (spines of a 2-tier tree, cores of 3),
  in total; a rail-only fabric splits it over its trees. The spec checks refuse a pin that cannot
  carry the uplinks and warn, with the numbers, when it splits them unevenly.
- **Rails that share switches** (:func:`rails_per_switch`). A rail that fills at most half of a
  switch leaves the rest idle; with ``rails_per_switch: auto`` (the default) several rails share one
  switch, as the rail-only paper [rail-only] counts a rail's ports rather than whole switches:
  128 GPUs per rail on 256-port switches is two rails per switch, half the switches. Rail-only keeps
  the rails apart on a shared switch (one partition per rail: a VLAN/VRF on Ethernet, a partition key
  on InfiniBand; the twin routes each rail separately); rail-optimized leaves need no separation
  (its rails meet at the spines anyway). Only a 1-tier rail can share: a rail of several tiers fills
  its leaves (k/2 down, k/2 up).

>>> even_count(12, 32), even_count(2, 32), even_count(3, 32), even_count(40, 32)
(16, 2, 4, 40)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twin.compiler.resolve import fat_tree
from twin.compiler.resolve.planes import spec_plane_ports
from twin.compiler.resolve.sizing import fat_tree_tiers

if TYPE_CHECKING:
    from twin.compiler.resolve.spec import Spec


def even_count(minimum: int, uplinks: int) -> int:
    """Smallest count >= ``minimum`` over which ``uplinks`` links of one lower switch split evenly:
    a divisor of ``uplinks``, or ``uplinks`` or more switches (one link to each)."""
    n = max(1, minimum)
    while n < uplinks and uplinks % n:
        n += 1
    return n


def split(uplinks: int, switches: int) -> tuple[int, int, int, int]:
    """How ``uplinks`` links of one lower switch fall on ``switches`` upper ones when spread round
    the ring: (switches with the larger share, that share, switches with the smaller share, that share).

    >>> split(32, 12), split(32, 16)
    ((8, 3, 4, 2), (16, 2, 0, 2))
    """
    if uplinks <= switches:
        return uplinks, 1, switches - uplinks, 0
    q, r = divmod(uplinks, switches)
    return (r, q + 1, switches - r, q) if r else (switches, q, 0, q)


@dataclass(frozen=True)
class TreeSizing:
    """One tree of the fabric and how many there are."""

    tree: fat_tree.TreeShape  # one tree (one rail, or one group of rails sharing switches, of rail-only)
    trees: int  # rail-only: trees in the site; 1 otherwise
    rails_per_switch: int  # rails sharing a leaf (1: none)
    nics: int  # NICs on the whole fabric
    leaf_down: int  # NICs on the fullest leaf
    top_minimum: int  # fewest top switches per tree that carry the uplinks (0 for a 1-tier tree)
    top_pinned: bool  # the top count comes from fabric.atsw.count


def servers(spec: Spec) -> int:
    return math.ceil(spec.gpus / spec.chassis.gpus) if spec.chassis.gpus else 0


def rail_hosts(spec: Spec) -> tuple[int, int]:
    """(NIC ports per host on one plane, hosts) of a rail-optimized fabric's server groups: a host is a server,
    or a compute tray of a rack-scale system, whose rails are the GPU positions of a tray ([dgx-gb200-ra])."""
    rs = spec.chassis.rack_scale
    p = spec_plane_ports(spec)
    if rs is None:
        return spec.chassis.nics * p, servers(spec)
    return max(1, spec.chassis.nics // rs.compute_trays) * p, math.ceil(spec.gpus / rs.gpus_per_tray)


def nics(spec: Spec) -> int:
    """NIC ports on one plane of a tree fabric: the GPUs asked for times NICs per GPU (the last rack may be
    part-filled) times each NIC's ports on a plane (:mod:`twin.compiler.resolve.planes`; one on one plane)."""
    return spec.gpus * spec.chassis.nics // max(1, spec.chassis.gpus) * spec_plane_ports(spec)


def rail_fill(spec: Spec) -> tuple[int, int]:
    """(ports one rail takes on a switch it could share, ports of that switch open to rails).

    Rail-only: a 1-tier rail takes its NICs of the switch's k ports (a rail of several tiers fills
    its leaves: k of k). Rail-optimized: a rail takes one port per server of a group on the leaf's
    k/2 down-ports.
    """
    f = spec.fabric
    k = spec.switch(f.switch).ports
    n = nics(spec)
    if spec.family.rails_apart:
        per_rail = n // max(1, f.hb_domain)
        one_tier = (f.tiers or fat_tree_tiers(per_rail, k)) == 1
        return (per_rail, k) if one_tier else (k, k)
    return min(rail_hosts(spec)[1], k // 2), k // 2


def packings(spec: Spec) -> list[int]:
    """Rail counts that can share a switch: divisors of the rails (rail-only) or of both the NICs per
    server and k/2 (rail-optimized, so that groups hold whole servers)."""
    f = spec.fabric
    if spec.family.rails_apart:
        rails = f.hb_domain
        return [d for d in range(1, rails + 1) if rails % d == 0]
    g, h = rail_hosts(spec)[0], spec.switch(f.switch).ports // 2
    return [d for d in range(1, max(1, g) + 1) if g % d == 0 and h % d == 0]


def rails_per_switch(spec: Spec) -> int:
    """Rails per shared switch: the spec's number, or (auto) the most that fit when one rail fills at
    most half of the switch; 1 for a family without rails."""
    f = spec.fabric
    if not spec.family.has_rails:
        return 1
    if f.rails_per_switch != "auto":
        return f.rails_per_switch
    fill, room = rail_fill(spec)
    if fill == 0 or 2 * fill > room:
        return 1
    return max(d for d in packings(spec) if d * fill <= room)


def tree_sizing(spec: Spec) -> TreeSizing:
    """The tree of ``spec``'s fabric with the even-split top tier, pins and rail packing applied."""
    f = spec.fabric
    k = spec.switch(f.switch).ports
    h = max(1, k // 2)
    n = nics(spec)
    fam = spec.family
    R = max(1, rails_per_switch(spec))
    if fam.rails_apart and f.hb_domain % R:
        R = 1  # the spec checks refuse a packing that does not divide the rails
    trees = 1
    leaves = None
    per_tree = n
    if fam.rails_apart:
        trees = max(1, f.hb_domain // R)
        per_tree = n // max(1, trees)
    elif fam.rail_groups:
        g, hosts = rail_hosts(spec)
        group = max(1, h // R)  # hosts per group: each leaf takes R rails of ``group`` servers (or trays)
        leaves = math.ceil(hosts / group) * max(1, g // R)
    L = f.tiers or fat_tree_tiers(per_tree, k)
    base = fat_tree.shape(per_tree, k, L, leaves=leaves)
    pinned = f.atsw.count if f.atsw is not None and f.atsw.count is not None and L > 1 else None
    top_min = base.switches[-1] if L > 1 else 0
    if L == 1:
        top = None
    elif pinned is not None:
        top = max(1, pinned // trees)
    else:
        top = even_count(top_min, h)
    ts = fat_tree.shape(per_tree, k, L, leaves=leaves, top=top)
    if L == 1:
        leaf_down = math.ceil(per_tree / max(1, ts.switches[0]))
    elif fam.rail_groups:
        leaf_down = R * min(rail_hosts(spec)[1], h // R)
    else:
        leaf_down = min(h, per_tree)
    return TreeSizing(ts, trees, R, n, leaf_down, top_min, pinned is not None)

"""A scalable-unit fabric counted from what the site states (``fabric.unit``; the ``scalable-unit`` family).

NVIDIA's DGX SuperPOD GB200 fabric (RA-11338-001, Table 4.1, 2-16 SU) as it is drawn [dgx-gb200-ra]:

- **leaves**: one per compute rack per rail (``leaf.hosts: rack``; or ``H`` hosts, which divide a rack's
  hosts or are whole racks), ``H`` ports down (one per host on its rail) and ``leaf.up`` up;
- **spines**: the leaves of one rail of one SU are an *SU leaf group* with spines of their own,
  ``leaves x leaf.up / spine.down`` of them; each leaf sends ``leaf.up / spines`` links to each;
- **rails_meet: spine** instead makes a unit's leaves of every rail one SU leaf group (``R x`` the leaves),
  so its spines join the rails and the cores join the units; with ``rail_group: G`` (a divisor of ``R``) a
  group holds ``G`` rails of one unit (``G x`` the leaves), its spines join those rails and the cores join
  the ``R / G`` rail groups of every unit;
- **cores**: rails meet only here. Spine ``j`` of every leaf group goes to *core group* ``j``, so there
  are as many core groups as a leaf group has spines; a group has the fewest cores that take its
  ``groups x spine.up`` links on ``k`` ports and over which a spine's uplinks split evenly
  (:func:`twin.compiler.resolve.tree_sizing.even_count`).

At 2 SU of GB200 NVL72 on 64-port QM9700 (18 trays per rack, 4 rails, ``leaf.up`` 18, spine 24/24):
8 x 4 x 2 = 64 leaves, 8 x 18 / 24 = 6 spines per group (48), 2 x 4 x 24 / 64 = 3 cores in each of 6
groups (18): every tier carries 1,152 cables. What cannot be built is refused by :func:`findings` with
the counts that can.

>>> groups_of(rails=4, units=2), even_split_counts(18, 8 * 18, 40), even_split_counts(18, 8 * 18, 40, around=7)
(8, [6, 9, 18], [6, 9])
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twin.compiler.resolve.planes import spec_plane_ports
from twin.compiler.resolve.tree_sizing import even_count
from twin.lang.diagnostics import Severity

if TYPE_CHECKING:
    from twin.compiler.resolve.spec import Spec

E = Severity.ERROR


@dataclass(frozen=True)
class UnitShape:
    """One plane's scalable-unit fabric, counted."""

    units: int  # scalable units in the site
    rails: int  # rails: NIC ports per host on a plane (a tray's GPU positions, a server's NICs)
    rack_hosts: int  # hosts per compute rack
    leaf_hosts: int  # hosts per leaf on its rail
    leaves: int  # leaves per SU leaf group (one rail of one unit)
    leaf_up: int  # uplinks per leaf
    spines: int  # spines per SU leaf group = core groups
    spine_down: int  # links into a spine from its group's leaves
    spine_up: int  # uplinks per spine
    cores: int  # cores per core group
    rails_meet: str = "core"  # where a unit's rails first meet: "core" (a leaf group per rail per unit) or "spine"
    rail_group: int = 1  # rails of one SU leaf group: 1 (rails meet at the core), all of them or a divisor (at the spine)

    @property
    def groups(self) -> int:
        """SU leaf groups: one per rail group per unit (a rail group is one rail when the rails meet at the core)."""
        return self.units * max(1, self.rails // self.rail_group)

    @property
    def rail_leaves(self) -> int:
        """Leaves of one rail of one unit."""
        return self.leaves // self.rail_group

    @property
    def core_groups(self) -> int:
        return self.spines

    @property
    def core_down(self) -> int:
        """Links into the busiest core of a group."""
        return math.ceil(self.groups * self.spine_up / max(1, self.cores))

    def counts(self) -> tuple[int, int, int]:
        """(leaves, spines, cores) of the plane."""
        return self.groups * self.leaves, self.groups * self.spines, self.core_groups * self.cores


def groups_of(rails: int, units: int) -> int:
    return rails * units


def even_split_counts(up: int, links: int, limit: int, around: int | None = None) -> list[int]:
    """Spine counts near ``links / down`` that take ``links`` evenly and split ``up`` evenly: divisors of
    ``up`` that divide ``links`` into at most ``limit`` per spine, nearest ``around`` first (all when None)."""
    ok = [d for d in range(1, up + 1) if up % d == 0 and links % d == 0 and links // d <= limit]
    if around is not None:
        ok.sort(key=lambda d: (abs(d - around), d))
    return sorted(ok[:2]) if around is not None else ok


def rack_hosts(spec: Spec) -> int:
    """Hosts of one compute rack: its servers, or a rack-scale system's compute trays (per rack of a pair)."""
    rs = spec.chassis.rack_scale
    if rs is None:
        return spec.rack_type.servers
    return max(1, rs.compute_trays * spec.rack_type.servers // rs.racks)


def host_count(spec: Spec) -> int:
    """Hosts of the site (a rack-scale system's trays; the last rack may be part-filled)."""
    rs = spec.chassis.rack_scale
    if rs is None:
        return math.ceil(spec.gpus / max(1, spec.chassis.gpus))
    return math.ceil(spec.gpus / rs.gpus_per_tray)


def rails(spec: Spec) -> int:
    """NIC ports per host on one plane: the rails."""
    rs = spec.chassis.rack_scale
    per_host = spec.chassis.nics // rs.compute_trays if rs is not None else spec.chassis.nics
    return max(1, per_host) * spec_plane_ports(spec)


def leaf_hosts(spec: Spec) -> int:
    h = spec.fabric.unit.leaf.hosts
    return rack_hosts(spec) if h == "rack" else max(1, h)


def unit_shape(spec: Spec) -> UnitShape:
    """The counts (never raises: a combination :func:`findings` refuses still gets a shape to word it)."""
    u = spec.fabric.unit
    k = spec.switch(spec.fabric.switch).ports
    R = rails(spec)
    rh = rack_hosts(spec)
    H = leaf_hosts(spec)
    unit_hosts = u.racks * rh
    units = max(1, math.ceil(host_count(spec) / unit_hosts))
    G = group_rails(spec)
    leaves = max(1, math.ceil(unit_hosts / H)) * G  # of one SU leaf group
    up = u.leaf.up if u.leaf.up is not None else H
    spines = max(1, math.ceil(leaves * up / u.spine.down))
    sdown = math.ceil(leaves * up / spines)
    links = units * max(1, R // G) * u.spine.up  # into one core group
    cores = even_count(math.ceil(links / k), u.spine.up)
    return UnitShape(units, R, rh, H, leaves, up, spines, sdown, u.spine.up, cores, u.rails_meet, G)


def group_rails(spec: Spec) -> int:
    """Rails of one SU leaf group: 1 where the rails meet at the core; else ``rail_group`` or every rail (at
    most the rails, so a refused group still counts)."""
    u = spec.fabric.unit
    if u.rails_meet == "core":
        return 1
    return max(1, min(u.rail_group or rails(spec), rails(spec)))


def findings(spec: Spec) -> Iterator[tuple[Severity, tuple, str, str]]:
    """What cannot be built as stated, located at the field, with the counts that would work."""
    u = spec.fabric.unit
    us = spec.shape.unit
    k = spec.switch(spec.fabric.switch).ports
    base = ("fabric", "unit")
    rh, H = us.rack_hosts, us.leaf_hosts
    if u.rail_group is not None:
        R = us.rails
        if u.rails_meet == "core" and u.rail_group > 1:
            yield E, base + ("rail_group",), (
                f"a group of {u.rail_group} rails meets at its spines, but rails_meet is core (an SU leaf group is one rail)"), (
                "rails_meet: spine, or no rail_group")
            return
        if R % u.rail_group or u.rails_meet == "spine" and u.rail_group == 1:
            ok = ", ".join(str(d) for d in range(2, R + 1) if R % d == 0)
            what = ("a group of 1 rail keeps the rails apart up to the cores" if u.rail_group == 1 else
                    f"a group of {u.rail_group} rails does not divide the {R} rails of a unit")
            yield E, base + ("rail_group",), what, f"one of {ok} (rails meeting at the spines), or rails_meet: core"
            return
    if H > rh and H % rh or H < rh and rh % H:
        ok = [d for d in range(1, rh + 1) if rh % d == 0]
        yield E, base + ("leaf", "hosts"), (
            f"{H} hosts per leaf neither divide a rack's {rh} hosts nor make whole racks"), (
            f"'rack', a divisor of {rh} ({', '.join(map(str, ok))}) or a multiple of {rh}")
        return
    if u.racks * rh % H:
        yield E, base + ("racks",), f"{u.racks} racks of {rh} hosts do not split into leaves of {H} hosts", f"a multiple of {H // math.gcd(H, rh)} racks"
        return
    hosts = host_count(spec)
    unit_hosts = u.racks * rh
    if hosts % unit_hosts:
        gpus_per_unit = spec.gpus * unit_hosts // max(1, hosts)
        lo = hosts // unit_hosts * gpus_per_unit
        near = ", ".join(f"{x:,}" for x in (lo, lo + gpus_per_unit) if x > 0)
        yield E, ("fabric", "gpus"), (
            f"{spec.gpus:,} GPUs are {hosts / unit_hosts:.2f} scalable units of {u.racks} racks; a unit's leaves, spines and "
            f"cables are built whole"), f"whole units: {near} GPUs"
    if H + us.leaf_up > k:
        yield E, base + ("leaf", "up"), (
            f"a leaf ({spec.fabric.switch}, {k} ports) needs {H} down + {us.leaf_up} up = {H + us.leaf_up}"), f"at most {k - H} up"
    if u.spine.down + u.spine.up > k:
        yield E, base + ("spine",), (
            f"a spine ({spec.fabric.switch}, {k} ports) needs {u.spine.down} down + {u.spine.up} up = {u.spine.down + u.spine.up}"), (
            f"down + up at most {k}")
    links = us.leaves * us.leaf_up
    if links % u.spine.down or us.leaf_up % us.spines:
        near = even_split_counts(us.leaf_up, links, k - u.spine.up, around=links // u.spine.down)
        downs = ", ".join(f"down {links // d} ({d} spines)" for d in near)
        yield E, base + ("spine", "down"), (
            f"an SU leaf group's {us.leaves} leaves x {us.leaf_up} uplinks = {links} links do not fall evenly on spines of "
            f"{u.spine.down} down ports (each leaf must send the same number of links to every spine of its group)"), (
            downs or f"a leaf uplink count with a divisor that divides {links}")
    if us.cores * k < us.groups * us.spine_up:  # even_count never gives fewer; kept for a pinned core count
        yield E, base + ("spine", "up"), f"{us.cores} cores per group cannot take {us.groups * us.spine_up} links", "fewer spine uplinks"

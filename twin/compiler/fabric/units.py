"""A scalable-unit fabric on the graph: leaves per rack per rail, spines per SU leaf group, core groups.

The counts are the shape's (:mod:`twin.compiler.resolve.unit_shape`); this module wires them:

- host ``x`` (a server, or a rack-scale system's compute tray, in site order) of unit ``x // unit_hosts``
  puts its NIC port of rail ``i`` on leaf ``(x mod unit_hosts) // H`` of leaf group (unit, rail ``i``),
  named ``su<u>-rail<i>-leaf-NN``;
- leaf uplink ``t`` goes to spine ``t mod S`` of its own group (``su<u>-rail<i>-spine-NN``), so each leaf
  sends ``up / S`` links to every spine of its group and no switch below the cores joins two rails;
- spine ``j`` of group ``g`` sends uplink ``t`` to core ``(g * up + t) mod C`` of core group ``j``
  (``cg<j>-core-NN``): a spine's uplinks spread evenly over its group's C cores and, when C exceeds
  them, the groups' start points rotate so every core takes the same number of links.

With ``rails_meet: spine`` a unit's leaves of every rail are one leaf group: its spines are named
``su<u>-spine-NN`` and carry no ``rail``; with ``rail_group: G`` below the rails, a group's spines are
``su<u>-rails<a>-<b>-spine-NN`` and carry its first rail as ``rail`` and ``rails: G`` (as a leaf shared by
rails does).

Leaves carry ``rail`` and ``unit``; spines ``rail`` and ``pod`` (the unit: one ASN per leaf group
under eBGP); cores ``group``. A tier in a wider breakout mode (``fabric.cages``) joins every ``r`` links of a
pair of switches into one link on a whole port. A multi-plane fabric is one copy per plane (``plane<p>-`` before the names).
Switches hang on the placement's "fabric" network racks in build order.
"""

from __future__ import annotations

from collections import Counter

from twin.compiler.fabric.attach import add_attachments
from twin.compiler.fabric.graph import Builder, Fabric
from twin.compiler.fabric.mount import Mounter
from twin.compiler.fabric.trees import plane_endpoints, site_nics
from twin.compiler.place.model import Placement
from twin.compiler.resolve.cage_modes import factors
from twin.compiler.resolve.planes import plane_prefix, spec_plane_ports
from twin.compiler.resolve.spec import Spec


def _width(n: int) -> int:
    return max(2, len(str(n)))


def _rails_named(grp: int, G: int, R: int) -> str:
    """The rails in a leaf group's spine names: ``-rail3`` (one rail), none (every rail), ``-rails3-4`` (a rail group).

    >>> _rails_named(2, 1, 4), _rails_named(0, 4, 4), _rails_named(1, 2, 4)
    ('-rail3', '', '-rails3-4')
    """
    if G == 1:
        return f"-rail{grp + 1}"
    return "" if G == R else f"-rails{grp * G + 1}-{grp * G + G}"


def synthesize(spec: Spec, placement: Placement) -> Fabric:
    f = spec.fabric
    us = spec.shape.unit
    model = spec.switch(f.switch)
    up_speed = model.port_speed
    speed = spec.shape.boundaries[0].speed
    P, pp = spec.shape.planes, spec_plane_ports(spec)
    R, H = us.rails, us.leaf_hosts
    unit_hosts = us.rack_hosts * f.unit.racks
    b = Builder()
    mounter = Mounter(placement, "fabric", None)
    nics = site_nics(b, spec, placement, spec.nic_speed, None)
    wu, wl, ws, wc = len(str(us.units)), _width(us.leaves), _width(us.spines), _width(us.cores)

    def switch(sid: str, role: str, level: int, plane: int | None, **extra) -> str:
        rack, u = mounter.mount(sid, model)
        if plane is not None:
            extra["plane"] = plane
        b.switch(sid, f.switch, model, role=role, level=level, hall=rack.hall, zone=None, rack=rack.id, u=u, **extra)
        return sid

    wide = factors(spec)

    def run(lower: str, uppers: list[str], tier: str) -> None:
        """A switch's uplinks in order; on a tier in a wider mode (fabric.cages) every r-th to one upper switch is one port."""
        r = wide.get(tier, 1)
        if r == 1:
            for hi in uppers:
                b.uplink(lower, hi, up_speed, tier)
            return
        seen: Counter = Counter()
        for hi in uppers:
            seen[hi] += 1
            if seen[hi] % r == 0:
                b.whole(lower, hi, r * up_speed, tier, r)

    for p in range(P):
        plane = p if P > 1 else None
        pre = plane_prefix(p, P)
        leaves: dict[tuple[int, int], list[str]] = {}
        spines: dict[tuple[int, int], list[str]] = {}
        G = us.rail_group  # rails of a leaf group: 1 (rails meet at the core), R (at the spine) or a divisor between
        for unit in range(us.units):
            for rail in range(R):
                su = f"{pre}su{unit + 1:0{wu}d}-rail{rail + 1}"
                leaves[unit, rail] = [switch(f"{su}-leaf-{i + 1:0{wl}d}", "leaf", 1, plane, rail=rail, unit=unit) for i in range(us.rail_leaves)]
        for unit in range(us.units):
            for grp in range(R // G):
                su = f"{pre}su{unit + 1:0{wu}d}" + _rails_named(grp, G, R)
                where = {"rail": grp} if G == 1 else ({"rail": grp * G, "rails": G} if G < R else {})
                spines[unit, grp] = [switch(f"{su}-spine-{j + 1:0{ws}d}", "spine", 2, plane, pod=unit, **where) for j in range(us.spines)]
        cores = [[switch(f"{pre}cg{j + 1}-core-{c + 1:0{wc}d}", "core", 3, plane, group=j) for c in range(us.cores)]
                 for j in range(us.core_groups)]
        for e, (nic, port) in enumerate(plane_endpoints(nics, p, pp)):
            host, rail = divmod(e, R)
            unit, at = divmod(host, unit_hosts)
            lid = leaves[unit, rail][at // H]
            b.link(nic, port, lid, b.port(lid), speed, "nic-leaf")
        for (unit, rail), group in leaves.items():
            mine = spines[unit, rail // G]
            for lid in group:
                run(lid, [mine[t % us.spines] for t in range(us.leaf_up)], "leaf-spine")
        for g, key in enumerate(sorted(spines)):
            for j, sid in enumerate(spines[key]):
                run(sid, [cores[j][(g * us.spine_up + t) % us.cores] for t in range(us.spine_up)], "spine-core")
    add_attachments(b, spec, placement)
    return b.build(f.family.value, f.technology.value, spec.shape.boundary_names, spec.shape.roles)

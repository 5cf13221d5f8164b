"""The report's sizing section: the fabric's shape as the spec sized it (``spec.shape``).

Per tier the switches and the ports of its busiest switch (down, up, attached endpoints, free); per
tier boundary the links and the oversubscription asked for against the one built, with the reason
when they differ; the fabric attachments; for InfiniBand the LIDs the subnet needs. The fabric
section beside it counts the same figures on the graph, which the fabric pass proved equal.
"""

from __future__ import annotations

from twin.compiler.design import Design
from twin.compiler.resolve.fabric_checks import IB_UNICAST_LIDS
from twin.emit.bom import port_table
from twin.emit.markdown import table
from twin.lang.site.models import Technology


def ratio(x: float | None) -> str:
    """'6.86:1', or '-' when there is nothing to show.

    >>> ratio(192 / 28), ratio(None), ratio(1.0)
    ('6.86:1', '-', '1:1')
    """
    if x is None:
        return "-"
    return "1:1" if abs(x - 1.0) < 1e-9 else f"{x:.2f}:1"


def section(d: Design) -> str:
    s = d.spec
    shape = s.shape
    out = ["## Sizing\n",
           "The fabric as sized from the spec before any graph existed (the fabric pass builds exactly this). Ports are "
           "those of the busiest switch of a tier; requested is the oversubscription the spec asks for (tree families: "
           "1:1 by construction), built the down:up bandwidth of the tier below the boundary. Rules: docs/howto/size-a-fabric.md (Size a fabric like a vendor reference).\n"]
    rows = [[t.role, t.model, f"{t.count:,}", t.down, t.up, t.attach, t.free, t.radix] for t in shape.tiers]
    out.append(table(["tier", "model", "switches", "down", "up", "attached", "free", "radix"], rows, "llrrrrrr"))
    rs = s.chassis.rack_scale
    if rs is not None and s.family.has_rails:
        out.append(f"\nRails follow the {rs.gpus_per_tray} GPU positions of a compute tray: each leaf takes one position of "
                   f"its trays; the NVLink domain is the {'rack pair' if rs.racks > 1 else 'rack'}'s {s.chassis.domain} GPUs ({rs.compute_trays} compute trays, "
                   f"{rs.switch_trays} NVLink switch trays).\n")
    if shape.planes > 1:
        ports = s.chassis.nic_ports // shape.planes
        out.append(f"\n{shape.planes} planes, each its own fabric of {shape.switches // shape.planes:,} switches (`plane1-...`): every NIC "
                   f"puts {ports} of its {s.chassis.nic_ports} ports on each plane at {shape.boundaries[0].speed / 1e9:g}G; "
                   f"the counts below are the whole site's, {shape.planes} x one plane's.\n")
    if shape.rails_per_switch > 1:
        out.append(f"\n{shape.rails_per_switch} rails share each leaf (`fabric.rails_per_switch`); the NVLink domain stays "
                   f"{s.fabric.hb_domain} GPUs.\n")
    rows = [[b.name, f"{b.links:,}", f"{b.speed / 1e9:g}G", ratio(b.requested), ratio(b.built), b.reason or "-"]
            for b in shape.boundaries]
    out.append("\n" + table(["boundary", "links", "speed", "requested", "built", "why they differ"], rows, "lrrrrl"))
    vendor = port_table(d)
    if vendor:
        out.append("\n" + vendor)
    if shape.attachments:
        rows = [[a.name, a.kind, a.role, a.count, a.ports, f"{a.speed / 1e9:g}G", f"ep-{a.name}"] for a in shape.attachments]
        out.append("\nFabric attachments (non-GPU endpoints), ports spread round the tier's switches:\n\n"
                   + table(["name", "kind", "tier", "endpoints", "ports each", "speed", "racks"], rows, "lllrrrl"))
    if s.fabric.technology == Technology.INFINIBAND:
        lmc = s.fabric.infiniband.lmc
        out.append(f"\nInfiniBand LIDs: {shape.lids(lmc):,} of {IB_UNICAST_LIDS:,} unicast LIDs in one subnet "
                   f"(2^{lmc} per HCA port, one per switch).\n")
    return "\n".join(out)

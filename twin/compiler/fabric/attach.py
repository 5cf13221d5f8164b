"""Fabric attachments in the graph: endpoints mounted on their network racks and cabled to the tier's
switches by the rule :mod:`twin.compiler.resolve.attach_shape` sizes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from twin.compiler.fabric.graph import Builder
from twin.compiler.fabric.mount import Mounter

if TYPE_CHECKING:
    from twin.compiler.place.model import Placement
    from twin.compiler.resolve.spec import Spec


def add_attachments(b: Builder, spec: Spec, placement: Placement) -> None:
    """Endpoints, mounted on their network racks, and their cables to the tier's switches."""
    shapes = spec.shape.attachments
    if not shapes:
        return
    by_role: dict[str, list[str]] = {}
    for node, attrs in b.nodes:
        if attrs.get("role") in {s.role for s in shapes}:
            by_role.setdefault(attrs["role"], []).append(node)
    models = {a.name: a for a in spec.fabric.attachments}
    for s in shapes:
        att = models[s.name]
        mounter = Mounter(placement, s.rack_role(), None)
        targets = by_role[s.role]
        for e in range(s.count):
            dev = s.device(e)
            rack, u = mounter.mount(dev, att)
            b.node(dev, role="endpoint", kind=s.kind, level=0, model=s.name, hall=rack.hall, zone=None, rack=rack.id, u=u)
            for q in range(s.ports):
                sw = targets[s.switch_of(e, q)]
                b.link(dev, f"port{q + 1}", sw, b.port(sw), s.speed, s.tier)

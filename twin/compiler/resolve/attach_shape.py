"""Fabric attachments: non-GPU endpoints (subnet managers, storage, gateways) cabled into a switch tier.

Rule (the shape counts it, the fabric pass wires it): the attachments of one tier take that tier's
switches round the ring in spec order, port by port. Port q of endpoint e of an attachment whose
first port is number ``first`` on the tier goes to switch ``(first + e * ports + q) mod n`` (n the
tier's switches, in graph order), so

- an endpoint's ports land on different switches while it has no more ports than the tier has
  switches (a dual-ported subnet manager survives the loss of one switch);
- every switch of the tier carries ``J // n`` or ``J // n + 1`` attachment ports for the tier's ``J``
  attachment ports, which is what the port budget checks and the free-port figures count.

An attachment in free node slots (``node_slot``, leaf tier only) takes instead the down-ports no node
uses on leaves whose group is part-filled: ``slots`` lists those leaves (one entry per free slot, in
graph order), and port ``first + e * ports + q`` goes to ``slots[...]``; those ports are the leaf's own
down-ports, so they add nothing to its attachment count.

Devices are named ``<name>-01``...; they are nodes of role ``endpoint`` (attributes ``kind``, ``level``
0, ``model`` = the attachment's name, ``hall``, ``zone`` None, ``rack``, ``u``), each cable a link of
tier ``<name>-<role>`` (``ufm-spine``). They hang in network racks of role ``ep-<name>``.

>>> a = AttachShape("ufm", "subnet-manager", "spine", count=2, ports=2, speed=400e9, first=0, switches=4)
>>> [a.switch_of(e, q) for e in range(2) for q in range(2)], attach_ports(4, 4, 0), attach_ports(6, 4, 1)
([0, 1, 2, 3], 1, 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twin.compiler.resolve.spec import Spec


@dataclass(frozen=True)
class AttachShape:
    """One attachment of the spec as the shape sizes it."""

    name: str
    kind: str
    role: str  # the switch tier it attaches to
    count: int  # endpoints
    ports: int  # per endpoint
    speed: float  # bit/s per link: the slower of the endpoint port and the switch port
    first: int  # number of its first port among the tier's attachment ports
    switches: int  # switches of the tier
    node_slot: bool = False  # it takes free node slots' down-ports (``slots``), not spare ports
    slots: tuple[int, ...] = ()  # the leaf of each free node slot of the tier, in order

    @property
    def tier(self) -> str:
        """The graph's link tier of its cables."""
        return f"{self.name}-{self.role}"

    @property
    def links(self) -> int:
        return self.count * self.ports

    def switch_of(self, endpoint: int, port: int) -> int:
        x = self.first + endpoint * self.ports + port
        if self.node_slot:  # more ports than free slots is refused by the checks
            return self.slots[x % len(self.slots)] if self.slots else 0
        return x % max(1, self.switches)

    def on_switch(self, index: int) -> int:
        """A node-slot attachment's ports on switch ``index`` (0 for a spare-port one: see attach_ports)."""
        if not self.node_slot:
            return 0
        fits = len(self.slots) - self.first  # ports beyond the free slots are refused by the checks, not counted here
        return sum(1 for e in range(self.count) for q in range(self.ports) if e * self.ports + q < fits and self.switch_of(e, q) == index)

    def device(self, endpoint: int) -> str:
        return f"{self.name}-{endpoint + 1:0{max(2, len(str(self.count)))}d}"

    def rack_role(self) -> str:
        return f"ep-{self.name}"


def attach_ports(total: int, switches: int, index: int) -> int:
    """Attachment ports on switch ``index`` of a tier of ``switches`` that carries ``total`` of them."""
    q, r = divmod(total, max(1, switches))
    return q + (1 if index < r else 0)


def attach_shapes(spec: Spec, tiers: dict[str, tuple[int, float]], free: tuple[int, ...] = ()) -> tuple[AttachShape, ...]:
    """The spec's attachments on ``tiers`` (role -> (switches, port speed)); an attachment on a tier
    the family does not have is left out here (the spec checks refuse it). ``free``: the leaf of each free
    node slot, for node-slot attachments (they take them in spec order)."""
    out = []
    used: dict[str, int] = {}
    slot = 0
    for a in spec.fabric.attachments:
        if a.tier not in tiers:
            continue
        n, port_speed = tiers[a.tier]
        speed = min(a.speed, port_speed)
        if a.node_slot:
            out.append(AttachShape(a.name, a.kind, a.tier, a.count, a.ports, speed, slot, n, True, tuple(free)))
            slot += a.count * a.ports
            continue
        first = used.get(a.tier, 0)
        out.append(AttachShape(a.name, a.kind, a.tier, a.count, a.ports, speed, first, n))
        used[a.tier] = first + a.count * a.ports
    return tuple(out)


def free_slots(nics_per_leaf: tuple[int, ...], down: int) -> tuple[int, ...]:
    """The leaf of every free node slot: ``down - nics`` entries for each leaf, in graph order.

    >>> free_slots((32, 31, 30), 32)
    (1, 2, 2)
    """
    return tuple(i for i, n in enumerate(nics_per_leaf) for _ in range(max(0, down - n)))

"""Hanging switches on the racks the placement produced.

Switches fill the network racks of their role (and zone) in rack order, bottom-up, as many per rack
as fit in the usable height and as the placement powered it for (``PlacedRack.switches``); a rack switch sits at the top of its GPU rack, servers from the bottom.
The U position feeds the cable labels and the vertical rise of every cable route.
"""

from __future__ import annotations

from twin.compiler.place.model import NETWORK_RACK_U, PlacedRack, Placement
from twin.lang.diagnostics import InfeasibleError
from twin.lang.site.catalog_models import SwitchModel


class Mounter:
    """Places switches one after the other on the network racks of one (role, zone)."""

    def __init__(self, placement: Placement, role: str, zone: int | None = None, halls: tuple[str, ...] | None = None):
        racks = placement.network_racks(role=role, zone=zone)
        if halls is not None:  # a campus: one building's racks of a role shared by its zones
            racks = [r for r in racks if r.position.hall in halls]
        self.racks = sorted(racks, key=lambda r: (r.index, r.id))
        self.role, self.zone, self.halls = role, zone, halls
        self.rack = 0
        self.used_u = 0
        self.count = 0  # switches on the current rack

    def mount(self, device: str, model: SwitchModel) -> tuple[PlacedRack, int]:
        """(rack, lowest U) for the next switch; raises if the placement left too few racks."""
        h = model.height_u
        # the placement powered each rack for ``switches`` devices; never hang more than that on it
        planned = self.racks[self.rack].switches if self.rack < len(self.racks) else 0
        if self.used_u and (self.used_u + h > NETWORK_RACK_U or (planned and self.count >= planned)):
            self.rack += 1
            self.used_u = 0
            self.count = 0
        if self.rack >= len(self.racks):
            where = f" of zone {self.zone + 1}" if self.zone is not None else (f" in {', '.join(self.halls)}" if self.halls else "")
            raise InfeasibleError([
                f"{device}: the placement has only {len(self.racks)} '{self.role}' network rack(s){where};"
                f" not enough room ({NETWORK_RACK_U}U each) for every {model.height_u}U switch"
            ])
        u = self.used_u + 1
        self.used_u += h
        self.count += 1
        return self.racks[self.rack], u


def rtsw_u(rack_height_u: int, model: SwitchModel, index: int) -> int:
    """Rack switches stack down from the top of the GPU rack (index 0 highest)."""
    return rack_height_u - (index + 1) * model.height_u + 1


def server_u(chassis_height_u: int, index: int) -> int:
    """Servers stack up from U1."""
    return 1 + index * chassis_height_u

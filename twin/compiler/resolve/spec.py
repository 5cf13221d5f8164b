"""The resolved spec: a validated site with its catalog merged and every derived count filled in.

Passes downstream read these figures instead of recomputing them, so "GPUs per rack" or "rack power"
mean the same thing in the placement, the fabric, the BOM and the report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from twin.lang.site.catalog_models import Catalog, Chassis, SwitchModel
from twin.lang.site.families import FamilyTraits, family_traits
from twin.lang.site.models import Hall, RackType, Site

if TYPE_CHECKING:
    from twin.compiler.resolve.campus_plan import CampusPlan
    from twin.compiler.resolve.shape import FabricShape


@dataclass(frozen=True)
class HallSlots:
    """The positions (row, slot) of a hall by use: free for GPU racks, reserved for network racks.

    Positions reserved for anything else are in neither. The one definition of a hall's usable floor.
    """

    free: tuple[tuple[int, int], ...]
    network: tuple[tuple[int, int], ...]

    @staticmethod
    def of(h: Hall) -> HallSlots:
        net = {(r, p) for res in h.reserved if res.purpose == "network" for r in res.rows for p in res.positions}
        other = {(r, p) for res in h.reserved if res.purpose != "network" for r in res.rows for p in res.positions}
        grid = [(r, p) for r in range(1, h.rows + 1) for p in range(1, h.positions_per_row + 1)]
        return HallSlots(tuple(x for x in grid if x not in net and x not in other), tuple(x for x in grid if x in net))


@dataclass(frozen=True)
class RackFigures:
    """Per-rack figures derived from its contents and the GPU power cap."""

    gpus: int
    nics: int
    gpu_power_cap: float  # W
    server_power: float  # W, one server at the cap (a rack pair's system: both racks)
    rtsw_power: float  # W, all rack switches of the rack
    power: float  # W, the whole rack at full load
    weight: float  # kg


@dataclass(frozen=True)
class Spec:
    """Everything a pass needs to know about the input, already checked."""

    site: Site
    catalog: Catalog
    source_path: str
    source_sha256: str
    rack_type_name: str
    rack_type: RackType
    chassis: Chassis
    rtsw_model: SwitchModel | None
    rack: RackFigures
    gpus: int
    racks: int
    zones: int
    racks_per_zone: int
    nic_speed: float  # bit/s
    slots: dict[str, HallSlots] = field(default_factory=dict)  # hall name -> its positions by use
    shape: FabricShape | None = None  # every derived sizing fact of the fabric (twin.compiler.resolve.shape)
    campus: CampusPlan | None = None  # buildings, their halls and zones, routes (twin.compiler.resolve.campus_plan)

    @property
    def positions(self) -> dict[str, int]:
        """Hall name -> positions free for GPU racks."""
        return {name: len(s.free) for name, s in self.slots.items()}

    @property
    def name(self) -> str:
        return self.site.name

    @property
    def fabric(self):
        return self.site.fabric

    @property
    def family(self) -> FamilyTraits:
        """The fabric family's traits (twin/lang/site/families.py): what passes ask instead of its name."""
        return family_traits(self.site.fabric.family)

    def switch(self, name: str) -> SwitchModel:
        return self.catalog.switches[name]


def rack_figures(rt: RackType, chassis: Chassis, rtsw: SwitchModel | None, planes: int = 1) -> RackFigures:
    """Rack power: servers at the GPU power cap (each GPU below TDP saves TDP - cap) plus switches. A
    system over a pair of racks (``chassis.span`` 2, NVL36x2) puts half its GPUs, NICs, power and mass in each.
    A rack of a multi-plane AI zone holds its rack switches once per plane (``planes``)."""
    cap = rt.gpu_power_cap if rt.gpu_power_cap is not None else chassis.gpu_tdp
    server = chassis.max_power - chassis.gpus * max(0.0, chassis.gpu_tdp - cap)
    rtsw_power = (rtsw.power if rtsw else 0.0) * (rt.rtsw_count * planes if rtsw else 0)
    span = chassis.span
    power = rt.servers * server / span + rtsw_power + rt.other_power
    weight = rt.weight + rt.servers * chassis.weight / span + (rtsw.weight * rt.rtsw_count * planes if rtsw else 0.0)
    return RackFigures(
        gpus=rt.servers * chassis.gpus // span,
        nics=rt.servers * chassis.nics // span,
        gpu_power_cap=cap,
        server_power=server,
        rtsw_power=rtsw_power,
        power=power,
        weight=weight,
    )


def rack_heat(rt: RackType, chassis: Chassis, figures: RackFigures) -> tuple[float, float]:
    """(liquid, air) heat of one rack in W: a rack-scale system's ``liquid_fraction`` of its own power goes
    to the liquid loop, the rest of the rack (switches, other power) to air; without ``rack_scale`` all air."""
    share = chassis.rack_scale.liquid_fraction if chassis.rack_scale is not None else 0.0
    liquid = rt.servers * figures.server_power * share / chassis.span
    return liquid, figures.power - liquid


def derive_counts(site: Site, gpus_per_rack: int) -> tuple[int, int, int, int]:
    """(gpus, racks, zones, racks_per_zone) from whichever of them the user gave.

    For AI-zone fabrics the zone shape is primary; for the other families the GPU count is, and the
    racks are grouped into zones of ``racks_per_zone`` (default: all racks in one zone).
    """
    f = site.fabric
    if f.zones and f.racks_per_zone:
        zones, rpz = f.zones, f.racks_per_zone
        racks = zones * rpz
        gpus = f.gpus if f.gpus is not None else racks * gpus_per_rack
        return gpus, racks, zones, rpz
    if f.gpus is None:
        return 0, 0, 0, 0
    racks = math.ceil(f.gpus / gpus_per_rack)
    if f.racks_per_zone:
        rpz = f.racks_per_zone
        zones = math.ceil(racks / rpz)
    elif f.zones:
        zones = f.zones
        rpz = math.ceil(racks / zones)
    else:
        zones, rpz = 1, racks
    return f.gpus, racks, zones, rpz

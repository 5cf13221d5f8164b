"""The power budget reconciled with the bill of materials: every network watt the BOM lists is in the
site's IT and facility power, optics included.

Before the fabric exists the budget (:mod:`twin.compiler.resolve.feasibility`) estimates the switches
outside the GPU racks from the shape and cannot know the optics (a cable's medium follows from its
length). Once the BOM exists this pass replaces the estimate with the bill: the network watts split into
the switches outside the GPU racks (and fabric endpoints), the rack switches (already inside each GPU
rack's power) and the optics and powered cable ends; the difference goes into the site's and each hall's
IT and facility power. One owner: the report, review.json, design.json, the verdicts and the power twin
all read the reconciled budget, so the BOM's network watts equal the budget's by construction (tested).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from twin.compiler.fabric.bom import BomLine, network_power
from twin.compiler.resolve.feasibility import Budget, hall_pue

RACK_SWITCH = "rtsw"  # the switch role that sits inside a GPU rack (its watts are in the rack's power)


@dataclass(frozen=True)
class NetworkWatts:
    """The BOM's network power by where it sits in the budget (W)."""

    outside_racks: float  # switches in network racks and fabric endpoints: the budget's network line
    rack_switches: float  # switches inside the GPU racks: in every GPU rack's power
    optics_and_cables: float  # transceivers and powered cable ends

    @property
    def total(self) -> float:
        return self.outside_racks + self.rack_switches + self.optics_and_cables


def network_watts(spec, fabric, bom: tuple[BomLine, ...]) -> NetworkWatts:
    """Split the BOM's network watts (:func:`twin.compiler.fabric.bom.network_power`) by where they sit."""
    npw = network_power(bom)
    in_racks = sum(spec.switch(a["model"]).power for _, a in fabric.graph.nodes(data=True) if a.get("role") == RACK_SWITCH)
    return NetworkWatts(npw["switch"] - in_racks + npw["endpoint"], in_racks, npw["transceiver"] + npw["cable"])


def reconcile(spec, budget: Budget, fabric, bom: tuple[BomLine, ...]) -> Budget:
    """``budget`` with the BOM's network watts in place of the shape's estimate, optics included: the site's
    and each hall's IT and facility power grow by the difference (each hall by its share of the GPU racks,
    as the estimate spread the network)."""
    nw = network_watts(spec, fabric, bom)
    delta = nw.outside_racks + nw.optics_and_cables - budget.network_power
    racks = sum(hb.gpu_racks for hb in budget.halls) or 1
    halls = []
    for hb in budget.halls:
        it = hb.it_power + delta * hb.gpu_racks / racks
        halls.append(replace(hb, it_power=it, facility_power=it * hall_pue(spec, hb.name)))
    it = budget.it_power + delta
    return replace(budget, network_power=nw.outside_racks, optics_power=nw.optics_and_cables, rack_switch_power=nw.rack_switches,
                   it_power=it, facility_power=it * spec.site.power.pue, halls=halls, network_from_bom=True)

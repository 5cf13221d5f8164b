"""A fabric-only study: a site with a fabric and rack types but no halls (and no buildings).

An architect sizing a fabric against a vendor's table has no floor yet, and a floor written out with made-up
halls, power and cooling would put made-up figures in every artifact that reads it. A site without halls
is a study of the fabric alone. What it builds, from the spec alone:

- the fabric graph (racks of the rack type, as many as the GPUs take, standing nowhere: no hall, row or
  slot; a switch and an attachment are in no rack, :func:`unmounted`);
- the links and their media, without lengths: each link tier's medium is the first of ``fabric.media``
  at the link's speed (required for every tier: no length chooses one), its cables counted without a
  stock length;
- the BOM: switches, transceivers (twin-port modules included) and cables by medium, with no length,
  mass or length-priced part;
- the configs that need no cable length (InfiniBand: the subnet manager's files);
- the job twin (``workloads``), whose collectives cross the fabric's links at their speeds; a cable's
  propagation delay (5 ns/m) is not counted, there being no length.

What it skips, and why, is :data:`SKIPPED`; the build writes it in ``study.md`` and writes none of those
artifacts.
"""

from __future__ import annotations

import numpy as np

from twin.compiler.fabric.cabling import CablePlan, media_order
from twin.compiler.fabric.graph import Fabric
from twin.compiler.place.model import PlacedRack, Placement
from twin.compiler.resolve.spec import Spec
from twin.lang.diagnostics import Diagnostic, InfeasibleError, Severity, SpecError
from twin.lang.site.models import Technology

# (what is not built, why): in study.md, in this order
SKIPPED: tuple[tuple[str, str], ...] = (
    ("placement and floor plan", "no halls: no rack stands at a position"),
    ("cable routes, lengths and pull lists", "a route needs both ends' positions; media come from fabric.media"),
    ("space, power and cooling budget; power twin", "no halls, power feeds or cooling to hold the racks to"),
    ("cost", "capex per watt of a hall and length-priced fiber and copper need the floor"),
    ("reliability and cluster twins", "they fail and repair racks, rows and feeds of the floor"),
    ("NetBox import set", "sites, locations, racks and cable lengths are the floor"),
    ("RoCE switch configs", "a lossless port's buffer headroom (PFC xoff) is sized from its cable's length"),
    ("report.md, report.html, review.json", "they hold the design to the floor's checks; study.md says what was built"),
)


def unplaced(spec: Spec) -> Placement:
    """The racks of the study, standing nowhere (``position`` None): the GPU racks the GPUs take, in fabric
    order, and the network racks the fabric's switches hang on (the naive fill's plan, one hall's worth)."""
    from twin.compiler.place.naive import network_rack_plan

    racks = [PlacedRack(f"r{i + 1:04d}", "gpu", None, i // spec.racks_per_zone, i % spec.racks_per_zone, spec.rack.power)
             for i in range(spec.racks)]
    counters: dict[tuple[str, int | None], int] = {}
    zones = {z: 0 for z in range(spec.zones)}
    for nr in network_rack_plan(spec, zone_hall=zones, hall_racks=[spec.racks]):
        idx = counters.get((nr.role, nr.zone), 0)
        counters[(nr.role, nr.zone)] = idx + 1
        rid = f"z{nr.zone + 1}-{nr.role}-n{idx + 1:02d}" if nr.zone is not None else f"{nr.role}-n{idx + 1:02d}"
        racks.append(PlacedRack(rid, "network", None, nr.zone, idx, nr.power, nr.role, nr.switches))
    return Placement(tuple(racks), "fabric-only")


def unmounted(fabric: Fabric) -> Fabric:
    """The fabric with its switches and attachments in no rack (``rack`` and ``u`` None): they hung on the study's
    network racks only to be built, and a network rack's height and fill are the floor's."""
    for d in fabric.graph._node.values():
        if d.get("level", -1) >= 1 or d.get("role") == "endpoint":
            d["rack"] = d["u"] = None
    return fabric


def links(spec: Spec, fabric: Fabric) -> CablePlan:
    """The links with their stated media and no length (route, length and stock NaN)."""
    cables = fabric.cables()
    media = spec.catalog.media
    names = media_order(media)
    idx = np.full(len(cables), -1, np.int32)
    for j, c in enumerate(cables):
        listed = spec.fabric.media.get(c.tier, [])
        pick = next((n for n in listed if media[n].speed == c.speed), None) or next((n for n in listed if media[n].speed >= c.speed), None)
        if pick is None:
            raise InfeasibleError([f"cable {c.id} ({c.tier}, {c.speed / 1e9:g}G): no medium of fabric.media.{c.tier} runs at its speed"])
        idx[j] = names.index(pick)
    nan = np.full(len(cables), np.nan)
    return CablePlan(ids=tuple(c.id for c in cables), tiers=tuple(c.tier for c in cables), route=nan, length=nan.copy(),
                     stock=nan.copy(), medium=idx, media=tuple(names), a_row=np.zeros(len(cables), np.int32),
                     a_hall=("",) * len(cables))


def skipped_configs(spec: Spec) -> bool:
    """A RoCE study writes no switch configs (their buffers need cable lengths)."""
    return spec.fabric.technology == Technology.ROCE


def skipped(spec: Spec) -> list[tuple[str, str]]:
    """:data:`SKIPPED` as it applies to ``spec`` (an InfiniBand study writes its subnet manager's configs)."""
    return [x for x in SKIPPED if skipped_configs(spec) or not x[0].startswith("RoCE")]


def floor_needed(spec: Spec, what: str) -> None:
    """Refuse ``what`` (a command) on a fabric-only study: SpecError at the top of the site file, where its
    halls would be (exit 2 in the CLI)."""
    if spec.site.fabric_only:
        raise SpecError([Diagnostic(Severity.ERROR, spec.source_path, 1, 1, ("halls",), (
            f"a fabric-only study (no halls) has no floor for {what} (placement, power, cable lengths)"),
            "halls and power, or twin build (study.md: what a study builds)")])

"""The campus resolved: which building holds which halls and AI zones, how long each route is, and the
checks that relate the campus section to the rest of the spec.

:func:`plan` runs when the spec is resolved (before the fabric's shape, which reads it):

- **Zones to buildings.** A building with ``zones:`` takes that many; the others fill in building order,
  each up to what its halls hold (``zones_per_hall`` per hall, a zone's racks within a hall's free
  positions) and what its feed powers (``utility / pue``, less its ATSW layers (one per plane), over one zone's racks and
  CTSWs). Zones a campus cannot hold go to the last building, where the budget names the shortfall.
- **Routes.** A listed ``length`` is the surveyed trunk; otherwise the straight line between the two
  buildings' locations times the route factor. Every pair of buildings needs one or the other.

The checks return findings ``(severity, path, message, expected)`` like :mod:`twin.compiler.resolve.checks`: a
route shorter than the straight line, an optic whose reach is shorter than its route, a building
without an AI zone, ASN pools without room for one ATSW tier per building.

>>> straight((0.0, 0.0), (3000.0, 4000.0))
5000.0
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING

from twin.lang.diagnostics import Severity
from twin.lang.site.campus import Campus, CampusTrunk
from twin.lang.site.families import families_with, family_traits

if TYPE_CHECKING:
    from twin.compiler.resolve.spec import Spec
    from twin.lang.site.catalog_models import Catalog
    from twin.lang.site.models import Site

Finding = tuple[Severity, tuple, str, str]
E, W = Severity.ERROR, Severity.WARNING
CAMPUS_TIERS = ("atsw-atsw", "atsw-cssw")  # the link tier of a full mesh / of a campus spine


@dataclass(frozen=True)
class BuildingPlan:
    name: str
    index: int
    halls: tuple[str, ...]
    location: tuple[float, float] | None  # m, campus coordinates
    entrance: tuple[float, float]  # m, in the coordinates of its halls' origins
    utility: float  # W
    pue: float
    zones: tuple[int, ...]  # global zone indices (0-based)


@dataclass(frozen=True)
class RoutePlan:
    a: int  # building indices, a < b
    b: int
    length: float  # m, trunk route between the two entrances
    straight: float | None  # m, straight line between the locations (None without locations)
    how: str  # "surveyed" or "locations x 1.4"
    medium: str | None  # optic the spec pins for this route
    path: tuple = ()  # where the route is written (for diagnostics)


@dataclass(frozen=True)
class CampusPlan:
    buildings: tuple[BuildingPlan, ...]
    routes: dict[tuple[int, int], RoutePlan]
    topology: str  # "full-mesh" or "spine"
    ratio: float  # ATSW down : campus up
    media: tuple[str, ...]  # allowed optics between buildings (empty: any, by reach)
    trunk: CampusTrunk
    spine_model: str | None = None
    spine_count: int = 0
    spine_building: int = 0
    hall_building: dict[str, int] = field(default_factory=dict)
    zone_building: tuple[int, ...] = ()

    @property
    def tier(self) -> str:
        """The graph's link tier of the campus fabric."""
        return CAMPUS_TIERS[0] if self.topology == "full-mesh" else CAMPUS_TIERS[1]

    def route(self, a: int, b: int) -> RoutePlan:
        return self.routes[(min(a, b), max(a, b))]

    def halls_of(self, building: int) -> tuple[str, ...]:
        return self.buildings[building].halls


def straight(p: tuple[float, float], q: tuple[float, float]) -> float:
    """Straight-line distance (m) between two campus locations."""
    return math.hypot(p[0] - q[0], p[1] - q[1])


def _index(site: Site) -> dict[str, int]:
    return {b.name: i for i, b in enumerate(site.buildings)}


# ---------------------------------------------------------------- checks on the site alone


def references(site: Site, catalog: Catalog) -> Iterator[Finding]:
    """Names, geometry and the campus tier's fields: everything that needs no derived count."""
    if site.campus is not None and not site.buildings:
        yield E, ("campus",), "a campus section needs buildings", "buildings: [...] with their halls"
    if not site.buildings:
        return
    f = site.fabric
    if len(site.buildings) < 2:
        yield E, ("buildings",), "a campus needs at least two buildings", "two or more buildings, or halls: for one building"
    joinable = families_with(lambda fam: fam.campus)
    if not family_traits(f.family).campus or f.technology.value != "roce":
        yield E, ("fabric", "family"), (f"buildings are joined at the ATSW layers of a RoCE {' or '.join(joinable)} fabric; this one is "
                                        f"{f.technology.value} {f.family.value}"), f"technology: roce, family: {' or '.join(joinable)}"
    if f.atsw is None:
        yield E, ("fabric", "atsw"), "a campus joins the buildings' ATSW layers; the fabric has none", "atsw: {model: ..., count: ... per building}"
    idx = _index(site)
    seen: dict[str, int] = {}
    for i, b in enumerate(site.buildings):
        if b.name in seen:
            yield E, ("buildings", i, "name"), f"building name '{b.name}' is already used by buildings[{seen[b.name]}]", "a different name"
        seen.setdefault(b.name, i)
    camp = site.campus
    if camp is None:
        return
    pairs: dict[tuple[int, int], int] = {}
    for r, route in enumerate(camp.routes):
        base = ("campus", "routes", r)
        ends = []
        for e, name in enumerate(route.between):
            if name not in idx:
                yield E, base + ("between", e), f"unknown building '{name}'", "one of: " + ", ".join(b.name for b in site.buildings)
            else:
                ends.append(idx[name])
        if len(ends) < 2:
            continue
        key = (min(ends), max(ends))
        if key in pairs:
            yield E, base + ("between",), f"buildings {route.between[0]} and {route.between[1]} already have a route (campus.routes[{pairs[key]}])", "one route per pair"
        pairs.setdefault(key, r)
        a, b = site.buildings[ends[0]], site.buildings[ends[1]]
        if route.length is None and (a.location is None or b.location is None):
            missing = a.name if a.location is None else b.name
            yield E, base, f"no length for the route {a.name}-{b.name}, and building {missing} has no location", "length: 2.4 km, or locations on both buildings"
        elif route.length is not None and a.location is not None and b.location is not None:
            line = straight(a.location, b.location)
            if route.length < line - 1e-6:
                yield E, base + ("length",), (f"route {a.name}-{b.name} of {route.length / 1000:g} km is shorter than the straight line "
                                              f"between their locations ({line / 1000:.3f} km)"), f"at least {line / 1000:.3f} km"
        if route.medium is not None:
            yield from _optic(catalog, route.medium, base + ("medium",))
    for a, b in combinations(range(len(site.buildings)), 2):
        ba, bb = site.buildings[a], site.buildings[b]
        if (a, b) not in pairs and (ba.location is None or bb.location is None):
            yield E, ("campus", "routes"), f"no route between buildings {ba.name} and {bb.name}, and not both have a location", (
                f"a route {{between: [{ba.name}, {bb.name}], length: ...}} or locations on both")
    fab = camp.fabric
    for i, name in enumerate(fab.media):
        yield from _optic(catalog, name, ("campus", "fabric", "media", i))
    if fab.topology == "spine":
        if fab.spine is None:
            yield E, ("campus", "fabric", "spine"), "a spine topology needs its spine switches", "spine: {model: arista-7800r3, count: 16}"
        else:
            sw = catalog.switches.get(fab.spine.model)
            if sw is None:
                yield E, ("campus", "fabric", "spine", "model"), f"unknown switch model '{fab.spine.model}'", "a catalog switch"
            elif sw.technology != "ethernet":
                yield E, ("campus", "fabric", "spine", "model"), f"'{fab.spine.model}' is an {sw.technology} switch", "an ethernet switch"
            if fab.spine.building is not None and fab.spine.building not in idx:
                yield E, ("campus", "fabric", "spine", "building"), f"unknown building '{fab.spine.building}'", "one of: " + ", ".join(idx)
    elif fab.spine is not None:
        yield W, ("campus", "fabric", "spine"), "spine is ignored by a full-mesh campus", "topology: spine, or remove it"


def _optic(catalog: Catalog, name: str, path: tuple) -> Iterator[Finding]:
    m = catalog.media.get(name)
    if m is None:
        optics = sorted(n for n, x in catalog.media.items() if x.kind == "optic")
        yield E, path, f"unknown medium '{name}'", "one of: " + ", ".join(optics)
    elif m.kind != "optic":
        yield E, path, f"'{name}' is a {m.kind}; buildings are joined by pluggable optics", "an optic such as lr4-400g"


# ---------------------------------------------------------------- the plan


def plan(spec: Spec) -> CampusPlan | None:
    """The campus of a resolved spec (None for a site of one building)."""
    site = spec.site
    if not site.buildings:
        return None
    c = site.campus or Campus()  # buildings without a campus section: routes from locations, a full mesh at 1:1
    idx = _index(site)
    routes: dict[tuple[int, int], RoutePlan] = {}
    listed = {}
    for r, route in enumerate(c.routes):
        a, b = sorted((idx[route.between[0]], idx[route.between[1]]))
        listed[(a, b)] = (r, route)
    for a, b in combinations(range(len(site.buildings)), 2):
        la, lb = site.buildings[a].location, site.buildings[b].location
        line = straight(la, lb) if la is not None and lb is not None else None
        r, route = listed.get((a, b), (None, None))
        path = ("campus", "routes", r) if r is not None else ()
        if route is not None and route.length is not None:
            routes[(a, b)] = RoutePlan(a, b, route.length, line, "surveyed", route.medium, path)
        else:
            factor = route.route_factor if route is not None and route.route_factor is not None else c.route_factor
            routes[(a, b)] = RoutePlan(a, b, (line or 0.0) * factor, line, f"locations x {factor:g}", route.medium if route else None, path)
    zones = zones_by_building(spec)
    buildings = tuple(
        BuildingPlan(b.name, i, tuple(b.halls), b.location, b.entrance, b.power.utility,
                     b.power.pue if b.power.pue is not None else site.power.pue, zones[i])
        for i, b in enumerate(site.buildings)
    )
    spine = c.fabric.spine if c.fabric.topology == "spine" else None
    zone_building = [0] * spec.zones
    for b in buildings:
        for z in b.zones:
            zone_building[z] = b.index
    return CampusPlan(
        buildings=buildings,
        routes=routes,
        topology=c.fabric.topology,
        ratio=c.fabric.oversubscription,
        media=tuple(c.fabric.media),
        trunk=c.trunk,
        spine_model=spine.model if spine else None,
        spine_count=spine.count if spine else 0,
        spine_building=idx.get(spine.building, 0) if spine and spine.building else 0,
        hall_building={h: b.index for b in buildings for h in b.halls},
        zone_building=tuple(zone_building),
    )


def zone_power(spec: Spec) -> float:
    """IT power of one AI zone: its GPU racks at full load and its CTSWs, every plane's (W)."""
    f = spec.fabric
    return spec.racks_per_zone * spec.rack.power + f.ctsw.count * f.planes * spec.switch(f.ctsw.model).power


def building_capacity(spec: Spec, b) -> tuple[int, int]:
    """(zones its halls hold, zones its feed powers) for a site building ``b`` (the models' Building)."""
    f = spec.fabric
    rpz = max(1, spec.racks_per_zone)
    space = sum(min(f.zones_per_hall, len(spec.slots[h].free) // rpz) for h in b.halls if h in spec.slots)
    pue = b.power.pue if b.power.pue is not None else spec.site.power.pue
    atsw = f.atsw.count * f.planes * spec.switch(f.atsw.model).power if f.atsw and f.atsw.count and f.atsw.model else 0.0
    per = zone_power(spec)
    power = max(0, math.floor((b.power.utility / pue - atsw) / per + 1e-9)) if per > 0 else space
    return space, power


def zones_by_building(spec: Spec) -> list[tuple[int, ...]]:
    """Global zone indices per building: explicit counts first, then in order up to each capacity."""
    site = spec.site
    want = []
    for b in site.buildings:
        if b.zones is not None:
            want.append(b.zones)
        else:
            space, power = building_capacity(spec, b)
            want.append(min(space, power))
    explicit = sum(b.zones for b in site.buildings if b.zones is not None)
    left = spec.zones - explicit
    out: list[tuple[int, ...]] = []
    z = 0
    for i, b in enumerate(site.buildings):
        if b.zones is not None:
            n = b.zones
        else:
            n = max(0, min(want[i], left))
            left -= n
        out.append(tuple(range(z, min(spec.zones, z + n))))
        z = min(spec.zones, z + n)
    if z < spec.zones:  # the campus cannot hold them all: the last building takes the rest, the budget says so
        out[-1] = out[-1] + tuple(range(z, spec.zones))
    return out


# ---------------------------------------------------------------- checks on the resolved spec


LEVEL4_POOL = (4_201_002_000, 4_201_002_999)  # default ASN pool of a campus spine (RFC 6996 private range)


def with_campus_pools(site: Site) -> Site:
    """``site`` with a default level-4 ASN pool when its campus has a spine tier and names none."""
    fab = site.campus.fabric if site.campus is not None else None
    r = site.fabric.routing
    if fab is None or fab.topology != "spine" or "level4" in r.asn_pools:
        return site
    pool = type(r.asn_pools["level1"])(first=LEVEL4_POOL[0], last=LEVEL4_POOL[1])
    routing = r.model_copy(update={"asn_pools": dict(sorted({**r.asn_pools, "level4": pool}.items()))})
    return site.model_copy(update={"fabric": site.fabric.model_copy(update={"routing": routing})})


def arithmetic(spec: Spec) -> Iterator[Finding]:
    """Zones per building, ports of the ATSW and spine tiers, optics against route lengths."""
    cp = spec.campus
    if cp is None:
        return
    site = spec.site
    explicit = sum(b.zones for b in site.buildings if b.zones is not None)
    if explicit > spec.zones:
        i = max(i for i, b in enumerate(site.buildings) if b.zones is not None)
        yield E, ("buildings", i, "zones"), f"buildings ask for {explicit} AI zones, the fabric has {spec.zones}", f"at most {spec.zones} in all"
    why = f"{explicit} of them pinned by zones:" if explicit else "they fill the buildings in order"
    for b in cp.buildings:
        if not b.zones:
            yield E, ("buildings", b.index), f"building {b.name} gets no AI zone ({spec.zones} zones in all, {why})", (
                "fewer buildings, more zones, or zones: on each building")
    shape = spec.shape
    at, sp = shape.tier("atsw"), shape.tier("cssw")
    fab = ("campus", "fabric")
    if at is not None and at.down + at.up > at.radix:
        yield E, fab + ("oversubscription",), (
            f"each ATSW ({at.model}, {at.radix} ports) needs {at.down} links from its zones + {at.up} to the campus tier = {at.down + at.up} ports"
        ), "more ATSWs per building (fabric.atsw.count), a larger switch, or a higher campus oversubscription"
    if sp is not None and sp.down > sp.radix:
        yield E, fab + ("spine", "count"), f"each campus spine ({sp.model}, {sp.radix} ports) needs {sp.down} ports", (
            f"at least {math.ceil(shape.links(cp.tier) / sp.radix)} spine switches")
    speed = shape.boundary(cp.tier).speed
    media = spec.catalog.media
    for (a, b), route in sorted(cp.routes.items()):
        names = [route.medium] if route.medium else list(cp.media) or [n for n, m in media.items() if m.kind == "optic"]
        usable = [n for n in names if n in media and media[n].speed >= speed]
        reach = max((media[n].reach for n in usable), default=0.0)
        if route.length <= reach:
            continue
        pair = f"{cp.buildings[a].name}-{cp.buildings[b].name}"
        if route.medium:
            where, what = route.path + ("medium",), f"{route.medium} reaches {media[route.medium].reach / 1000:g} km"
        elif cp.media:
            where, what = fab + ("media",), f"the longest reach of {', '.join(cp.media)} at {speed / 1e9:g}G is {reach / 1000:g} km"
        else:
            where, what = route.path or ("campus", "routes"), f"no catalog optic at {speed / 1e9:g}G reaches that far (longest {reach / 1000:g} km)"
        yield E, where, f"the route {pair} is {route.length / 1000:.3f} km ({route.how}); {what}", (
            "an optic whose reach covers the route, e.g. lr4-400g (10 km) or zr-400g (80 km)")

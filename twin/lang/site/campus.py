"""The campus section of the site language: buildings, the routes between them, the campus fabric tier.

A campus site writes ``buildings:`` instead of ``halls:``; each building has its own halls (hall types
work as everywhere else), its own utility feed and limits, and a place on the campus::

    buildings:
      - name: b1
        location: [0 km, 0 km]            # the building's fiber entrance on the campus
        power: {utility: 75 MW}            # this building's feed (facility power, with cooling)
        halls:
          - {name: b1-dh1, type: meta-hall, origin: [0 m, 0 m]}
      - name: b2
        location: [1.2 km, 0 km]
        power: {utility: 75 MW}
        halls: [...]
    campus:
      routes:
        - {between: [b1, b2], length: 1.9 km}       # trunk length as surveyed
        - {between: [b1, b3], route_factor: 1.3}    # or: straight line between locations x factor
      fabric: {topology: full-mesh, oversubscription: "1:2.8"}

The halls are moved into the site's ordinary ``halls:`` list before anything else reads the spec
(:func:`expand`), so every pass sees ordinary halls and each building lists its halls by name; every
moved value keeps its line, and a diagnostic names the path as it was written
(``buildings[1].halls[0].rows``). Checks and the resolved plan live in :mod:`twin.compiler.resolve.campus_plan`.

>>> from twin.lang.loader import load_text
>>> text = "buildings:\\n  - name: b1\\n    halls:\\n      - {name: h1, rows: 2}\\n"
>>> src, diags = expand(load_text(text))
>>> src.data["halls"], src.data["buildings"][0]["halls"], src.moved[("halls", 0)], diags
([{'name': 'h1', 'rows': 2}], ['h1'], ('buildings', 0, 'halls', 0), [])
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Literal

from pydantic import Field, model_validator

from twin.lang.base import Model, Ratio, Slug
from twin.lang.diagnostics import Diagnostic, Severity, dotted
from twin.lang.loader import PathT, Source
from twin.lang.units import Length, Power

ROUTE_FACTOR = 1.4  # assumed: fiber route over straight line between two buildings (roads, ducts)
FIBERS_PER_CABLE = 144  # assumed: an MPO-terminated trunk cable of 12 x MPO-12
FIBERS_PER_PANEL = 144  # assumed: a 1U panel of 12 MPO-12 adapters (or MPO-to-LC cassettes)
SPARE = 0.25  # assumed: spare fibers pulled with every trunk


class BuildingPower(Model):
    """A building's own utility feed, the limit its halls' IT x PUE must stay within; the site's
    ``power.utility_capacity`` still caps the campus."""

    utility: Power = Field(description="utility power of this building's feed (facility power, with cooling)")
    pue: float | None = Field(None, ge=1.0, le=3.0, description="default: the site's pue")


class Building(Model):
    """A building of a campus: its halls (by name, once expanded), its feed, where it stands."""

    name: Slug
    location: tuple[Length, Length] | None = Field(
        None, description="the building's fiber entrance in campus coordinates, e.g. [1.2 km, 0 km]")
    entrance: tuple[Length, Length] = Field(
        (0.0, 0.0), description="where trunks enter the building, in the coordinates of its halls' origins")
    power: BuildingPower
    zones: int | None = Field(None, ge=0, le=1024, description="AI zones in this building (default: "
                              "zones fill the buildings in order, each up to what its halls hold and its feed powers)")
    halls: list[Slug] = Field(min_length=1, description="the building's halls (written in full, or with a hall type)")


class CampusRoute(Model):
    """The fiber route between two buildings' entrances: surveyed, or from their locations."""

    between: tuple[Slug, Slug]
    length: Length | None = Field(None, gt=0, description="trunk route length between the two entrances")
    route_factor: float | None = Field(None, ge=1.0, le=10.0, description=(
        "route length over the straight line between the two locations (default: campus.route_factor)"))
    medium: str | None = Field(None, description="catalog optic of this route's links (default: by reach)")

    @model_validator(mode="after")
    def _one_way(self) -> CampusRoute:
        if self.length is not None and self.route_factor is not None:
            raise ValueError("give length or route_factor, not both")
        if self.between[0] == self.between[1]:
            raise ValueError("a route joins two different buildings")
        return self


class CampusSpine(Model):
    model: str = Field(description="catalog switch model of the campus spine")
    count: int = Field(ge=1, le=10_000, description="campus spine switches")
    building: Slug | None = Field(None, description="where the spine's network racks stand (default: the first building)")


class CampusFabric(Model):
    """The tier that joins the buildings' ATSW layers."""

    topology: Literal["full-mesh", "spine"] = Field(
        "full-mesh", description="full-mesh: ATSW k of every building to ATSW k of every other; spine: every ATSW to a campus spine tier")
    oversubscription: Ratio = Field(1.0, description="an ATSW's links from its zones : its links to the campus tier, e.g. '1:2.8'")
    spine: CampusSpine | None = Field(None, description="topology spine: the campus spine switches")
    media: list[str] = Field(default_factory=list, description=(
        "allowed catalog optics between buildings, in preference order (default: any optic, shortest reach that covers the link)"))


class CampusTrunk(Model):
    """How inter-building fibers are bundled (for the cabling plan and the BOM)."""

    fibers_per_cable: int = Field(FIBERS_PER_CABLE, ge=2, le=6912, description="fibers in one trunk cable (assumed 144)")
    fibers_per_panel: int = Field(FIBERS_PER_PANEL, ge=2, le=1728, description="fibers one patch panel terminates (assumed 144)")
    spare: float = Field(SPARE, ge=0.0, le=4.0, description="spare fibers as a share of the fibers in use (assumed 0.25)")


class Campus(Model):
    """Routes between buildings and the campus fabric tier."""

    routes: list[CampusRoute] = Field(default_factory=list, description="fiber routes between buildings")
    route_factor: float = Field(ROUTE_FACTOR, ge=1.0, le=10.0, description=(
        "route over straight line for building pairs without a listed route (assumed 1.4)"))
    fabric: CampusFabric = Field(default_factory=CampusFabric)
    trunk: CampusTrunk = Field(default_factory=CampusTrunk)


# ---------------------------------------------------------------- expansion


def expand(src: Source) -> tuple[Source, list[Diagnostic]]:
    """Move every building's halls into the site's ``halls:`` (in building order); each building keeps
    the names. Positions move with the values and ``src.moved`` remembers where each hall was written."""
    data = src.data
    if not isinstance(data, dict) or "buildings" not in data:
        return src, []
    diags: list[Diagnostic] = []

    def say(path: PathT, message: str, expected: str = "") -> None:
        diags.append(Diagnostic(Severity.ERROR, src.path, *src.locate(path), tuple(path), message, expected))

    buildings = data["buildings"]
    if "halls" in data:
        say(("halls",), "a site with buildings: keeps its halls under each building", "buildings[i].halls, and no halls: at the top")
    if not isinstance(buildings, list) or not buildings:
        say(("buildings",), "buildings must be a list of buildings", "buildings: [{name: b1, power: ..., halls: [...]}]")
        return src, diags
    positions = dict(src.positions)
    moved: dict[PathT, PathT] = {}
    halls: list = []
    new_buildings: list = []
    for i, b in enumerate(buildings):
        if not isinstance(b, dict):
            say(("buildings", i), "a building must be a mapping", "{name: b1, power: {utility: ...}, halls: [...]}")
            new_buildings.append(b)
            continue
        label = b.get("name") if isinstance(b.get("name"), str) else f"buildings[{i}]"
        own = b.get("halls")
        if not isinstance(own, list) or not own:
            where = ("buildings", i, "halls") if "halls" in b else ("buildings", i)
            say(where, f"building {label} has no halls", "halls: [{name: ..., rows: ..., ...}] (at least one)")
            new_buildings.append(b)
            continue
        names = []
        for j, hall in enumerate(own):
            k = len(halls)
            old, new = ("buildings", i, "halls", j), ("halls", k)
            for p, xy in src.positions.items():
                if p[:4] == old:
                    positions[new + p[4:]] = xy
            moved[new] = old
            halls.append(hall)
            if isinstance(hall, dict) and isinstance(hall.get("name"), str):
                names.append(hall["name"])
        new_buildings.append({**b, "halls": names})
    if diags:
        return src, diags
    new_data = {**{k: v for k, v in data.items() if k != "buildings"}, "halls": halls, "buildings": new_buildings}
    return replace(src, data=new_data, positions=positions, moved=moved), diags


def written_path(src: Source, path: PathT) -> PathT:
    """A path of a moved hall as the user wrote it: ``halls[5].rows`` -> ``buildings[1].halls[2].rows``.

    >>> from twin.lang.loader import load_text
    >>> src, _ = expand(load_text("buildings:\\n  - {name: a, halls: [{name: h}]}\\n  - {name: b, halls: [{name: g}]}\\n"))
    >>> written_path(src, ("halls", 1, "rows"))
    ('buildings', 1, 'halls', 0, 'rows')
    """
    head = tuple(path[:2])
    if head in src.moved:
        return src.moved[head] + tuple(path[2:])
    return tuple(path)


def written_text(src: Source, text: str) -> str:
    """``halls[5]`` named in a message, as written: ``buildings[1].halls[2]`` (a campus only)."""
    if not src.moved:
        return text
    return re.sub(r"\bhalls\[(\d+)\]", lambda m: dotted(src.moved.get(("halls", int(m.group(1))), ("halls", int(m.group(1))))), text)

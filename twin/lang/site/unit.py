"""``fabric.unit``: a scalable-unit fabric stated as its vendor states it (the ``scalable-unit`` family).

NVIDIA draws its DGX SuperPODs in scalable units (SU) of compute racks: a leaf per rack (or per group of
hosts) per rail, the leaves of one rail of one SU sharing their own spines (an SU leaf group), and the
rails meeting only at the core, in as many core groups as a leaf group has spines. A site states the unit
(racks per SU), which hosts a leaf takes, each tier's down and up ports and the tier where the rails meet
(``rails_meet``: the core, as drawn, or the spine, an SU leaf group then holding every rail, or the
``rail_group`` rails it names); twin counts the switches
(:mod:`twin.compiler.resolve.unit_shape`) or refuses a combination that cannot be built, naming the
counts that can.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from twin.lang.base import Model


class LeafPorts(Model):
    """What one leaf takes: its hosts (one NIC port each, on the leaf's rail) and its uplinks."""

    hosts: Literal["rack"] | Annotated[int, Field(ge=1, le=4096)] = Field(
        "rack", description="hosts per leaf on its rail: 'rack' (one leaf per compute rack per rail), or a count that "
        "divides a rack's hosts or is a whole number of racks; a host is a server, or a rack-scale system's compute tray")
    up: int | None = Field(None, ge=1, le=1024, description="uplinks per leaf to its SU leaf group's spines (default: as many as hosts, 1:1)")


class SpinePorts(Model):
    """One spine of an SU leaf group: its ports down (to the group's leaves) and up (to its core group)."""

    down: int = Field(ge=1, le=1024, description="downlinks per spine; the group's leaves x leaf uplinks / down = its spines")
    up: int = Field(ge=1, le=1024, description="uplinks per spine to its core group")


class ScalableUnit(Model):
    """A scalable unit of compute racks, and each tier's ports as the vendor sizes them."""

    racks: int = Field(ge=1, le=4096, description="compute racks per scalable unit (the site's racks come in whole units)")
    leaf: LeafPorts = Field(default_factory=LeafPorts, description="hosts per leaf (default one leaf per rack per rail) and uplinks")
    spine: SpinePorts = Field(description="ports of a spine of an SU leaf group (one rail of one unit)")
    rails_meet: Literal["core", "spine"] = Field("core", exclude_if=lambda v: v == "core", description=(
        "the tier where a unit's rails first meet: core (an SU leaf group is one rail of one unit, its spines its own, "
        "the rails meet only in the core groups, as the DGX SuperPOD GB200 draws it) or spine (an SU leaf group is every "
        "rail of one unit: its spines take leaves of all rails)"))
    rail_group: int | None = Field(None, ge=1, le=4096, exclude_if=lambda v: v is None, description=(
        "with rails_meet: spine, the rails of one SU leaf group (a divisor of the rails above 1; default every rail of the "
        "unit): the rails of a group meet at its spines, the groups and the units at the cores"))

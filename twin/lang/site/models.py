"""The input language: pydantic models for a site spec.

These models are the single source of truth for the YAML language: validation, the JSON Schema in
``schemas/`` (editor completion) and the field reference (schemas/reference.md, the docs' site language page) all come from them. Structural rules
(types, ranges, units, enumerations) live here; rules that relate several parts of a spec (references,
port budgets, power) live in :mod:`twin.compiler.resolve.checks`, so that all of them are reported together.

Every physical value is a float in a canonical SI unit after validation (see :mod:`twin.lang.units`).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from twin.lang.base import IndexList, Model, Ratio, Slug, Text, pattern
from twin.lang.site.attachment import Attachment
from twin.lang.site.campus import Building, Campus
from twin.lang.site.catalog_models import Catalog
from twin.lang.site.cooling import Cdus, FacilityWater
from twin.lang.site.cost_models import EnergyPrice, EnergyPriceField
from twin.lang.site.families import FAMILIES, Family
from twin.lang.site.power import UtilityLimits
from twin.lang.site.reliability_models import Storage
from twin.lang.site.unit import ScalableUnit
from twin.lang.site.workload_models import TrainingJob
from twin.lang.units import ArealLoad, DataRate, DataSize, Length, Mass, Power, Temperature, Time

# ---------------------------------------------------------------- facility


class Reservation(Model):
    rows: IndexList
    positions: IndexList
    purpose: Literal["network", "other"] = "network"


class Redundancy(str, Enum):
    TWO_N = "2N"
    N_PLUS_1 = "N+1"


class HallPower(Model):
    """Power distribution of a hall: an A and a B busway over each row, fed from UPS blocks."""

    utility: Power = Field(description="utility power available to this hall (facility, incl. cooling)")
    busway_rating: Power = Field(description="rating of one busway; each row has one on feed A and one on B")
    redundancy: Redundancy = Redundancy.TWO_N
    blocks: int = Field(
        4, ge=2, le=64, description="N+1: UPS blocks incl. the redundant one; rows are fed round-robin"
    )
    block_rating: Power | None = Field(None, description="N+1: rating of one UPS block")
    derating: float = Field(0.8, gt=0, le=1.0, description="continuous-load factor applied to every rating")


class CoolingZone(Model):
    name: Slug
    rows: IndexList
    capacity: Power


class HallCooling(Model):
    medium: Literal["air", "liquid"] = "air"
    capacity_per_row: Power | None = None
    zones: list[CoolingZone] = Field(default_factory=list)
    inlet_temperature: Temperature = Field(27.0, description="design supply (inlet) temperature")
    cdus: Cdus | None = Field(None, exclude_if=lambda v: v is None, description=(
        "liquid cooling: the CDUs of every row or GPU rack (with facility_water); capacity_per_row and zones "
        "then cover the air share of the heat"))
    facility_water: FacilityWater | None = Field(None, exclude_if=lambda v: v is None, description="liquid cooling: the facility water feeding the CDUs")

    @model_validator(mode="after")
    def _one_of(self) -> "HallCooling":
        if self.capacity_per_row is None and not self.zones:
            raise ValueError("give capacity_per_row or zones")
        if (self.cdus is None) != (self.facility_water is None):
            raise ValueError("give cdus and facility_water together (the CDUs pass the racks' heat to the facility water)")
        return self


class Hall(Model):
    """A data hall: rows of rack positions on a grid, with the tray routes that cables follow."""

    name: Slug
    rows: int = Field(ge=1, le=500)
    positions_per_row: int = Field(ge=1, le=500)
    slot_width: Length = Field(0.6, gt=0)
    rack_depth: Length = Field(1.2, gt=0)
    row_pitch: Length = Field(3.0, gt=0, description="distance between the centres of adjacent rows")
    cross_aisle_every: int | None = Field(None, ge=1, description="positions between cross-aisles")
    cross_aisle_width: Length = Field(1.2, ge=0)
    origin: tuple[Length, Length] = Field((0.0, 0.0), description="hall corner in site coordinates")
    tray_height: Length = Field(3.0, gt=0, description="overhead cable tray height above the floor")
    floor_load_limit: ArealLoad | None = None
    reserved: list[Reservation] = Field(default_factory=list)
    power: HallPower
    cooling: HallCooling


class SitePower(Model):
    utility_capacity: Power = Field(description="utility supply of the whole site")
    pue: float = Field(1.3, ge=1.0, le=3.0)
    pue_curve: list[tuple[Temperature, float]] = Field(
        default_factory=list, description="PUE against outdoor temperature, e.g. [[10 degC, 1.1], [35 degC, 1.4]] (default: pue)")
    limits: UtilityLimits | None = Field(None, description="utility ramp, swing and oscillation limits (the power twin checks them)")
    energy_price: EnergyPrice = EnergyPriceField


# ---------------------------------------------------------------- racks


class RackType(Model):
    chassis: str = Field(description="catalog chassis model")
    servers: int = Field(ge=1, le=64)
    rtsw: str | None = Field(None, description="catalog switch model of the rack switch, if any")
    rtsw_count: int = Field(1, ge=0, le=8)
    gpu_power_cap: Power | None = Field(None, description="GPU power cap; default: the GPU TDP")
    power_shelf: Power = Field(33_000.0, description="rack power shelf capacity (assumed 33 kW; Open Rack v3 racks take up to ~30 kW)")
    other_power: Power = Field(0.0, description="fans, management switch, etc.")
    liquid_share: float | None = Field(None, ge=0, le=1, exclude_if=lambda v: v is None, description=(
        "share of the rack's heat its cold plates give to the coolant (the rest to the air); with a hall's cdus"))
    height_u: int = Field(48, ge=1, le=60)
    weight: Mass = Field(150.0, description="empty rack with power shelf")


# ---------------------------------------------------------------- fabric


class Technology(str, Enum):
    ROCE = "roce"
    INFINIBAND = "infiniband"


class Tier(Model):
    """One switch tier. AI-zone Clos: rtsw, ctsw, atsw. Fat-tree and rail families: rtsw = the leaves,
    atsw = the top tier (spines of 2 tiers, cores of 3), ctsw = the spines of a 3-tier tree."""

    model: str | None = Field(None, description="catalog switch model (RTSW: default the rack type's; trees: fabric.switch)")
    count: int | None = Field(
        None, ge=1, le=100_000,
        description="switches of the tier, pinned: CTSW per zone; RTSW per rack (the rack type's rtsw_count); "
        "ATSW, leaves and spines/cores of the tree families in total (default: the fewest that carry the uplinks "
        "and split every lower switch's uplinks evenly)",
    )
    uplinks: int | None = Field(None, ge=0, le=1024, description="AI zone, RTSW: uplinks per rack switch")
    oversubscription: Ratio | None = Field(
        None, description="down:up asked for, e.g. '1:7': AI zone RTSW (uplinks = ceil(down / ratio)) and ATSW (the CTSW's down:up)")


class AsnPool(Model):
    first: int = Field(ge=1, le=4_294_967_294)
    last: int = Field(ge=1, le=4_294_967_294)

    @model_validator(mode="after")
    def _ordered(self) -> "AsnPool":
        if self.last < self.first:
            raise ValueError("last must not be below first")
        return self


def _default_pools() -> dict[str, AsnPool]:
    # RFC 6996 4-byte private range 4200000000-4294967294
    return {
        "level1": AsnPool(first=4_200_000_000, last=4_200_999_999),
        "level2": AsnPool(first=4_201_000_000, last=4_201_000_999),
        "level3": AsnPool(first=4_201_001_000, last=4_201_001_999),
    }


# ASN pools are named by switch tier level (1 = the tier the NICs attach to); the AI-zone role names of
# earlier versions still work and mean the same levels (cssw: the campus spine, level 4).
ROLE_POOL_NAMES = {"rtsw": "level1", "ctsw": "level2", "atsw": "level3", "cssw": "level4"}


HashField = Literal["src-ip", "dst-ip", "protocol", "src-port", "dst-port", "flow-label", "roce-dst-qp"]
FIVE_TUPLE = ("src-ip", "dst-ip", "protocol", "src-port", "dst-port")  # the classic ECMP hash key


class Routing(Model):
    asn_pools: dict[Literal["level1", "level2", "level3", "level4", "rtsw", "ctsw", "atsw", "cssw"], AsnPool] = Field(
        default_factory=_default_pools,
        description="ASN pool per switch tier level: level1 one ASN per leaf/RTSW, level2 one per zone (or pod), "
        "level3 one for the top tier (a campus: one per building's ATSW layer), level4 one for a campus spine; "
        "rtsw/ctsw/atsw/cssw are accepted as names of levels 1-4",
    )
    unnumbered: bool = Field(False, description="BGP unnumbered (IPv6 link-local) instead of /31s")
    loopback_pool: str = "10.255.0.0/16"
    p2p_pool: str = "10.252.0.0/15"
    rack_pool: str = "10.0.0.0/12"
    ipv6: bool = False
    ecmp_width: int | None = Field(None, ge=1, le=1024, description="default: the fabric's real width")
    hash_fields: list[HashField] = Field(
        default_factory=lambda: [*FIVE_TUPLE, "roce-dst-qp"]
    )
    qps_per_gpu_pair: int = Field(16, ge=1, le=32, description="Meta: 16 for LLM jobs")
    bfd: bool = True

    @field_validator("asn_pools")
    @classmethod
    def _by_level(cls, pools: dict) -> dict:
        out: dict = {}
        for name in sorted(pools, key=lambda n: (n in ROLE_POOL_NAMES, n)):
            level = ROLE_POOL_NAMES.get(name, name)
            if level in out:
                raise ValueError(f"'{name}' and '{level}' name the same ASN pool (tier level {level[-1]}); give one")
            out[level] = pools[name]
        return dict(sorted({**_default_pools(), **out}.items()))  # levels not given keep their default


class Ecn(Model):
    min_threshold: DataSize = Field(150_000.0)
    max_threshold: DataSize = Field(1_500_000.0)
    max_probability: float = Field(0.1, gt=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> "Ecn":
        if self.max_threshold <= self.min_threshold:
            raise ValueError("max_threshold must exceed min_threshold")
        return self


class Qos(Model):
    pfc_priority: int = Field(3, ge=0, le=7)
    lossless_dscp: list[Annotated[int, Field(ge=0, le=63)]] = Field(default_factory=lambda: [26])
    control_dscp: int = Field(48, ge=0, le=63, description="CTS/ACK of receiver-driven admission")
    ecn: Ecn | None = Field(default_factory=Ecn)
    dcqcn: bool = False
    pfc_watchdog: Time | None = Field(0.2, description="Meta: 200 ms")
    mtu: int = Field(9216, ge=1500, le=9216)


class Partition(Model):
    name: Slug
    pkey: int = Field(ge=1, le=0x7FFF)
    members: Literal["all"] | list[int] = "all"


# OpenSM's adaptive-routing engines (NVIDIA's OpenSM on Quantum switches [nvidia-ib-ar]): each programs its base
# engine's tables as the default route and lets every switch pick, per packet, the least loaded port of the group
# of minimal-hop ports towards the destination (the TREE AR groups of a fat tree); the others are static tables.
# ar_updn is the one the cited page names (NVIDIA OpenSM's default on a fat tree); ar_ftree, ftree's adaptive twin, is
# assumed by the same naming (a site that runs another AR engine names its base here)
ADAPTIVE_ENGINES = {"ar_updn": "updn", "ar_ftree": "ftree"}  # engine: the static engine whose tables it starts from
RoutingEngine = Literal["ftree", "updn", "minhop", "dor", "lash", "ar_ftree", "ar_updn"]


class Infiniband(Model):
    routing_engine: RoutingEngine = Field("ftree", description=(
        "OpenSM's routing engine: ftree, updn, minhop, dor, lash program static tables (one port per destination); "
        "ar_ftree and ar_updn (NVIDIA's OpenSM, Quantum switches) add adaptive routing, each switch picking the least "
        "loaded minimal-hop port per packet; the network twin times the site's scheme (routing scheme site) accordingly"))
    lmc: int = Field(0, ge=0, le=7)
    sm_priority: int = Field(15, ge=0, le=15)
    partitions: list[Partition] = Field(default_factory=lambda: [Partition(name="default", pkey=0x7FFF)])


CageMode = Annotated[str, Field(pattern=pattern(r"^[1-8]x[1-9][0-9]{0,4}G$", "a breakout mode such as '1x800G' or '2x400G'"),
                                 description="a cage's breakout mode: ports per cage x their speed")]
LinkTier = Annotated[str, Field(pattern=pattern(r"^[a-z0-9]+-[a-z0-9]+$", "a link tier: two roles joined by '-', such as 'rtsw-ctsw'"), description="a link tier such as rtsw-ctsw")]


class Fabric(Model):
    technology: Technology
    family: Family = Field(description="; ".join(f"{f.name}: {f.summary}" for f in FAMILIES))
    rack_type: str = Field(description="rack type filled with GPU servers")
    gpus: int | None = Field(None, ge=1, le=10_000_000, description="default: zones x racks x GPUs per rack")
    zones: int | None = Field(None, ge=1, le=1024, description="AI zones (pods)")
    racks_per_zone: int | None = Field(None, ge=1, le=100_000)
    zones_per_hall: int = Field(1, ge=1, le=64, description="an AI zone is kept within one hall")
    nic_speed: DataRate | None = Field(None, description="default: the chassis NIC speed")
    rtsw: Tier | None = Field(None, description="rack / leaf switches")
    ctsw: Tier | None = Field(None, description="cluster / spine switches (per zone)")
    atsw: Tier | None = Field(None, description="aggregation / core switches across zones")
    switch: str | None = Field(None, description="fat-tree / rail families: the switch model of every tier")
    tiers: int | None = Field(None, ge=1, le=5, description="fat-tree tiers; default: the minimum for N")
    hb_domain: int = Field(8, ge=1, le=4096, description="rail families: GPUs per NVLink domain (rails)")
    rails_per_switch: Annotated[int, Field(ge=1, le=4096)] | Literal["auto"] = Field(
        "auto",
        description="rail families: rails that share one switch (rail-only: a 1-tier rail's leaf; rail-optimized: a "
        "leaf of a server group); auto packs when one rail fills at most half of the switch's ports",
    )
    unit: ScalableUnit | None = Field(None, exclude_if=lambda v: v is None, description=(
        "scalable-unit family: racks per unit, hosts per leaf and each tier's down and up ports, as the vendor states them "
        "(twin counts the switches)"))
    planes: Literal[1, 2, 4, 8] = Field(
        1, exclude_if=lambda v: v == 1, description="network planes, each its own fabric (switches named plane<p>-...; an AI zone's RTSWs, CTSWs and ATSWs "
        "once per plane); every NIC "
        "puts nic_ports / planes of its ports on each plane, at the NIC speed / nic_ports")
    attachments: list[Attachment] = Field(default_factory=list, description="non-GPU endpoints on a switch tier")
    media: dict[LinkTier, list[str]] = Field(
        default_factory=dict,
        description="allowed catalog media per link tier, in preference order (default: any, by length: "
        "DAC, AEC, AOC, then optics by reach); e.g. rtsw-ctsw: [dr4-400g] for single-mode optics",
    )
    cages: dict[LinkTier, CageMode] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="breakout mode per link tier between switches, where it differs from the switch model's own: the cages at "
        "both ends of the tier's links run in it (e.g. leaf-spine: 1x800G runs a split model's up cages whole; "
        "twin/compiler/resolve/cage_modes.py)")
    routing: Routing = Field(default_factory=Routing)
    qos: Qos = Field(default_factory=Qos)
    infiniband: Infiniband = Field(default_factory=Infiniband)


# ---------------------------------------------------------------- placement


class PlacementOptions(Model):
    """How the placement pass puts racks on the floor (see twin/compiler/place/optimize.py)."""

    method: Literal["optimize", "naive"] = Field("optimize", description="optimize (MILPs solved by HiGHS) or naive reading-order fill")
    gpu_power_cap: Literal["spec", "auto"] = Field(
        "spec",
        description="auto: pick the GPU power cap (from the chassis perf_vs_power curve) that maximises cluster "
        "throughput while every rack fits; spec: use rack_types.X.gpu_power_cap (default TDP)",
    )
    uplink_medium: str | None = Field(
        None, description="catalog medium of rack-to-spine links; its reach limits the run (default dr4-400g)"
    )
    time_limit: Time = Field(60.0, description="solver time limit per hall")


# ---------------------------------------------------------------- site


class Site(Model):
    """A site: its halls, power, cooling, hardware, the GPU fabric and the jobs it runs."""

    model_config = ConfigDict(title="twin site")  # the rest from Model

    name: Slug = Field(description="the site name; also the output folder generated/<name>/")
    description: Text = ""
    power: SitePower | None = Field(None, exclude_if=lambda v: v is None, description=(
        "the site's utility supply and PUE (required with halls; a fabric-only study has neither)"))
    halls: list[Hall] = Field(default_factory=list, description=(
        "the data halls; none (and no buildings) makes a fabric-only study: the fabric, its links, BOM, configs and "
        "the job twin, without the floor (twin/compiler/resolve/study.py)"))
    buildings: list[Building] = Field(default_factory=list, exclude_if=lambda v: not v, description=(
        "a campus: the buildings, each with its own halls, feed and location (twin/lang/site/campus.py)"))
    campus: Campus | None = Field(None, exclude_if=lambda v: v is None, description=(
        "a campus: routes between buildings and the campus fabric tier (with buildings)"))
    catalog: Catalog = Field(default_factory=Catalog)
    rack_types: dict[Slug, RackType] = Field(min_length=1)
    fabric: Fabric
    placement: PlacementOptions = Field(default_factory=PlacementOptions)
    workloads: list[TrainingJob] = Field(default_factory=list)
    storage: Storage | None = Field(None, description="checkpoint storage: bandwidths (reliability twin)")

    @property
    def fabric_only(self) -> bool:
        """A study of the fabric alone: no halls and no buildings, so nothing is placed, routed or powered."""
        return not self.halls and not self.buildings

"""The fabric families: one registry entry per family, the one place that knows a family by name.

Every pass asks a family's *traits* (``family_traits(spec.fabric.family).zoned``, ``.rails_apart``,
...) instead of comparing the family: outside this module no code names a family
(``tests/test_families.py`` holds the code to that). What differs in how a family is *built* is its
**layout**; each pass keeps one table from layout to its own step, next to the code that does it:

==================  ==========================================================================
pass                table (layout -> step)
==================  ==========================================================================
shape               ``twin/compiler/resolve/shape.py`` ``SHAPES`` (a scalable unit's counts:
                    ``twin/compiler/resolve/unit_shape.py``)
checks              ``twin/compiler/resolve/checks.py`` ``NEEDS``, ``PORTS``, ``SWITCH_PATHS``;
                    ``twin/compiler/resolve/fabric_checks.py`` ``TIER_FIELDS``, ``SIZING``
address pools       ``twin/compiler/resolve/pools.py`` ``LEAF_NICS``
network racks       ``twin/compiler/place/naive.py`` ``SWITCH_RACKS``
placement weights   ``twin/compiler/place/figures.py`` ``LINKS``
synthesis           ``twin/compiler/fabric/synthesis.py`` ``SYNTHESIS``
==================  ==========================================================================

A family built like an existing one is one entry in :data:`FAMILIES`; a new layout is its steps plus
one line in each table above (the test fails while a table lacks it).

>>> family_traits("rail-only").rails_apart, family_traits(Family.AI_ZONE).zoned
(True, True)
>>> [f.name for f in FAMILIES if "hb_domain" in f.reads]
['rail-optimized', 'rail-only', 'scalable-unit']
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

AI_ZONE_LAYOUT = "ai-zone"  # rack switches, one spine tier per AI zone (CTSW), an ATSW tier across zones
CLOS_LAYOUT = "folded-clos"  # the textbook folded Clos of one switch model (twin/compiler/resolve/fat_tree.py)
UNIT_LAYOUT = "scalable-unit"  # a leaf per rack per rail, spines per SU leaf group, rails meeting in core groups
LAYOUTS = (AI_ZONE_LAYOUT, CLOS_LAYOUT, UNIT_LAYOUT)

# Fabric fields read by some families only; a family refuses the ones it does not read (a located error).
FAMILY_FIELDS = ("switch", "tiers", "hb_domain", "rails_per_switch", "zones_per_hall", "unit")
# What each such field does, for the refusal's message.
FIELD_USE = {
    "switch": "the one switch model of every tier",
    "tiers": "the number of switch tiers of a folded Clos",
    "hb_domain": "GPUs per NVLink domain, the number of rails",
    "rails_per_switch": "rails that share one switch",
    "zones_per_hall": "AI zones kept in one hall",
    "unit": "the scalable unit: racks, hosts per leaf, each tier's down and up ports",
}

# Link tiers a site may name in fabric.media, per layout: (pattern, as shown in the message)
AI_ZONE_TIERS = (r"nic-rtsw|rtsw-ctsw|ctsw-atsw", "nic-rtsw, rtsw-ctsw, ctsw-atsw")
CLOS_TIERS = (r"nic-leaf|(leaf|spine|super\d*)-(spine|super\d*|core)",
              "nic-leaf, leaf-spine, spine-core (spine-super, super-core with 4 tiers)")
UNIT_TIERS = (r"nic-leaf|leaf-spine|spine-core", "nic-leaf, leaf-spine, spine-core")


@dataclass(frozen=True)
class FamilyTraits:
    """What the passes need to know about a family, as data."""

    name: str  # ``fabric.family`` as written
    summary: str  # one line: the field reference and the messages
    layout: str  # how it is built: AI_ZONE_LAYOUT or CLOS_LAYOUT (each pass's table, above)
    zoned: bool  # GPU racks come in AI zones: a zone is the placement unit (kept in one hall, zones_per_hall)
    #              with its own spine switches in its own network racks; otherwise every switch above the
    #              racks stands in shared "fabric" racks, apportioned over the halls by GPU racks
    reads: frozenset[str]  # the FAMILY_FIELDS it reads
    link_tiers: tuple[str, str]  # fabric.media keys it knows (pattern, as shown)
    rails: str = ""  # "": no rails; "groups": a leaf takes one rail of a group of servers; "apart": each
    #                  rail (or group of rails sharing switches) is its own tree and rails never meet; "units":
    #                  each rail of a scalable unit has its own leaves and spines, rails meet at the cores
    campus: bool = False  # buildings may be joined at its top tier (twin/compiler/resolve/campus_plan.py)

    @property
    def has_rails(self) -> bool:
        """NICs are grouped by rail (the GPU's rank in its NVLink domain); rails may share a switch."""
        return self.rails != ""

    @property
    def rail_groups(self) -> bool:
        """A leaf serves one rail (or R rails sharing it) of a group of servers; rails meet at the spines."""
        return self.rails == "groups"

    @property
    def rails_apart(self) -> bool:
        """Each rail is its own tree: no switch joins two rails (cross-rail traffic goes over NVLink)."""
        return self.rails == "apart"


_CLOS = frozenset({"switch", "tiers"})
_RAILS = _CLOS | {"hb_domain", "rails_per_switch"}

FAMILIES: tuple[FamilyTraits, ...] = (
    FamilyTraits("ai-zone-clos", "Meta's AI-zone Clos: rack switches, per-zone cluster switches, aggregation across zones",
                 AI_ZONE_LAYOUT, zoned=True, reads=frozenset({"zones_per_hall"}), link_tiers=AI_ZONE_TIERS, campus=True),
    FamilyTraits("fat-tree", "a folded-Clos fat-tree of one switch model, NICs on the leaves in site order",
                 CLOS_LAYOUT, zoned=False, reads=_CLOS, link_tiers=CLOS_TIERS),
    FamilyTraits("rail-optimized", "a fat-tree whose leaves each take one rail of a group of servers",
                 CLOS_LAYOUT, zoned=False, reads=_RAILS, link_tiers=CLOS_TIERS, rails="groups"),
    FamilyTraits("rail-only", "one fat-tree per rail; rails never meet (cross-rail traffic over NVLink)",
                 CLOS_LAYOUT, zoned=False, reads=_RAILS, link_tiers=CLOS_TIERS, rails="apart"),
    FamilyTraits("scalable-unit", "NVIDIA DGX SuperPOD's scalable units as drawn: a leaf per rack per rail, spines per rail of "
                 "a unit, rails meeting only in the core groups", UNIT_LAYOUT, zoned=False,
                 reads=frozenset({"switch", "hb_domain", "unit"}), link_tiers=UNIT_TIERS, rails="units"),
)
_BY_NAME = {f.name: f for f in FAMILIES}


def _member(name: str) -> str:
    return name.upper().replace("-CLOS", "").replace("-", "_")


# The site language's enumeration of families (fabric.family), made from the registry.
Family = Enum("Family", [(_member(f.name), f.name) for f in FAMILIES], type=str, module=__name__)


def family_traits(family: str | Family) -> FamilyTraits:
    """The registry entry of ``family`` (a ``Family`` or its name, e.g. a graph's ``fabric.family``)."""
    return _BY_NAME[family.value if isinstance(family, Family) else family]


def families_with(predicate) -> list[str]:
    """Names of the families whose traits satisfy ``predicate``, in registry order (for messages).

    >>> families_with(lambda f: f.campus)
    ['ai-zone-clos']
    """
    return [f.name for f in FAMILIES if predicate(f)]

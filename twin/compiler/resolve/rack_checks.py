"""Checks of a rack-scale system's rack type (``rack_scale`` in the catalog): one system per rack or per rack
pair (NVL36x2), its NVLink domain inside it, a rail-aligned fabric's rails on the tray's GPU positions, a pair
never part-filled or split between zones, and no pair on an AI-zone fabric (its rack switches serve one rack).
"""

from __future__ import annotations

from collections.abc import Iterator

from twin.compiler.resolve.spec import Spec
from twin.lang.diagnostics import Severity

Finding = tuple[Severity, tuple, str, str]
E = Severity.ERROR


def rack_scale(spec: Spec) -> Iterator[Finding]:
    """A rack-scale system (``rack_scale`` in the catalog) is the whole rack: one per rack, its NVLink
    domain inside it, a rail-aligned fabric's rails on the tray's GPU positions."""
    rs, f = spec.chassis.rack_scale, spec.site.fabric
    if rs is None:
        return
    rt = spec.site.rack_types[spec.rack_type_name]
    if rt.servers != 1:
        yield E, ("rack_types", spec.rack_type_name, "servers"), (
            f"{rt.servers} rack-scale systems in one rack: '{rt.chassis}' is a whole {'rack pair' if rs.racks > 1 else 'rack'} "
            f"of {spec.chassis.gpus} GPUs in one NVLink domain"), "servers: 1"
    if rs.racks > 1:
        ch = spec.chassis
        if spec.family.zoned:
            yield E, ("fabric", "family"), (
                f"'{rt.chassis}' fills a pair of racks; an AI zone's rack switches serve one rack each"), "a tree family (rail-optimized, fat-tree, ...)"
        if f.gpus is not None and f.gpus % ch.gpus:
            yield E, ("fabric", "gpus"), (
                f"{f.gpus:,} GPUs on '{rt.chassis}' leave a rack pair part-filled: one NVLink domain of {ch.gpus} GPUs "
                f"fills {rs.racks} racks"), f"a multiple of {ch.gpus}"
        if f.racks_per_zone and f.racks_per_zone % rs.racks:
            yield E, ("fabric", "racks_per_zone"), (
                f"{f.racks_per_zone} racks per zone would split a rack pair of '{rt.chassis}' between zones"), f"a multiple of {rs.racks}"
    if spec.family.has_rails and f.hb_domain != rs.gpus_per_tray:
        yield E, ("fabric", "hb_domain"), (
            f"{f.hb_domain} rails on '{rt.chassis}': its fabric is rail-aligned to the {rs.gpus_per_tray} GPU positions "
            f"of a compute tray"), f"hb_domain: {rs.gpus_per_tray}"

"""What a fabric-only study (a site without halls, :mod:`twin.compiler.study`) needs from its spec, and a site
with halls needs that a study does not: a medium stated for every link tier (no cable length chooses one),
power with halls and none without."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from twin.lang.diagnostics import Severity
from twin.lang.site.models import Site

if TYPE_CHECKING:
    from twin.compiler.resolve.spec import Spec

E, W = Severity.ERROR, Severity.WARNING


def findings(site: Site, catalog) -> Iterator[tuple[Severity, tuple, str, str]]:
    """What a fabric-only study needs from the spec: a medium stated for each link tier, no power to ignore."""
    if not site.fabric_only:
        if site.power is None:
            yield E, ("power",), "a site with halls needs its power (utility_capacity, pue)", "power: {utility_capacity: ..., pue: ...}"
        return
    if site.power is not None:
        yield W, ("power",), "a fabric-only study (no halls) reads no power: nothing stands anywhere to feed", "no power, or halls"


def media_findings(spec: Spec) -> Iterator[tuple[Severity, tuple, str, str]]:
    """Every link tier of a fabric-only study needs a stated medium at its speed: no length chooses one."""
    if not spec.site.fabric_only:
        return
    stated = spec.fabric.media
    media = spec.catalog.media
    for b in spec.shape.boundaries:
        listed = stated.get(b.name)
        if not listed:
            fits = sorted((media[n].speed, n) for n in media if media[n].speed >= b.speed and media[n].module_ports == 1)
            fits = [n for s, n in fits if s == fits[0][0]][:3] if fits else []  # the slowest that carry the tier's speed
            yield E, ("fabric", "media"), (
                f"a fabric-only study has no cable lengths to choose the {b.name} tier's medium by"), (
                f"fabric.media.{b.name}: [{', '.join(fits) or 'a medium at ' + format(b.speed / 1e9, 'g') + 'G'}]")
        elif not any(n in media and media[n].speed >= b.speed for n in listed):
            yield E, ("fabric", "media", b.name), f"none of {', '.join(listed)} runs at the tier's {b.speed / 1e9:g}G", (
                f"a medium of {b.speed / 1e9:g}G")

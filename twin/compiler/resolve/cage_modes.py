"""Cages that run two ways on one switch (``fabric.cages``): a link tier's own breakout mode.

A switch model runs its cages in one breakout mode (``ports_per_cage`` ports of ``port_speed``: an SN5600
as ``sn5600-2x400g``, every 800G cage split 2 x 400G). NVIDIA's DGX SuperPOD B300 leaf runs two: its down
cages split 2 x 400G to the ConnectX-8 ports and its up cages whole at 800G to the spines [dgx-b300-ra].
``fabric.cages`` states the mode of a link tier between switches; the cages at both ends of its links run
in it:

- a mode of ``n`` ports per cage at speed ``S`` on a model of ``p`` ports per cage at ``port_speed``: ``n``
  divides ``p`` and ``n x S`` is the cage's bandwidth (``p x port_speed``), so ``r = p / n`` of the model's
  logical ports make one port of the mode, and the mode is one of the port map's breakout modes (the
  platform's ``platform.json``: a cage runs only what its platform offers);
- the tier has ``1/r`` of the links at ``r`` times the speed: the same bandwidth, switch counts and
  oversubscription; every pair of switches the tier joins has a multiple of ``r`` links (they become
  whole ports) and the ports below fill whole cages (a cage is split or whole, never half of each).

The graph gives a whole port the name of its cage's first logical port (``Ethernet0`` for cage 1 of the
SN5600, as SONiC names a cage in 1x800G); a port's cage, lanes and mode follow from its link's speed
(:func:`twin.compiler.fabric.ports.cage_of`).

>>> parse("1x800G"), parse("2x400G")
((1, 800000000000.0), (2, 400000000000.0))
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING

from twin.compiler.resolve.fat_tree import boundary
from twin.lang.diagnostics import Severity
from twin.lang.site.families import AI_ZONE_LAYOUT, UNIT_LAYOUT

if TYPE_CHECKING:
    from twin.compiler.resolve.shape import FabricShape
    from twin.compiler.resolve.spec import Spec
    from twin.lang.site.catalog_models import SwitchModel

E = Severity.ERROR


def parse(mode: str) -> tuple[int, float]:
    """(ports per cage, speed in bit/s) of a mode such as ``1x800G`` (the bracketed speeds of a
    platform's mode left off)."""
    m = re.match(r"(\d+)x(\d+)G", mode)
    return int(m.group(1)), float(m.group(2)) * 1e9


def merge(model: SwitchModel, mode: str) -> int:
    """Logical ports of ``model`` that make one port of ``mode`` (1 where the mode does not fit)."""
    n, speed = parse(mode)
    p = model.ports_per_cage
    if n > p or p % n or abs(n * speed - p * model.port_speed) > 1e-3:
        return 1
    return p // n


def runnable(model: SwitchModel) -> list[str]:
    """The modes of the model's port map a cage of it can run (its own first)."""
    if model.port_map is None:
        return []
    return [b.split("[")[0] for b in model.port_map.breakouts if merge(model, b) > 1 or b == model.port_map.breakouts[0]]


def platform_mode(model: SwitchModel, r: int) -> str:
    """The port map's breakout mode (as ``platform.json`` writes it) of ports ``r`` logical ports wide."""
    if model.port_map is not None:
        for b in model.port_map.breakouts:
            if merge(model, b) == r:
                return b
    return f"{model.ports_per_cage // r}x{r * model.port_speed / 1e9:g}G"


def factors(spec: Spec) -> dict[str, int]:
    """{link tier: logical ports per port} of the tiers ``fabric.cages`` runs in another mode (r > 1)."""
    f = spec.fabric
    if not f.cages or f.switch not in spec.catalog.switches:
        return {}
    model = spec.switch(f.switch)
    return {tier: r for tier, mode in f.cages.items() if (r := merge(model, mode)) > 1}


def with_cages(spec: Spec, shape: FabricShape) -> FabricShape:
    """The shape with each stated tier's links ``r`` to a port: ``1/r`` of the links at ``r`` times the speed."""
    from dataclasses import replace

    r = factors(spec)
    if not r:
        return shape
    bounds = tuple(replace(b, links=b.links // r[b.name], speed=b.speed * r[b.name]) if b.name in r else b for b in shape.boundaries)
    return replace(shape, boundaries=bounds)


def pair_links(spec: Spec, tier: str) -> set[int]:
    """The link counts between a pair of switches on a link tier (one plane, one tree), as the family wires it."""
    shape = spec.shape
    names = shape.boundary_names
    t = names.index(tier)
    if spec.family.layout == UNIT_LAYOUT:
        us = shape.unit
        if t == 1:
            return set(Counter(s % us.spines for s in range(us.leaf_up)).values())
        return set(Counter((g, (g * us.spine_up + s) % us.cores) for g in range(us.groups) for s in range(us.spine_up)).values())
    return set(Counter(boundary(shape.tree, t)).values())


def findings(spec: Spec) -> Iterator[tuple[Severity, tuple, str, str]]:
    """A stated mode the cages cannot run, or a tier that cannot run it, located at ``fabric.cages.<tier>``."""
    f = spec.fabric
    if not f.cages:
        return
    if spec.family.layout == AI_ZONE_LAYOUT or f.switch not in spec.catalog.switches:
        yield E, ("fabric", "cages"), f"fabric.cages runs on the families of one switch model (fabric.switch); {f.family.value} has none", (
            "the family fat-tree, rail-optimized, rail-only or scalable-unit")
        return
    model = spec.switch(f.switch)
    shape = spec.shape
    att = {a.tier for a in shape.attachments}
    tiers = [b for b in shape.boundary_names[1:] if b not in att]
    for tier, mode in f.cages.items():
        path = ("fabric", "cages", tier)
        if tier not in tiers:
            why = "the NIC tier runs at the NIC's speed (fabric.nic_speed)" if tier == shape.boundary_names[0] else "not a link tier between switches"
            yield E, path, f"'{tier}': {why}", f"a tier between switches: {', '.join(tiers) or 'none (a 1-tier fabric)'}"
            continue
        ok = runnable(model)
        n, speed = parse(mode)
        if model.port_map is None:
            yield E, path, (f"{f.switch}'s cages run {model.ports_per_cage} x {model.port_speed / 1e9:g}G and its catalog entry lists no other "
                            f"mode"), f"catalog.switches.{f.switch}.port_map with the platform's breakout modes, or no fabric.cages"
            continue
        if mode not in ok:
            yield E, path, (f"a {f.switch} cage ({model.ports_per_cage} x {model.port_speed / 1e9:g}G) cannot run {mode}: a tier's mode "
                            f"joins the model's ports of a cage into wider ones, as its platform offers ({', '.join(ok)}); a finer "
                            "split is another catalog model"), f"one of {', '.join(ok)}"
            continue
        r = merge(model, mode)
        if r == 1:
            continue
        bad = sorted(c for c in pair_links(spec, tier) if c % r)
        if bad:
            yield E, path, (f"{mode} joins {r} of the {model.port_speed / 1e9:g}G links between two switches into one port, but the "
                            f"{tier} tier has pairs of switches joined by {bad[0]} link(s)"), (
                f"a tier whose switch pairs have a multiple of {r} links (fewer upper switches: the scalable-unit family states "
                f"them in fabric.unit), or no fabric.cages.{tier}")
            continue
        lower = shape.tiers[tiers.index(tier)]
        if lower.down % model.ports_per_cage:
            yield E, path, (f"a {lower.role}'s {lower.down} ports below fill {lower.down / model.ports_per_cage:g} cages; a cage runs one mode"), (
                f"down ports in whole cages of {model.ports_per_cage}")

"""Checks of the fabric's sizing: fields a family reads, pinned tier counts, rail packing, attachments,
switch radix per tier and the InfiniBand subnet's LIDs.

Every documented field is read by the family it is given for, or refused here with a located error:
a pinned count is used, refused when it cannot be built, or kept with a warning that quantifies the
imbalance (:mod:`twin.compiler.resolve.tree_sizing` has the rules and their reasons). The figures come from
the fabric's shape (``spec.shape``), the same numbers the fabric pass builds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from twin.compiler.resolve.cage_modes import findings as cage_findings
from twin.compiler.resolve.spec import Spec
from twin.compiler.resolve.targets import ib_rate, target_of
from twin.compiler.resolve.tree_sizing import packings, rail_fill, rail_hosts, split
from twin.compiler.resolve.unit_shape import findings as unit_findings
from twin.compiler.resolve.zone_links import ctsw_uplink_targets
from twin.lang.diagnostics import Severity
from twin.lang.site.families import AI_ZONE_LAYOUT, CLOS_LAYOUT, FAMILY_FIELDS, FIELD_USE, UNIT_LAYOUT, families_with, family_traits
from twin.lang.site.models import Site, Technology

Finding = tuple[Severity, tuple, str, str]
E, W = Severity.ERROR, Severity.WARNING

# InfiniBand unicast LIDs: 0x0001-0xBFFF; 0xC000-0xFFFE are multicast, 0xFFFF permissive [ibta-vol1] ch. 4
IB_UNICAST_LIDS = 0xBFFF
SWITCH_ROLES = {"rtsw", "ctsw", "atsw", "leaf", "spine", "super", "core"}
TREE_TIER = {"rtsw": "leaves", "ctsw": "spines of a 3-tier tree", "atsw": "top tier (spines of 2 tiers, cores of 3)"}


def fields(site: Site) -> Iterator[Finding]:
    """Fields the family does not read are refused (nothing documented is silently ignored): the
    family-specific fields its registry entry does not list, then its layout's tier fields."""
    f = site.fabric
    fam = family_traits(f.family)
    given = f.model_fields_set
    for name in FAMILY_FIELDS:
        if name in given and name not in fam.reads:
            readers = families_with(lambda x, name=name: name in x.reads)
            yield E, ("fabric", name), (
                f"{name} ({FIELD_USE[name]}) is read by {_listed(readers, 'and')} fabrics; this one is {fam.name}"
            ), f"no {name}, or family: {_listed(readers, 'or')}"
    yield from TIER_FIELDS[fam.layout](site)


def _listed(names: list[str], conj: str) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {conj} {names[-1]}"


def _ai_zone_tier_fields(site: Site) -> Iterator[Finding]:
    f = site.fabric
    for tier in ("ctsw", "atsw"):
        t = getattr(f, tier)
        if t is not None and t.uplinks is not None:
            yield E, ("fabric", tier, "uplinks"), f"{tier} uplinks follow from atsw.oversubscription", "no uplinks here"
    if f.ctsw is not None and f.ctsw.oversubscription is not None:
        yield E, ("fabric", "ctsw", "oversubscription"), "the CTSW down:up is set by atsw.oversubscription (the ratio to the ATSW tier)", "atsw.oversubscription"


def _clos_tier_fields(site: Site) -> Iterator[Finding]:
    f = site.fabric
    for tier in ("rtsw", "ctsw", "atsw"):
        t = getattr(f, tier)
        if t is None:
            continue
        if t.model is not None and f.switch is not None and t.model != f.switch:
            yield E, ("fabric", tier, "model"), f"a {f.family.value} fabric uses fabric.switch ({f.switch}) for every tier", f"'{f.switch}' or omit it"
        for name in ("uplinks", "oversubscription"):
            if getattr(t, name) is not None:
                yield E, ("fabric", tier, name), (
                    f"a {f.family.value} fabric is built at full bisection: every switch below the top has k/2 ports down and k/2 up"
                ), f"only count on {tier} (the {TREE_TIER[tier]})"


def _unit_tier_fields(site: Site) -> Iterator[Finding]:
    """A scalable-unit fabric is counted from fabric.unit: the tier sections would say it twice."""
    f = site.fabric
    for tier in ("rtsw", "ctsw", "atsw"):
        if getattr(f, tier) is not None:
            yield E, ("fabric", tier), (
                f"a {f.family.value} fabric counts its leaves, spines and cores from fabric.unit (fabric.switch is every tier's model)"
            ), f"no {tier}; state the tier's ports in unit.leaf or unit.spine"


def sizing(spec: Spec) -> Iterator[Finding]:
    """Pinned counts, rail packing, attachments, radix per tier and LIDs, from the shape."""
    f = spec.fabric
    for check in SIZING[spec.family.layout]:
        yield from check(spec)
    yield from _attachments(spec)
    yield from cage_findings(spec)
    yield from _radix(spec)
    if f.technology == Technology.INFINIBAND:
        yield from _lids(spec)


def _ai_zone(spec: Spec) -> Iterator[Finding]:
    f, shape = spec.fabric, spec.shape
    per_rack = spec.rack_type.rtsw_count
    if f.rtsw and f.rtsw.count is not None and f.rtsw.count != per_rack:
        yield E, ("fabric", "rtsw", "count"), (
            f"an AI-zone rack has rack_types.{spec.rack_type_name}.rtsw_count = {per_rack} RTSWs; rtsw.count {f.rtsw.count} differs"
        ), f"{per_rack} or omit it"
    b = next((x for x in shape.boundaries if x.name == "rtsw-ctsw"), None)
    if f.rtsw and f.rtsw.uplinks is not None and f.rtsw.oversubscription and b and b.built and b.built > b.requested * (1 + 1e-9):
        yield E, ("fabric", "rtsw", "uplinks"), (
            f"{f.rtsw.uplinks} uplinks give {b.built:.2f}:1, more than the oversubscription asked for ({b.requested:g}:1)"
        ), "uplinks or oversubscription, not two that disagree"
    if f.atsw is not None and spec.zones == 1:
        yield E, ("fabric", "atsw"), "one AI zone has no ATSW tier to join it to (the atsw section would be ignored)", "no atsw, or zones > 1"
    rt = shape.tier("rtsw")
    c = f.ctsw.count
    if rt.up > c and rt.up % c:
        more, hi, less, lo = split(rt.up, c)
        yield W, ("fabric", "ctsw", "count"), (
            f"each RTSW's {rt.up} uplinks over {c} CTSWs: {more} CTSWs get {hi} links, {less} get {lo}; ECMP weights them "
            f"{hi}:{lo} and the CTSWs with more links carry {hi / (rt.up / c):.2f}x the mean"
        ), f"a divisor of {rt.up} CTSWs per zone"
    elif rt.up < c:
        yield W, ("fabric", "ctsw", "count"), (
            f"each RTSW's {rt.up} uplinks reach {rt.up} of the zone's {c} CTSWs: two RTSWs may share no CTSW and then talk"
            " through the ATSW tier"
        ), f"a divisor of {rt.up} CTSWs per zone"
    if shape.tier("atsw") is not None:
        a = f.atsw.count
        plane = a // math.gcd(c, a)
        j = max(range(c), key=lambda j: (shape.ctsw_up[j], -j))
        u = shape.ctsw_up[j]
        targets = ctsw_uplink_targets(0, j, u, c, a)
        per = [targets.count(x) for x in sorted(set(targets))]
        if u > plane and len(set(per)) > 1:
            yield W, ("fabric", "atsw", "count"), (
                f"a CTSW's {u} uplinks over the {plane} ATSWs of its plane: {per.count(max(per))} get {max(per)} links, "
                f"{per.count(min(per))} get {min(per)}; ECMP weights them {max(per)}:{min(per)}"
            ), f"ATSWs per plane (atsw.count / gcd(ctsw.count, atsw.count)) dividing {u}"


def _tree_pins(spec: Spec) -> Iterator[Finding]:
    f, shape = spec.fabric, spec.shape
    ts, trees = shape.tree, shape.trees
    L, k = ts.tiers, ts.radix
    h = max(1, k // 2)
    m = ts.switches[0]
    per = " per rail" if spec.family.rails_apart and trees > 1 else ""
    if f.rtsw and f.rtsw.count is not None and f.rtsw.count != m * trees:
        stated = _listed(families_with(lambda x: "unit" in x.reads), "or")
        yield E, ("fabric", "rtsw", "count"), (
            f"{f.rtsw.count} leaves pinned, the tree has {m * trees:,}: a leaf takes k/2 = {h} NICs"
            + (f" ({f.family.value}: one rail of a server group)" if spec.family.rail_groups else "")
        ), f"{m * trees:,} or omit it" + (f"; a leaf per rack per rail with the vendor's port counts: family {stated} and fabric.unit"
                                          if spec.family.has_rails else "")
    if f.ctsw and f.ctsw.count is not None:
        if L != 3:
            yield E, ("fabric", "ctsw", "count"), f"ctsw pins the spines of a 3-tier tree; this tree has {L} tier(s)", "no ctsw" + (", or tiers: 3" if L < 3 else "")
        elif f.ctsw.count != m * trees:
            yield E, ("fabric", "ctsw", "count"), (
                f"{f.ctsw.count} spines pinned; a 3-tier tree has as many spines as leaves ({m * trees:,}), pod by pod"
            ), f"{m * trees:,} or omit it"
    if not (f.atsw and f.atsw.count is not None):
        return
    path = ("fabric", "atsw", "count")
    if L == 1:
        yield E, path, f"a 1-tier tree has no tier above its leaves; {shape.endpoints // trees:,} NICs{per} fit on {m} switch(es)", "no atsw, or tiers: 2"
        return
    pinned = f.atsw.count
    if pinned % trees:
        yield E, path, f"{pinned} top switches do not split over the {trees} trees (one per rail)", f"a multiple of {trees}"
        return
    T = pinned // trees
    top = ("spine" if L == 2 else "core")
    links = m * h
    if T * k < links:
        need = math.ceil(links / k)
        yield E, path, (
            f"{T} {top}s{per} x {k} ports carry {T * k:,} links; {m:,} switches below send {h} uplinks each = {links:,}"
        ), f"at least {need * trees:,}"
    elif T > links:
        yield E, path, f"{T} {top}s{per} but only {links:,} uplinks reach that tier: some would have no link", f"at most {links * trees:,}"
    elif L == 2 and T > h:
        yield E, path, (
            f"each leaf has {h} uplinks, so it reaches at most {h} of the {T} spines{per}: two leaves could share no spine"
        ), f"at most {h * trees:,} (a divisor of {h} per tree splits every leaf's uplinks evenly)"
    elif L > 2 and T > h ** (L - 1):
        yield E, path, f"a pod's up-ports reach at most {h ** (L - 1):,} of the {T:,} cores{per}", f"at most {h ** (L - 1) * trees:,}"
    elif T < h and h % T:
        more, hi, less, lo = split(h, T)
        best = next(d for d in range(T, h + 1) if h % d == 0)
        yield W, path, (
            f"each {fat_role(L - 2)}'s {h} uplinks over {T} {top}s{per}: {more} {top}s get {hi} links, {less} get {lo}; ECMP and adaptive"
            f" routing weight them {hi}:{lo}, so the {top}s with {hi} carry {hi * T / h:.2f}x the mean"
        ), f"{best * trees:,} ({best}{per}: {h // best} links to each) for an even split"


def fat_role(t: int) -> str:
    return ("leaf", "spine", "super")[min(t, 2)]


def _rails(spec: Spec) -> Iterator[Finding]:
    f = spec.fabric
    if not spec.family.has_rails or f.rails_per_switch == "auto" or f.switch not in spec.catalog.switches:
        return
    R = f.rails_per_switch
    path = ("fabric", "rails_per_switch")
    fill, room = rail_fill(spec)
    ok = packings(spec)
    if R not in ok:
        what = f"the {f.hb_domain} rails" if spec.family.rails_apart else f"{spec.chassis.nics} NICs per server and k/2 = {room}"
        yield E, path, f"{R} rails per switch does not divide {what}", f"one of {', '.join(map(str, ok))}"
    elif R * fill > room:
        k = spec.switch(f.switch).ports
        why = (f"a rail of {fill} NICs on one {k}-port switch" if fill < k else f"a rail of {spec.shape.endpoints // max(1, f.hb_domain):,} NICs needs a tree whose leaves use all {k} ports")
        yield E, path, f"{R} rails x {fill} ports = {R * fill:,} exceeds the switch radix {room}: {why}", f"at most {max(1, room // max(1, fill))}"


def _attachments(spec: Spec) -> Iterator[Finding]:
    f, shape = spec.fabric, spec.shape
    roles = shape.roles
    seen: dict[str, int] = {}
    for i, a in enumerate(f.attachments):
        base = ("fabric", "attachments", i)
        if a.name in seen:
            yield E, base + ("name",), f"attachment name '{a.name}' is already used by attachments[{seen[a.name]}]", "a different name"
        elif a.name in SWITCH_ROLES or a.name.startswith("rail"):
            yield E, base + ("name",), f"'{a.name}' names switches of the fabric", "another name"
        seen.setdefault(a.name, i)
        if a.tier not in roles:
            yield E, base + ("tier",), f"a {shape.family} fabric of {len(roles)} tier(s) has no tier '{a.tier}'", f"one of {', '.join(roles)}"
            continue
        t = shape.tier(a.tier)
        if a.node_slot:
            yield from _node_slot(spec, i, t)
        port = spec.switch(t.model).port_speed
        if a.speed > port:
            yield E, base + ("speed",), f"{a.speed / 1e9:g}G exceeds the {t.role} port speed {port / 1e9:g}G ({t.model})", f"at most {port / 1e9:g}G"
        sw = spec.switch(t.model)
        speed = min(a.speed, port)
        if sw.port_map is not None and target_of(sw).breakouts and speed not in sw.port_map.speeds:
            allowed = ", ".join(f"{x / 1e9:g}G" for x in sw.port_map.speeds)
            yield E, base + ("speed",), f"{t.model} ports run in breakout mode '{sw.port_map.breakouts[0]}', which has no {speed / 1e9:g}G", f"a speed of {allowed}"
        if f.technology == Technology.ROCE:
            if a.kind == "subnet-manager":
                yield E, base + ("kind",), "a subnet manager runs an InfiniBand subnet; this fabric is RoCE", "storage, gateway or other"
            if t.level != 1:
                yield E, base + ("tier",), (
                    f"a routed (RoCE) fabric attaches endpoints to its leaf tier, where they join the leaf's subnet; {t.role} is level {t.level}"
                ), roles[0]
        elif a.speed <= port:
            try:
                ib_rate(a.speed, port)
            except ValueError as e:
                yield E, base + ("speed",), str(e), "1, 2 or 4 lanes of the port's rate"
    if f.technology == Technology.INFINIBAND and f.attachments and not any(a.kind == "subnet-manager" for a in f.attachments):
        yield W, ("fabric", "attachments"), "no subnet-manager attachment: OpenSM runs on the first GPU server's HCA", "a subnet-manager (UFM) attachment"


def _node_slot(spec: Spec, i: int, t) -> Iterator[Finding]:
    """An attachment in free node slots: on the leaf tier, within the slots the part-filled groups leave."""
    base = ("fabric", "attachments", i)
    if t.level != 1:
        yield E, base + ("node_slot",), f"a node slot is a leaf's down-port; {t.role} is level {t.level}", f"tier: {spec.shape.roles[0]}, or no node_slot"
        return
    mine = next(x for x in spec.shape.attachments if x.name == spec.fabric.attachments[i].name)
    need = mine.first + mine.links
    have = len(mine.slots)
    if need > have:
        rails, _ = rail_hosts(spec)
        rs = spec.chassis.rack_scale
        per_host = rs.gpus_per_tray if rs is not None else spec.chassis.gpus
        fewer = math.ceil((need - have) / max(1, rails))  # a host fewer frees a slot on each of its rails' leaves
        yield E, base + ("count",), (
            f"{mine.links} port(s) in free node slots, {max(0, have - mine.first)} left: every {t.role} down-port a node could use "
            f"is taken ({spec.gpus:,} GPUs)"), f"gpus: {spec.gpus - fewer * per_host:,} ({fewer} node(s) fewer), or no node_slot"


# Per layout (twin/lang/site/families.py): fields of the tiers it refuses, its sizing checks
TIER_FIELDS = {AI_ZONE_LAYOUT: _ai_zone_tier_fields, CLOS_LAYOUT: _clos_tier_fields, UNIT_LAYOUT: _unit_tier_fields}
SIZING = {AI_ZONE_LAYOUT: (_ai_zone,), CLOS_LAYOUT: (_tree_pins, _rails), UNIT_LAYOUT: (unit_findings,)}


def _radix(spec: Spec) -> Iterator[Finding]:
    """Ports per switch within the model's radix, tier by tier (the AI-zone checks word their own
    errors for RTSW, CTSW and ATSW without attachments; this one covers every other case)."""
    shape = spec.shape
    for t in shape.tiers:
        if t.free >= 0 or not t.attach:  # without attachments the tier and pin checks word the error
            continue
        last = max((i for i, a in enumerate(spec.fabric.attachments) if a.tier == t.role), default=None)
        path = ("fabric", "attachments", last, "count") if last is not None else ("fabric", "switch")
        yield E, path, (
            f"a {t.role} ({t.model}, {t.radix} ports) needs {t.down} down + {t.up} up + {t.attach} attached = {t.down + t.up + t.attach}"
        ), f"at most {max(0, t.radix - t.down - t.up)} attachment ports per {t.role} ({t.count:,} switches)"


def _lids(spec: Spec) -> Iterator[Finding]:
    shape = spec.shape
    lmc = spec.fabric.infiniband.lmc
    need = shape.lids(lmc)
    if need <= IB_UNICAST_LIDS:
        return
    ports = shape.endpoints + sum(a.links for a in shape.attachments)
    at_zero = shape.lids(0)
    path = ("fabric", "infiniband", "lmc") if lmc and at_zero <= IB_UNICAST_LIDS else ("fabric", "gpus")
    yield E, path, (
        f"one InfiniBand subnet has {IB_UNICAST_LIDS:,} unicast LIDs; this fabric needs {ports:,} HCA ports x 2^{lmc} (LMC {lmc})"
        f" + {shape.switches:,} switches = {need:,}. twin builds one subnet (no IB routers)"
    ), (f"lmc: {max(x for x in range(8) if shape.lids(x) <= IB_UNICAST_LIDS)}" if at_zero <= IB_UNICAST_LIDS
        else f"at most {(IB_UNICAST_LIDS - shape.switches):,} HCA ports, or a RoCE fabric")

"""Design checks that relate several parts of a spec: references, arithmetic, port budgets, warnings.

Each check is a function ``(spec-ish) -> list of (severity, path, message, expected)``. They never
raise, so one run reports everything; :mod:`twin.compiler.resolve.validate` attaches file positions.
"""

from __future__ import annotations

import difflib
import ipaddress
import math
import re
from collections.abc import Iterator
from itertools import pairwise

from twin.compiler.resolve.planes import spec_port_speed
from twin.compiler.resolve.rack_checks import rack_scale
from twin.compiler.resolve.sizing import fat_tree_capacity, fat_tree_tiers
from twin.compiler.resolve.spec import Spec
from twin.compiler.resolve.targets import hostname_findings, ib_rate, port_name_problem, target_of
from twin.lang.diagnostics import Severity
from twin.lang.site.catalog_models import Catalog
from twin.lang.site.families import AI_ZONE_LAYOUT, CLOS_LAYOUT, UNIT_LAYOUT, family_traits
from twin.lang.site.models import Redundancy, Site, Technology

Finding = tuple[Severity, tuple, str, str]
E, W = Severity.ERROR, Severity.WARNING


def references(site: Site, catalog: Catalog) -> Iterator[Finding]:
    """Every name that points into the catalog or the rack types must exist there."""
    f = site.fabric
    if f.rack_type not in site.rack_types:
        yield E, ("fabric", "rack_type"), f"unknown rack type '{f.rack_type}'", _one_of(site.rack_types, f.rack_type)
    for name, rt in site.rack_types.items():
        if rt.chassis not in catalog.chassis:
            yield E, ("rack_types", name, "chassis"), f"unknown chassis '{rt.chassis}'", _one_of(catalog.chassis, rt.chassis)
        if rt.rtsw is not None and rt.rtsw not in catalog.switches:
            yield E, ("rack_types", name, "rtsw"), f"unknown switch model '{rt.rtsw}'", _one_of(catalog.switches, rt.rtsw)
    want = "infiniband" if f.technology == Technology.INFINIBAND else "ethernet"
    models: list[tuple[tuple, str]] = []
    for tier in ("rtsw", "ctsw", "atsw"):
        t = getattr(f, tier)
        if t is not None and t.model is not None:
            models.append((("fabric", tier, "model"), t.model))
    if f.switch is not None:
        models.append((("fabric", "switch"), f.switch))
    rt = site.rack_types.get(f.rack_type)
    if rt is not None and rt.rtsw is not None:
        models.append((("rack_types", f.rack_type, "rtsw"), rt.rtsw))
    attached = {f"{a.name}-{a.tier}" for a in f.attachments}
    pattern, shown = family_traits(f.family).link_tiers
    for tier, names in f.media.items():
        known = re.fullmatch(pattern, tier) is not None or tier in attached
        tiers = shown
        tiers += "".join(f", {t}" for t in sorted(attached))
        if not known:
            yield E, ("fabric", "media", tier), f"'{tier}' is not a link tier of a {f.family.value} fabric", tiers
        for i, n in enumerate(names):
            if n not in catalog.media:
                yield E, ("fabric", "media", tier, i), f"unknown medium '{n}'", _one_of(catalog.media, n)
            elif (k := catalog.media[n].module_ports) > 1:
                cages = {catalog.switches[m].ports_per_cage for _, m in models if m in catalog.switches}
                if k not in cages:
                    yield E, ("fabric", "media", tier, i), (
                        f"'{n}' is a module for a cage of {k} ports; no switch of this fabric has {k}-port cages"), (
                        f"a switch model with ports_per_cage: {k}, or a single-port medium")
    for name, med in catalog.media.items():
        if med.far_end is not None and med.far_end not in catalog.media:
            yield E, ("catalog", "media", name, "far_end"), f"unknown medium '{med.far_end}'", _one_of(catalog.media, med.far_end)
    for path, m in models:
        sw = catalog.switches.get(m)
        if sw is None:
            if path[0] == "fabric":
                yield E, path, f"unknown switch model '{m}'", _one_of(catalog.switches, m)
        elif sw.technology != want:
            yield E, path, f"'{m}' is an {sw.technology} switch but the fabric is {f.technology.value}", f"an {want} switch"
    for name, sw in site.catalog.switches.items():  # the built-in models are checked by the tests
        if (problem := port_name_problem(sw)) is not None:
            yield E, ("catalog", "switches", name, "port_name"), problem, "names its switch OS accepts as interface names"
    yield from hostname_findings(site)


def family_shape(site: Site) -> Iterator[Finding]:
    """Each family needs its own set of fields (its layout's ``NEEDS``)."""
    yield from NEEDS[family_traits(site.fabric.family).layout](site)


def _ai_zone_needs(site: Site) -> Iterator[Finding]:
    f = site.fabric
    rt = site.rack_types.get(f.rack_type)
    if not ((f.zones and f.racks_per_zone) or (f.gpus and f.racks_per_zone)):
        yield E, ("fabric",), f"an {f.family.value} fabric needs zones and racks_per_zone (or gpus and racks_per_zone)", "zones: 8, racks_per_zone: 192"
    if f.ctsw is None or f.ctsw.model is None:
        yield E, ("fabric", "ctsw"), f"an {f.family.value} fabric needs a CTSW tier with a model (count: pinned, or sized)", "ctsw: {model: arista-7800r3, count: 16}"
    rtsw_model = (f.rtsw.model if f.rtsw and f.rtsw.model else None) or (rt.rtsw if rt else None)
    if rtsw_model is None and rt is not None:  # an unknown rack type is one error (references), not two
        yield E, ("rack_types", f.rack_type, "rtsw"), f"an {f.family.value} fabric needs a rack switch in its rack type", "rtsw: minipack2"
    if rt is not None and f.rtsw and f.rtsw.model and rt.rtsw and f.rtsw.model != rt.rtsw:
        yield E, ("fabric", "rtsw", "model"), f"'{f.rtsw.model}' differs from the rack type's RTSW '{rt.rtsw}'", f"'{rt.rtsw}' or omit it"
    if (f.zones or 0) > 1 and f.atsw is None:
        yield E, ("fabric", "atsw"), f"{f.zones} zones need an ATSW tier to join them", "atsw: {model: ..., count: ..., oversubscription: '1:7'}"
    if f.atsw is not None and f.atsw.model is None:
        yield E, ("fabric", "atsw"), "the ATSW tier needs a model (count: pinned, or sized)", "atsw: {model: arista-7800r3, count: 16}"


def _clos_needs(site: Site) -> Iterator[Finding]:
    f = site.fabric
    if f.switch is None:
        yield E, ("fabric", "switch"), f"a {f.family.value} fabric needs the switch model of its tiers", "switch: qm9700"
    if f.gpus is None and not (f.zones and f.racks_per_zone):
        yield E, ("fabric", "gpus"), f"a {f.family.value} fabric needs a GPU count", "gpus: 24576"


def _unit_needs(site: Site) -> Iterator[Finding]:
    yield from _clos_needs(site)
    if site.fabric.unit is None:
        yield E, ("fabric",), f"a {site.fabric.family.value} fabric needs its scalable unit stated", (
            "unit: {racks: 8, leaf: {hosts: rack, up: 18}, spine: {down: 24, up: 24}}")


def arithmetic(spec: Spec) -> Iterator[Finding]:
    """Counts that must agree, and port budgets that must fit each switch's radix."""
    f = spec.site.fabric
    gpr = spec.rack.gpus
    if gpr == 0:
        yield E, ("rack_types", spec.rack_type_name), "the rack type holds no GPUs", "a chassis with gpus > 0"
        return
    if f.gpus is not None and f.zones and f.racks_per_zone:
        want = f.zones * f.racks_per_zone * gpr
        if f.gpus != want:
            yield E, ("fabric", "gpus"), (
                f"{f.gpus} GPUs does not match {f.zones} zones x {f.racks_per_zone} racks x {gpr} GPUs per rack = {want}"
            ), str(want)
    elif f.gpus is not None and f.gpus % gpr:
        yield W, ("fabric", "gpus"), f"{f.gpus} GPUs is not a multiple of {gpr} GPUs per rack; the last rack is part-filled", f"a multiple of {gpr}"
    if spec.chassis.nics == 0:
        yield E, ("rack_types", spec.rack_type_name, "chassis"), "the chassis has no backend NICs", "nics > 0"
    yield from rack_scale(spec)
    if f.nic_speed is not None and f.nic_speed > spec.chassis.nic_speed:
        yield E, ("fabric", "nic_speed"), f"{f.nic_speed / 1e9:g} Gbit/s exceeds the chassis NIC speed {spec.chassis.nic_speed / 1e9:g} Gbit/s", "at most the NIC speed"
    yield from PORTS[spec.family.layout](spec)


def _ai_zone_ports(spec: Spec) -> Iterator[Finding]:
    f = spec.fabric
    shape = spec.shape
    rt_path = ("rack_types", spec.rack_type_name, "rtsw")
    rtsw = spec.rtsw_model
    if rtsw is None or f.ctsw is None or f.ctsw.count is None or f.ctsw.model is None:
        return
    rt, ct, at = shape.tier("rtsw"), shape.tier("ctsw"), shape.tier("atsw")
    down, up = rt.down, rt.up
    if spec_port_speed(spec) > rtsw.port_speed:
        yield E, rt_path, f"NIC speed {spec_port_speed(spec) / 1e9:g}G exceeds {spec.rack_type.rtsw} port speed {rtsw.port_speed / 1e9:g}G", "faster RTSW ports"
    if down + up > rtsw.ports:
        yield E, ("fabric", "rtsw", "uplinks") if f.rtsw else rt_path, (
            f"RTSW {spec.rack_type.rtsw} needs {down} down + {up} up = {down + up} ports, has {rtsw.ports}"
        ), f"at most {rtsw.ports - down} uplinks"
    if up == 0:
        yield E, ("fabric", "rtsw", "uplinks"), "RTSWs need at least one uplink", ">= 1"
        return
    nic_bw, up_bw = shape.boundaries[0].speed, shape.boundaries[1].speed  # NIC ports may be slower (planes)
    if up * up_bw < down * nic_bw:
        what = f"{down}:{up}" if nic_bw == up_bw else f"{down} x {nic_bw / 1e9:g}G : {up} x {up_bw / 1e9:g}G"
        yield W, ("fabric", "rtsw", "uplinks"), (
            f"RTSWs are oversubscribed {what} ({down * nic_bw / (up * up_bw):.2f}:1); traffic leaving a rack is throttled"
        ), f"uplinks >= {math.ceil(down * nic_bw / up_bw)} for full bisection"
    c = f.ctsw.count
    if ct.down + ct.up > ct.radix:
        free = max(1, ct.radix - ct.up)
        yield E, ("fabric", "ctsw", "count"), (
            f"each of {c} CTSWs ({f.ctsw.model}, {ct.radix} ports) needs {ct.down} down + {ct.up} up = {ct.down + ct.up} ports"
        ), f"at least {math.ceil(spec.racks_per_zone * shape.rack_uplinks / free)} CTSWs per zone or a larger switch"
    if at is not None:
        total = shape.links("ctsw-atsw") // shape.planes  # one plane's
        if at.down > at.radix:
            yield E, ("fabric", "atsw", "count"), (
                f"{total} CTSW uplinks over {f.atsw.count} ATSWs need {at.down} ports each; {f.atsw.model} has {at.radix}"
            ), f"at least {math.ceil(total / at.radix)} ATSWs"
        over = f.atsw.oversubscription or 1.0
        if over > 4:
            yield W, ("fabric", "atsw", "oversubscription"), (
                f"cross-zone bandwidth is 1/{over:g} of injection; keep each job's DP groups inside a zone"
            ), "at most 4:1 for jobs that span zones"


def _fat_tree_ports(spec: Spec) -> Iterator[Finding]:
    f = spec.fabric
    if f.switch is None or f.switch not in spec.catalog.switches:
        return
    sw = spec.catalog.switches[f.switch]
    endpoints = spec.shape.endpoints
    nic = spec_port_speed(spec)  # a multi-port NIC's port: its share of the NIC's speed
    if nic > sw.port_speed:
        what = "NIC port speed" if spec.chassis.nic_ports > 1 else "NIC speed"
        yield E, ("fabric", "switch"), f"{what} {nic / 1e9:g}G exceeds {f.switch} port speed {sw.port_speed / 1e9:g}G", "faster switch ports"
    fam = spec.family
    if fam.has_rails:
        k = f.hb_domain
        if spec.chassis.gpus and k % spec.chassis.gpus and spec.chassis.gpus % k:
            yield E, ("fabric", "hb_domain"), f"HB domain of {k} GPUs does not align with {spec.chassis.gpus} GPUs per server", "a multiple or divisor of the server's GPUs"
        if endpoints % k:
            yield E, ("fabric", "hb_domain"), f"{endpoints} endpoints do not split into rails of {k}", f"a divisor of {endpoints}"
        if fam.rails_apart:
            endpoints = endpoints // k  # each rail is its own fat-tree
    need = fat_tree_tiers(endpoints, sw.ports)
    if f.tiers is not None and f.tiers < need:
        yield E, ("fabric", "tiers"), (
            f"{f.tiers} tiers of {sw.ports}-port {f.switch} serve at most {fat_tree_capacity(sw.ports, f.tiers):,} endpoints; have {endpoints:,}"
        ), f"tiers >= {need}"


def _unit_ports(spec: Spec) -> Iterator[Finding]:
    """A scalable-unit fabric: the NIC port within the switch's, rails that match the hosts (its sizing is
    twin.compiler.resolve.unit_shape's)."""
    for sev, path, msg, want in _fat_tree_ports(spec):
        if path != ("fabric", "tiers"):
            yield sev, path, msg, want


def config_targets(spec: Spec) -> Iterator[Finding]:
    """What the config target of each tier's model needs from the model (its registry entry's
    ``needs``: a SONiC config_db needs the platform's port map and the buffer size), and, for a target
    that runs ports in the port map's breakout mode, every link speed must be one that mode allows (a
    link runs at the slower of its two ends)."""
    f = spec.fabric
    if f.technology != Technology.ROCE:
        sw = spec.catalog.switches.get(f.switch) if f.switch else None
        if sw is not None:
            for path, speed in ((("fabric", "nic_speed") if f.nic_speed else ("fabric", "switch"), min(spec_port_speed(spec), sw.port_speed)),
                                (("fabric", "switch"), sw.port_speed)):
                try:
                    ib_rate(speed, sw.port_speed)
                except ValueError as e:
                    yield E, path, str(e), "1, 2 or 4 lanes of SDR, DDR, QDR, FDR, EDR, HDR, NDR or XDR"
        return
    tiers = [(path, name) for path, name in SWITCH_PATHS[spec.family.layout](spec) if name in spec.catalog.switches]
    for path, name in tiers:
        sw = spec.catalog.switches[name]
        for need in target_of(sw).needs:
            if getattr(sw, need.field) is None and need.configs_only:
                yield W, path, (f"switch model '{name}' has no {need.field}: the build writes everything but its "
                                f"{target_of(sw).name} configs ({need.why})"), need.example.format(model=name)
            elif getattr(sw, need.field) is None:
                yield E, path, f"switch model '{name}' has no {need.field}; {need.why}", need.example.format(model=name)
    if not tiers:
        return
    models = [spec.catalog.switches[n] for _, n in tiers]
    nic_path = ("fabric", "nic_speed") if f.nic_speed is not None else tiers[0][0]
    speeds = [(nic_path, tiers[0][1], models[0], min(spec_port_speed(spec), models[0].port_speed))]
    for ((pa, na), a), ((pb, nb), b) in pairwise(zip(tiers, models)):
        speed = min(a.port_speed, b.port_speed)
        speeds += [(pa, na, a, speed), (pb, nb, b, speed)]
    for path, name, sw, speed in speeds:
        if sw.port_map is not None and target_of(sw).breakouts and speed not in sw.port_map.speeds:
            allowed = ", ".join(f"{s / 1e9:g}G" for s in sw.port_map.speeds)
            yield E, path, (
                f"{name} ports run in breakout mode '{sw.port_map.breakouts[0]}', which has no {speed / 1e9:g}G"
            ), f"a speed of {allowed}"


def _ai_zone_switches(spec: Spec) -> list[tuple[tuple, str]]:
    """(where the model is named, model) of each routed tier, bottom-up: the rack type's RTSW, CTSW, ATSW."""
    f = spec.fabric
    tiers = [(("rack_types", spec.rack_type_name, "rtsw"), spec.rack_type.rtsw)]
    for tier in ("ctsw", "atsw"):
        t = getattr(f, tier)
        if t is not None and t.model is not None and (tier == "ctsw" or spec.zones > 1):
            tiers.append((("fabric", tier, "model"), t.model))
    return tiers


def _clos_switches(spec: Spec) -> list[tuple[tuple, str]]:
    """A folded Clos names its one model once, for every tier."""
    f = spec.fabric
    return [(("fabric", "switch"), f.switch)] if f.switch is not None else []


# Per layout (twin/lang/site/families.py): the fields it needs, its port budgets, where its tiers' models are named
NEEDS = {AI_ZONE_LAYOUT: _ai_zone_needs, CLOS_LAYOUT: _clos_needs, UNIT_LAYOUT: _unit_needs}
PORTS = {AI_ZONE_LAYOUT: _ai_zone_ports, CLOS_LAYOUT: _fat_tree_ports, UNIT_LAYOUT: _unit_ports}
SWITCH_PATHS = {AI_ZONE_LAYOUT: _ai_zone_switches, CLOS_LAYOUT: _clos_switches, UNIT_LAYOUT: _clos_switches}


def facility(site: Site) -> Iterator[Finding]:
    """Hall geometry and power/cooling definitions that must be self-consistent."""
    first: dict[str, int] = {}
    for i, h in enumerate(site.halls):
        base = ("halls", i)
        if h.name in first:
            yield E, base + ("name",), f"hall name '{h.name}' is already used by halls[{first[h.name]}]", "a different name for each hall"
        first.setdefault(h.name, i)
        for j, r in enumerate(h.reserved):
            bad_rows = [x for x in r.rows if x > h.rows]
            bad_pos = [x for x in r.positions if x > h.positions_per_row]
            if bad_rows:
                yield E, base + ("reserved", j, "rows"), f"row {bad_rows[0]} is outside the hall", f"rows 1-{h.rows}"
            if bad_pos:
                yield E, base + ("reserved", j, "positions"), f"position {bad_pos[0]} is outside the row", f"positions 1-{h.positions_per_row}"
        seen: dict[int, str] = {}
        for j, z in enumerate(h.cooling.zones):
            for r in z.rows:
                if r > h.rows:
                    yield E, base + ("cooling", "zones", j, "rows"), f"row {r} is outside the hall", f"rows 1-{h.rows}"
                    break
                if r in seen:
                    yield E, base + ("cooling", "zones", j, "rows"), f"row {r} is already in cooling zone '{seen[r]}'", "each row in one zone"
                    break
                seen[r] = z.name
        if h.cooling.zones and h.cooling.capacity_per_row is None:
            uncovered = [r for r in range(1, h.rows + 1) if r not in seen]
            if uncovered:
                yield W, base + ("cooling", "zones"), f"{len(uncovered)} rows (first: {uncovered[0]}) have no cooling zone and cannot host racks", "every row in a zone"
        p = h.power
        if p.redundancy == Redundancy.N_PLUS_1 and p.block_rating is None:
            yield E, base + ("power", "block_rating"), "N+1 block redundancy needs the rating of one block", "block_rating: 2.5 MW"
        if p.derating > 0.8:
            yield W, base + ("power", "derating"), f"derating {p.derating} loads breakers above 80% continuously", "0.8 (NEC continuous-load rule)"


def routing(spec: Spec) -> Iterator[Finding]:
    """ASN pools large enough and disjoint; address pools parse; risky load-balancing choices."""
    f = spec.fabric
    r = f.routing
    pools = sorted(r.asn_pools.items(), key=lambda kv: kv[1].first)
    for (a, pa), (b, pb) in zip(pools, pools[1:]):
        if pb.first <= pa.last:
            yield E, ("fabric", "routing", "asn_pools", b), f"ASN pool {_pool(spec, b)} overlaps pool {_pool(spec, a)}", "disjoint pools"
    if f.technology == Technology.ROCE:
        tiers = spec.shape.tiers
        top = 4 if spec.campus is not None else 3  # a campus spine is a fourth routed tier
        if len(tiers) > top:
            yield E, ("fabric", "tiers"), (
                f"a RoCE fabric of {len(tiers)} switch tiers: twin's routed configs (eBGP, RFC 7938) cover at most {top}"
            ), "tiers <= 3 (a larger switch), or technology: infiniband"
        # ASNs a level needs: one per leaf; one per AI zone or tree pod at level 2 (else one); one at the top
        # (a campus: one per building's ATSW layer, and one for a campus spine)
        ts = spec.shape.tree
        pods = math.ceil(ts.switches[0] / (ts.radix // 2)) * spec.shape.trees if ts and ts.tiers >= 3 else 1
        if spec.shape.unit is not None:  # a scalable unit: one ASN per SU leaf group's spines
            pods = spec.shape.unit.groups
        need = {1: tiers[0].count, 2: spec.zones if spec.family.zoned else pods,
                3: len(spec.campus.buildings) if spec.campus is not None else 1, 4: 1}
        for t in tiers[:top]:
            name = f"level{t.level}"
            p = r.asn_pools.get(name)
            if p is None:
                yield E, ("fabric", "routing", "asn_pools"), f"no ASN pool for the level-{t.level} switches ({t.role})", f"asn_pools.{name}: {{first: ..., last: ...}}"
            elif p.last - p.first + 1 < need[t.level]:
                yield E, ("fabric", "routing", "asn_pools", name), (
                    f"pool holds {p.last - p.first + 1} ASNs; {need[t.level]:,} {t.role} ASNs are needed"
                ), f"at least {need[t.level]:,} ASNs"
    nets = {}
    for key in ("loopback_pool", "p2p_pool", "rack_pool"):
        try:
            nets[key] = ipaddress.ip_network(getattr(r, key), strict=True)
        except ValueError as e:
            yield E, ("fabric", "routing", key), f"'{getattr(r, key)}' is not a network: {e}", "an IPv4 prefix such as 10.0.0.0/12"
    keys = sorted(nets)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            if nets[a].version == nets[b].version and nets[a].overlaps(nets[b]):
                yield E, ("fabric", "routing", b), f"{nets[b]} overlaps {a} {nets[a]}", "disjoint pools"
    if f.technology == Technology.ROCE:
        if r.qps_per_gpu_pair < 4 and "roce-dst-qp" in r.hash_fields:
            yield W, ("fabric", "routing", "qps_per_gpu_pair"), (
                f"{r.qps_per_gpu_pair} QP(s) per GPU pair leave few flows to hash; Meta uses 16 for LLM jobs"
            ), "16"
        if "roce-dst-qp" not in r.hash_fields and r.qps_per_gpu_pair > 1:
            yield W, ("fabric", "routing", "hash_fields"), "without roce-dst-qp in the hash, extra QPs share one path (same 5-tuple entropy)", "add roce-dst-qp (E-ECMP)"
        if f.qos.pfc_watchdog is None:
            yield W, ("fabric", "qos", "pfc_watchdog"), "PFC without a watchdog can spread a pause storm fabric-wide", "pfc_watchdog: 200 ms"


def _pool(spec: Spec, name: str) -> str:
    """'level2 (ctsw)': a pool by its level and the role of that level's switches in this fabric."""
    tiers = spec.shape.tiers
    level = int(name[5:]) if name.startswith("level") and name[5:].isdigit() else 0
    return f"{name} ({tiers[level - 1].role})" if 0 < level <= len(tiers) else name


def _one_of(names, given: str | None = None) -> str:
    """What a name could have been: the close one (``did you mean 'gt-rack'?``) or the first few."""
    names = sorted(names)
    if not names:
        return "an entry defined in the catalog"
    close = difflib.get_close_matches(given, names, n=1) if given else []
    if close:
        return f"did you mean '{close[0]}'?"
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f"one of: {shown}"

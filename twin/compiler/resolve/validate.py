"""Spec validation: YAML -> :class:`~twin.compiler.resolve.spec.Spec`, or every problem at once.

Three stages, each only when the previous one is clean (later checks read what earlier ones guarantee):
structure (pydantic: types, units, ranges), references (catalog and rack-type names), then design
checks (arithmetic, port budgets, facility definitions, routing and workloads), which also give warnings.
Hall types are expanded first (:mod:`twin.lang.site.hall_types`), then workloads that name a base
(:mod:`twin.lang.site.workload_bases`); address pools are fitted to the fabric
last (:mod:`twin.compiler.resolve.pools`), so the returned Spec carries the pools the build will use.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import re
from dataclasses import replace
from pathlib import Path

from pydantic import ValidationError

from twin.compiler.resolve import campus_plan, checks, fabric_checks, liquid, planes, study_checks, workload_checks
from twin.compiler.resolve import pools as address_pools
from twin.compiler.resolve.campus_shape import campus_shape
from twin.compiler.resolve.shape import fabric_shape
from twin.compiler.resolve.spec import HallSlots, Spec, derive_counts, rack_figures
from twin.compiler.resolve.zone_counts import with_counts
from twin.lang import catalog as catalog_mod
from twin.lang import limits, versions
from twin.lang.diagnostics import Diagnostic, Severity, SpecError
from twin.lang.loader import LoadError, Source, load_file, load_text
from twin.lang.site import campus, hall_types, workload_bases
from twin.lang.site.models import ROLE_POOL_NAMES, Site
from twin.lang.validator import known_fields, pydantic_diagnostics, typo_renames


def validate_file(path: str | Path) -> tuple[Spec | None, list[Diagnostic]]:
    try:
        src = load_file(path)
    except LoadError as e:
        return None, e.diagnostics
    return validate_source(src)


def validate_text(text: str, path: str = "<string>") -> tuple[Spec | None, list[Diagnostic]]:
    try:
        src = load_text(text, path)
    except LoadError as e:
        return None, e.diagnostics
    return validate_source(src)


def load_spec(path: str | Path) -> Spec:
    """The API entry: a checked :class:`Spec`, or :class:`SpecError` carrying every diagnostic."""
    spec, diags = validate_file(path)
    if spec is None:
        raise SpecError(diags)
    return spec


def validate_source(src: Source) -> tuple[Spec | None, list[Diagnostic]]:
    if not isinstance(src.data, dict):
        return None, [diagnostic(src, Severity.ERROR, (), "a site must be a mapping of fields", "name:, power:, halls:, ...")]
    older = versions.read(src, "site")  # a file of an older language version, brought to this one (a warning per value taken)
    if any(d.severity is Severity.ERROR for d in older):
        return None, older
    spec, diags = _validate_current(src)
    return spec, sorted(older + diags, key=_order) if older else diags


def _validate_current(src: Source) -> tuple[Spec | None, list[Diagnostic]]:
    if diags := _halls_cost(src):  # what the site costs to validate and build, before any of it is done
        return None, diags
    src, diags = campus.expand(src)  # a campus's halls under its buildings join the site's halls first
    if not diags:
        src, diags = hall_types.expand(src)
        diags = [replace(d, path=campus.written_path(src, d.path)) for d in diags]  # a hall as written under its building
    if not any(d.severity is Severity.ERROR for d in diags):
        src, more = workload_bases.expand(src)  # a workload naming a base takes the base's fields it does not set
        diags = diags + more
    if not diags:
        diags = _positions_cost(src)
    if any(d.severity is Severity.ERROR for d in diags):
        return None, sorted(diags, key=_order)
    try:
        site = Site.model_validate(src.data)
    except ValidationError as e:
        return None, _finish(diags + pydantic_diagnostics(src, e, Site, diagnostic) + _past_unknown_fields(src, e))
    diags += _named(src, site)
    if any(d.severity is Severity.ERROR for d in diags):
        return None, _finish(diags)
    spec = _resolve(src, site, catalog_mod.merged(site.catalog, campus_site=bool(site.buildings)))
    for check in (checks.arithmetic, fabric_checks.sizing, campus_plan.arithmetic, checks.config_targets, checks.routing,
                  workload_checks.workloads, study_checks.media_findings):
        diags += [diagnostic(src, *f) for f in check(spec)]
    if not any(d.severity is Severity.ERROR for d in diags):
        spec, findings = address_pools.fit(spec)  # defaults grow with the fabric; a short pool names its prefix
        diags += [diagnostic(src, *f) for f in findings]
    diags = _finish(diags)
    if any(d.severity is Severity.ERROR for d in diags):
        return None, diags
    return spec, diags


def _named(src: Source, site: Site) -> list[Diagnostic]:
    """The second stage: names (rack types, catalog entries, buildings), each family's fields, the facility
    (liquid cooling included)."""
    cat = catalog_mod.merged(site.catalog, campus_site=bool(site.buildings))
    found = [*checks.references(site, cat), *campus_plan.references(site, cat), *checks.family_shape(site), *planes.findings(site, cat),
             *fabric_checks.fields(site), *checks.facility(site), *liquid.findings(site, cat), *study_checks.findings(site, cat)]
    return [diagnostic(src, *f) for f in found]


def _past_unknown_fields(src: Source, e: ValidationError) -> list[Diagnostic]:
    """When every structural error is an unknown field (a typo), the site without those fields is checked
    on, so the other mistakes (an unknown rack type, a switch model) are reported in the same run. A finding
    a typo may have caused (at the typo's mapping, or at a field named like it) is left out: one mistake,
    one error."""
    errs = e.errors(include_url=False)
    renames = typo_renames(errs, Site)  # a required field written with a typo: checked on under the name it meant
    if not errs or any(x["type"] != "extra_forbidden" and not (x["type"] == "missing" and tuple(x["loc"]) in renames.values())
                       for x in errs):
        return []
    data = copy.deepcopy(src.data)
    typos = []
    for x in (x for x in errs if x["type"] == "extra_forbidden"):
        loc = tuple(x["loc"])
        parent = data
        for k in loc[:-1]:
            try:
                parent = parent[k]
            except (KeyError, IndexError, TypeError):
                return []  # a location through a union tag: not a plain path into the data
        if not isinstance(parent, dict) or loc[-1] not in parent:
            return []
        value = parent.pop(loc[-1])
        if loc in renames:
            parent[renames[loc][-1]] = value
        typos.append(loc)
    try:
        site = Site.model_validate(data)
    except ValidationError:
        return []

    meant = [(loc[:-1], set(difflib.get_close_matches(str(loc[-1]), known_fields(Site, loc[:-1]), n=1))) for loc in typos]

    def caused(path: tuple) -> bool:  # at the typo's mapping, or under the field it meant
        return any(path == parent or (len(path) > len(parent) and path[:len(parent)] == parent and path[len(parent)] in names)
                   for parent, names in meant)

    return [d for d in _named(src, site) if d.severity is Severity.ERROR and not caused(d.path)]


def _resolve(src: Source, site: Site, cat) -> Spec:
    f = site.fabric
    rt = site.rack_types[f.rack_type]
    chassis = cat.chassis[rt.chassis]
    rtsw_name = rt.rtsw or (f.rtsw.model if f.rtsw else None)
    rtsw = cat.switches.get(rtsw_name) if rtsw_name else None
    site = liquid.with_chassis_share(site, chassis)  # a rack-scale chassis' liquid share where the rack type gives none
    rt = site.rack_types[f.rack_type]
    rack = rack_figures(rt, chassis, rtsw, f.planes)
    site = liquid.sized(site, rack.power)  # CDUs counted "auto" at the rack's power
    gpus, racks, zones, rpz = derive_counts(site, rack.gpus)
    spec = Spec(
        site=site,
        catalog=cat,
        source_path=src.path,
        source_sha256=hashlib.sha256(src.text.encode("utf-8")).hexdigest(),
        rack_type_name=f.rack_type,
        rack_type=rt,
        chassis=chassis,
        rtsw_model=rtsw,
        rack=rack,
        gpus=gpus,
        racks=racks,
        zones=zones,
        racks_per_zone=rpz,
        nic_speed=f.nic_speed or chassis.nic_speed,
        slots={h.name: HallSlots.of(h) for h in site.halls},
    )
    spec = with_counts(spec)  # an AI zone's CTSW / ATSW counts when the site leaves them out
    if site.buildings:  # a campus: zones to buildings and the routes between them, before the shape reads them
        spec = replace(spec, site=campus_plan.with_campus_pools(spec.site))
        spec = replace(spec, campus=campus_plan.plan(spec))
        return replace(spec, shape=campus_shape(spec, fabric_shape(spec)))
    return replace(spec, shape=fabric_shape(spec))


def _halls_cost(src: Source) -> list[Diagnostic]:
    """Halls as written (at the top and under buildings) against the ``halls`` limit."""
    data = src.data
    n = len(data["halls"]) if isinstance(data.get("halls"), list) else 0
    buildings = data["buildings"] if isinstance(data.get("buildings"), list) else []
    n += sum(len(b["halls"]) for b in buildings if isinstance(b, dict) and isinstance(b.get("halls"), list))
    where = ("halls",) if "halls" in data else ("buildings",)
    msg = limits.exceeded("halls", n)
    return [Diagnostic(Severity.ERROR, src.path, *src.locate(where), where, msg, "fewer halls")] if msg else []


def _positions_cost(src: Source) -> list[Diagnostic]:
    """Rack positions (rows x positions per row over every hall, hall types expanded) against ``rack_positions``."""
    n = 0
    halls = src.data.get("halls")
    for h in halls if isinstance(halls, list) else []:  # anything else is the models' located error
        if isinstance(h, dict) and all(type(h.get(k)) is int and h[k] > 0 for k in ("rows", "positions_per_row")):
            n += h["rows"] * h["positions_per_row"]
    msg = limits.exceeded("rack_positions", n)
    return [Diagnostic(Severity.ERROR, src.path, *src.locate(("halls",)), ("halls",), msg, "fewer rows or positions")] if msg else []


def _order(d: Diagnostic):
    return (d.file, d.line, d.col, d.severity != Severity.ERROR, d.message)


def diagnostic(src: Source, severity: Severity, path: tuple, message: str, expected: str = "") -> Diagnostic:
    """A finding at its position; a finding in a value a hall inherited points at its hall type's line,
    under the type's path, and names the hall: ``hall dh3 (type meta-hall): ...``."""
    path = written_path(src, tuple(path))
    came = hall_types.origin(src, path)
    if came is not None:
        path = came.type_path + path[len(src.anchor(path)):]
        message = f"{came.label()}: {message}"
    else:
        path = campus.written_path(src, path)
    message = campus.written_text(src, message)
    line, col = src.locate(path)
    return Diagnostic(severity, src.path, line, col, path, message, expected)


_HALL_PREFIX = re.compile(r"hall (\S+) \(type (\S+)\): ")


def _finish(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Unique and in file order; one finding for the same inherited value in several halls of a type
    ("halls dh1, dh2 (type meta-hall): ...") instead of one per hall."""
    out: dict[tuple, list] = {}
    for d in dict.fromkeys(diags):
        m = _HALL_PREFIX.match(d.message) if d.path[:1] == ("hall_types",) else None
        body = d.message[m.end():] if m else d.message
        key = (d.severity, d.file, d.line, d.col, d.path, body, d.expected, m.group(2) if m else None)
        out.setdefault(key, [d, []])[1].append(m.group(1) if m else None)
    merged = []
    for (_, _, _, _, _, body, _, tname), (d, halls) in out.items():
        if tname is not None and len(halls) > 1:
            d = replace(d, message=f"halls {', '.join(halls)} (type {tname}): {body}")
        merged.append(d)
    return sorted(merged, key=_order)


def written_path(src: Source, path: tuple) -> tuple:
    """The path as the user wrote it: an ASN pool named by its old role name (``rtsw``) keeps that name."""
    if len(path) > 3 and path[2] == "asn_pools" and path not in src.positions:
        for old, level in ROLE_POOL_NAMES.items():
            alias = path[:3] + (old,) + path[4:]
            if path[3] == level and alias in src.positions:
                return alias
    return path


def locator(path: str | Path, sha256: str):
    """``at(*paths) -> "NAME:LINE:COL"`` (the file's name, no folder: artifacts hold no paths of the machine) in the site file as written (a hall under its building, a value a
    hall inherited at its hall type's line): the first of ``paths`` the file holds, else the nearest line
    of the first. None when the file no longer has the content ``sha256`` names (changed since the build)."""
    try:
        src = load_file(path)
    except LoadError:
        return None
    if hashlib.sha256(src.text.encode("utf-8")).hexdigest() != sha256:
        return None
    src, _ = campus.expand(src)
    src, _ = hall_types.expand(src)
    src, _ = workload_bases.expand(src)

    def at(*paths: tuple) -> str:
        chosen = next((tuple(p) for p in paths if src.anchor(tuple(p)) == tuple(p)), tuple(paths[0]) if paths else ())
        d = diagnostic(src, Severity.WARNING, chosen, "")
        return f"{Path(d.file).name}:{d.line}:{d.col}"

    return at

"""A design as NetBox objects: the rows of NetBox's bulk import, in the order NetBox needs them.

One table per object kind, each with the column names of NetBox's own import form for that kind
(``dcim/forms/bulk_import.py`` and ``extras/forms/bulk_import.py`` of NetBox 4.7) and only choice values
those forms accept. A table's rows refer to objects of earlier tables by name, which is how NetBox's
importer finds them, so the tables load in list order:

    tags, site, locations (halls, then rows inside them), racks at their floor positions,
    manufacturers, device types, device roles, devices in their racks at their U, interfaces, cables

Names NetBox looks up across the whole instance are site-qualified, so two twin sites load into one
NetBox: a device is ``<site>-<twin name>`` (interface and cable imports find devices by name alone),
a row location ``<hall>-row<NN>`` (rack imports find locations by name within the site). Racks keep
their twin ids (NetBox finds a rack within its site). Tags, manufacturers, device types and roles
are catalog objects shared by every site (``Table.shared``): a second site's rows for them already
exist.

Every object carries the tag ``twin``: ``twin netbox push`` changes and deletes only objects with it.

>>> device_name("lab-2zone", "atsw-01")
'lab-2zone-atsw-01'
>>> interface_type("ethernet", 400e9), interface_type("infiniband", 400e9), interface_type("ethernet", 1e6)
('400gbase-x-qsfpdd', 'infiniband-ndr', 'other')
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from operator import itemgetter

from twin.compiler.design import Design
from twin.compiler.fabric.bom import module_end, module_ends
from twin.compiler.fabric.ports import cage_text, port_names, width
from twin.compiler.place.model import NETWORK_RACK_U

TAG = "twin"
TAG_COLOR = "2f6a9f"
STATUS = "planned"  # every object is a plan until someone installs it
NAME_MAX = 64  # NetBox's limit on device, rack and interface names

# Interface type per technology and port speed (Gbit/s). twin's catalog has port speeds but no cage
# form factors: Ethernet ports are assumed QSFP-DD up to 400G and OSFP at 800G (the Tomahawk 4/5
# switch norm); InfiniBand ports take NetBox's type for the 4x link rate of that speed.
ETHERNET_TYPES = {100: "100gbase-x-qsfp28", 200: "200gbase-x-qsfp56", 400: "400gbase-x-qsfpdd", 800: "800gbase-x-osfp"}
INFINIBAND_TYPES = {100: "infiniband-edr", 200: "infiniband-hdr", 400: "infiniband-ndr", 800: "infiniband-xdr"}
# NetBox cable types for twin's media (kind, or fiber for pluggable optics)
CABLE_TYPES = {"dac": "dac-passive", "aec": "dac-active", "aoc": "aoc", "mmf": "mmf-om4", "smf": "smf-os2"}
ROLE_NAMES = {
    "server": "GPU server", "rtsw": "RTSW", "ctsw": "CTSW", "atsw": "ATSW",
    "leaf": "Leaf", "spine": "Spine", "super": "Super spine", "core": "Core",
}
ROLE_COLORS = {
    "server": "4caf50", "rtsw": "2196f3", "ctsw": "3f51b5", "atsw": "9c27b0",
    "leaf": "2196f3", "spine": "3f51b5", "super": "673ab7", "core": "9c27b0",
}


@dataclass(frozen=True)
class Table:
    """One bulk-import file: NetBox model, import page, columns and rows (all strings)."""

    stem: str  # file name without .csv, numbered in import order, e.g. "08-devices"
    model: str  # NetBox app.model, e.g. "dcim.device"
    path: str  # NetBox's import page for it, e.g. "/dcim/devices/import/"
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...] | Iterator[tuple[str, ...]]  # an iterator from tables(): read once
    shared: bool = False  # catalog objects: may already exist, made by another site's import

    def records(self) -> list[dict[str, str]]:
        return [dict(zip(self.columns, r)) for r in self.rows]


def device_name(site: str, node: str) -> str:
    """NetBox device name of a twin device: unique across sites in one NetBox."""
    return f"{site}-{node}"


def row_location(hall: str, row: int) -> str:
    return f"{hall}-row{row:02d}"


def slugify(text: str) -> str:
    """NetBox slug of a display name (letters, digits, '-').

    >>> slugify("Meta/Celestica"), slugify("GPU server")
    ('meta-celestica', 'gpu-server')
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unnamed"


def wide_ports(model, ports: list[tuple[str, str]], wide: dict[str, float]) -> list[tuple[str, str]]:
    """A switch's (port, cage text) when some of its ports run a wider mode (``wide``: port -> its link's
    speed): such a port says its mode, and the logical ports it takes after its first are no interfaces."""
    names = [p for p, _ in ports]
    gone = {names[i + j] for port, speed in wide.items() for i in (names.index(port),) for j in range(1, width(model, speed))}
    return [(p, f"; {cage_text(model, p, wide[p])}" if p in wide else c) for p, c in ports if p not in gone]


def interface_type(technology: str, speed: float) -> str:
    table = INFINIBAND_TYPES if technology == "infiniband" else ETHERNET_TYPES
    return table.get(round(speed / 1e9), "other")


def kbps(speed: float) -> str:
    """NetBox keeps interface speed in kbit/s."""
    return str(round(speed / 1e3))


def nic_end(graph, device: str, port: str) -> tuple[str, str]:
    """(device, interface) as NetBox sees a cable end: a NIC is an interface ``nicN`` of its server; a port of a
    multi-port NIC (one per plane of a multi-plane fabric) is ``nicN/portJ``."""
    d = graph.nodes[device]
    if d["role"] == "nic":
        name = device[len(d["server"]) + 1:]
        server = d["server"]
        if d.get("rack") != graph.nodes[server]["rack"]:  # a tray in the partner rack of a rack pair (NVL36x2)
            server = partner_device(graph, server)
        return server, (f"{name}/{port}" if (d.get("ports") or 1) > 1 else name)
    return device, port


def partner_device(graph, server: str) -> str:
    """The device of a rack pair's second rack (NVL36x2): the system's trays standing there, named as a
    server of that rack (``gh1-r0002-s1`` for the system ``gh1-r0001-s1`` whose partner is ``gh1-r0002``)."""
    return _partner(server, graph.nodes[server])


def _partner(server: str, attrs: dict) -> str:
    """:func:`partner_device` from the server's attributes."""
    return f"{attrs['pair']}-{server.rsplit('-', 1)[1]}"


def _cable_ends(site: str, node: dict[str, dict]) -> dict[str, tuple[str, str | None, bool]]:
    """What :func:`nic_end` makes of each node, worked out once per node: (NetBox device name, the NIC's
    interface name or None for a device whose ports are its interfaces, whether the NIC names its ports).
    A cable end (node, port) is then ``(device, port)``, ``(device, "nicN/port")`` or ``(device, "nicN")``."""
    out = {}
    for n, d in node.items():
        if d["role"] != "nic":
            out[n] = (device_name(site, n), None, False)
            continue
        server = d["server"]
        stem = n[len(server) + 1:]
        if d.get("rack") != node[server]["rack"]:  # a tray in the partner rack of a rack pair (NVL36x2)
            server = _partner(server, node[server])
        out[n] = (device_name(site, server), stem, (d.get("ports") or 1) > 1)
    return out


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _models(design: Design) -> dict[str, tuple[str, object]]:
    """catalog name -> (manufacturer, entry) of every chassis, switch model and fabric attachment the
    design uses (an attachment has no vendor: its device type's manufacturer is "unspecified")."""
    spec = design.spec
    used = {d["model"] for _, d in design.fabric.graph.nodes(data=True) if "model" in d}
    attachments = {a.name: a for a in spec.fabric.attachments}
    out: dict[str, tuple[str, object]] = {}
    for name in sorted(used):
        if name in spec.catalog.switches:
            entry = spec.catalog.switches[name]
        elif name in attachments:
            entry = attachments[name]
        else:
            entry = spec.catalog.chassis[name]
        out[name] = (getattr(entry, "vendor", "") or "unspecified", entry)
    return out


def import_set(design: Design) -> list[Table]:
    """Every NetBox object of the design as bulk-import tables, in import order."""
    return [t if isinstance(t.rows, tuple) else replace(t, rows=tuple(t.rows)) for t in tables(design)]


def tables(design: Design) -> Iterator[Table]:
    """:func:`import_set` one table at a time, the interfaces' and the cables' rows as iterators: a
    writer renders them in chunks as they come (the gigawatt site's 1.4 GB of interfaces and ~3.4M cables never
    sit in memory as rows at once), and each table's rows are made only once the previous one is done."""
    spec, placement, fabric = design.spec, design.placement, design.fabric
    if placement is None or fabric is None or design.cabling is None:
        return
    site = spec.name
    g = fabric.graph
    tech = "infiniband" if fabric.technology == "infiniband" else "ethernet"
    tags = TAG
    yield (Table("01-tags", "extras.tag", "/extras/tags/import/", ("name", "slug", "color", "weight", "description"),
                    ((TAG, TAG, TAG_COLOR, "1000", "made by twin (twin netbox push changes only objects with this tag)"),), shared=True))
    yield (Table("02-sites", "dcim.site", "/dcim/sites/import/", ("name", "slug", "status", "description", "tags"),
                        ((site, site, STATUS, spec.site.description, tags),)))
    loc_rows = []
    racks_by_hall: dict[str, set[int]] = {}
    for r in placement.racks:
        racks_by_hall.setdefault(r.position.hall, set()).add(r.position.row)
    for hall in spec.site.halls:
        if hall.name in racks_by_hall:
            loc_rows.append((site, "", hall.name, hall.name, STATUS, f"data hall, {hall.rows} rows x {hall.positions_per_row} positions", tags))
    for hall in spec.site.halls:
        for row in sorted(racks_by_hall.get(hall.name, ())):
            name = row_location(hall.name, row)
            loc_rows.append((site, hall.name, name, name, STATUS, f"row {row} of hall {hall.name}", tags))
    yield (Table("03-locations", "dcim.location", "/dcim/locations/import/",
                        ("site", "parent", "name", "slug", "status", "description", "tags"), tuple(loc_rows)))
    height = spec.rack_type.height_u
    rack_rows = []
    for r in sorted(placement.racks, key=lambda r: r.position):
        p = r.position
        what = (f"GPU rack, zone {r.zone + 1}" if r.kind == "gpu"
                else f"network rack ({r.role}{'' if r.zone is None else f', zone {r.zone + 1}'})")
        rack_rows.append((site, row_location(p.hall, p.row), r.id, f"{p.hall}/R{p.row:02d}/S{p.slot:02d}", STATUS,
                          "4-post-cabinet", "19", str(height if r.kind == "gpu" else max(height, NETWORK_RACK_U)),
                          "front-to-rear", f"{what}; hall {p.hall}, row {p.row}, position {p.slot}", tags))
    yield (Table("04-racks", "dcim.rack", "/dcim/racks/import/",
                        ("site", "location", "name", "facility_id", "status", "form_factor", "width", "u_height",
                         "airflow", "description", "tags"), tuple(rack_rows)))
    models = _models(design)
    makers = sorted({m for m, _ in models.values()})
    yield (Table("05-manufacturers", "dcim.manufacturer", "/dcim/manufacturers/import/",
                        ("name", "slug", "tags"), tuple((m, slugify(m), tags) for m in makers), shared=True))
    type_rows = []
    for name, (maker, entry) in models.items():
        span = getattr(entry, "span", 1)  # a system over a rack pair is a device in each rack, half its mass each
        type_rows.append((maker, name, name, str(entry.height_u), "true", "front-to-rear", _fmt(entry.weight / span), "kg",
                          entry.description + (f" (one of its {span} racks)" if span > 1 else ""), tags))
    yield (Table("06-device-types", "dcim.devicetype", "/dcim/device-types/import/",
                        ("manufacturer", "model", "slug", "u_height", "is_full_depth", "airflow", "weight", "weight_unit",
                         "description", "tags"), tuple(type_rows), shared=True))
    roles = ["server"] + list(fabric.roles)
    yield (Table("07-device-roles", "dcim.devicerole", "/dcim/device-roles/import/",
                        ("name", "slug", "color", "description", "tags"),
                        tuple((ROLE_NAMES.get(r, r), slugify(ROLE_NAMES.get(r, r)), ROLE_COLORS.get(r, "9e9e9e"),
                               f"twin role {r}", tags) for r in roles), shared=True))
    racks = {r.id: r for r in placement.racks}
    node = dict(g.nodes(data=True))  # read once: networkx's node view costs a lookup per access
    ends = _cable_ends(site, node)
    dev_rows = []
    devices = [(n, d) for n, d in node.items() if d["role"] != "nic"]
    for n, d in devices:
        maker, _ = models[d["model"]]
        for dev, rack_id in ((n, d["rack"]), *(((_partner(n, d), d["pair"]),) if d.get("pair") else ())):
            rack = racks[rack_id]
            dev_rows.append((device_name(site, dev), ROLE_NAMES.get(d["role"], d["role"]), maker, d["model"], STATUS, site,
                             row_location(rack.position.hall, rack.position.row), rack.id, str(d["u"]), "front", dev, tags))
    yield (Table("08-devices", "dcim.device", "/dcim/devices/import/",
                        ("name", "role", "manufacturer", "device_type", "status", "site", "location", "rack",
                         "position", "face", "description", "tags"), tuple(dev_rows)))
    del dev_rows
    yield (Table("09-interfaces", "dcim.interface", "/dcim/interfaces/import/",
                        ("device", "name", "type", "speed", "enabled", "description", "tags"), _interfaces(design, devices, ends, tech)))
    yield (Table("10-cables", "dcim.cable", "/dcim/cables/import/",
                        ("side_a_site", "side_a_device", "side_a_type", "side_a_name",
                         "side_b_site", "side_b_device", "side_b_type", "side_b_name",
                         "type", "status", "label", "length", "length_unit", "description", "tags"), _cables(design, ends)))


def _interfaces(design: Design, devices: list[tuple[str, dict]], ends: dict[str, tuple], tech: str) -> Iterator[tuple[str, ...]]:
    """The interface rows, device by device: a server's NICs, an attachment's cabled ports, every port of a switch."""
    spec, fabric, site, tags = design.spec, design.fabric, design.spec.name, TAG
    linked_of = fabric.port_table({n for n, d in devices if d["role"] != "server"})  # switches' and attachments' ports
    model_ports: dict[str, list[tuple[str, str]]] = {}  # switch model -> (port, "; <its cage>" or "") in port order
    faster: dict[float, dict[str, float]] = {}  # a port speed -> {link id: speed} of the links faster than it
    # a peer's end as a port's description names it: "<device> " and the peer's port, or "<device> nicN" alone
    peer_text = {n: f"{dev} {'' if stem is None else f'{stem}/' if multi else stem}" for n, (dev, stem, multi) in ends.items()}
    with_port = {n: stem is None or multi for n, (_, stem, multi) in ends.items()}
    nic_if = (interface_type(tech, spec.nic_speed), kbps(spec.nic_speed))
    nic_rows: dict[str, list[tuple]] = {}  # chassis model -> its NICs' (GPU, name, type, kbit/s, description)
    for n, d in devices:
        dev = device_name(site, n)
        if d["role"] == "server":
            ch = spec.catalog.chassis[d["model"]]
            rows = nic_rows.get(d["model"])
            if rows is None:  # a chassis's NIC interfaces, the same text in every server of it: made once
                rows = nic_rows[d["model"]] = _nic_rows(ch, spec, tech, nic_if)
            half = device_name(site, _partner(n, d)) if d.get("pair") else dev
            cut = ch.nics // ch.span  # a rack pair: the second half's trays are the partner's
            yield from [(half if k > cut else dev, name, itype, speed, "true", text, tags) for k, name, itype, speed, text in rows]
            continue
        linked = linked_of.pop(n, {})
        if d["role"] == "endpoint":  # a fabric attachment: the ports it is cabled on
            a = next(x for x in spec.fabric.attachments if x.name == d["model"])
            for port, (lid, peer, peer_port) in linked.items():
                yield (dev, port, interface_type(tech, a.speed), kbps(a.speed), "true", f"{lid} to {device_name(site, peer)} {peer_port}", tags)
            continue
        model = spec.catalog.switches[d["model"]]
        ports = model_ports.get(d["model"])
        if ports is None:
            ports = model_ports[d["model"]] = [(p, "" if c is None else f"; {c}") for p in port_names(model) for c in (cage_text(model, p),)]
        over = faster.get(model.port_speed)
        if over is None:
            over = faster[model.port_speed] = {lk.id: lk.speed for lk in fabric.links if lk.speed > model.port_speed}
        wide = {port: over[lid] for port, (lid, *_) in linked.items() if lid in over} if over else None
        if wide:  # a tier in a wider mode (fabric.cages): its port is the cage's r logical ports, the others not interfaces
            ports = wide_ports(model, ports, wide)
        else:
            wide = {}
        itype, port_kbps = interface_type(tech, model.port_speed), kbps(model.port_speed)  # the model's, every port
        yield from [(dev, port, interface_type(tech, wide[port]) if port in wide else itype,
                     kbps(wide[port]) if port in wide else port_kbps, "true",
                     (f"{lk[0]} to {peer_text[lk[1]]}{lk[2] if with_port[lk[1]] else ''}" if (lk := linked.get(port)) else "unused") + cage,
                     tags) for port, cage in ports]


def _nic_rows(ch, spec, tech: str, nic_if: tuple[str, str]) -> list[tuple[int, str, str, str, str]]:
    """A server's NIC interfaces (GPU k, name, type, kbit/s, description); a multi-port NIC: one per port (per plane)."""
    if ch.nic_ports == 1:
        return [(k, f"nic{k}", *nic_if, f"backend NIC of GPU {k}") for k in range(1, ch.nics + 1)]
    speed = spec.nic_speed / ch.nic_ports
    itype, port_kbps, per_plane = interface_type(tech, speed), kbps(speed), max(1, ch.nic_ports // spec.fabric.planes)
    return [(k, f"nic{k}/port{j}", itype, port_kbps, f"backend NIC of GPU {k}, port {j} (plane {(j - 1) // per_plane + 1})")
            for k in range(1, ch.nics + 1) for j in range(1, ch.nic_ports + 1)]


def _cables(design: Design, ends: dict[str, tuple]) -> Iterator[tuple[str, ...]]:
    """The cable rows, in the cables' order."""
    spec, fabric, plan, site, tags = design.spec, design.fabric, design.cabling, design.spec.name, TAG
    media = spec.catalog.media
    kinds = []  # per medium of the plan: its name, NetBox cable type, whether it is a twin-port module
    for med_name in plan.media:
        med = media[med_name]
        kinds.append((med_name, CABLE_TYPES[med.kind if med.kind != "optic" else med.fiber], med.module_ports > 1))
    stock = plan.stock.tolist()
    lengths = {v: _fmt(v) for v in set(stock)}
    for lk, m, length in zip(fabric.cables(), plan.medium.tolist(), stock, strict=True):
        med_name, cable_type, module = kinds[m]
        a_dev, a_stem, a_multi = ends[lk.a]
        b_dev, b_stem, b_multi = ends[lk.b]
        a_if = lk.a_port if a_stem is None else f"{a_stem}/{lk.a_port}" if a_multi else a_stem
        b_if = lk.b_port if b_stem is None else f"{b_stem}/{lk.b_port}" if b_multi else b_stem
        yield (site, a_dev, "dcim.interface", a_if, site, b_dev, "dcim.interface", b_if,
               cable_type, STATUS, lk.id, lengths[length], "m",
               f"{med_name}, {lk.tier}" + (_module_note(spec, fabric, lk, med_name) if module else ""), tags)


def long_names(tables: list[Table]) -> list[str]:
    """Names over NetBox's 64-character limit (a long site name makes long device names)."""
    out = set()
    for t in tables:
        for col in ("name", "device"):  # read by column: no record dictionaries (~200K rows on a 24K-GPU site)
            if col in t.columns:
                i = t.columns.index(col)
                if max(map(len, map(itemgetter(i), t.rows)), default=0) <= NAME_MAX:  # the usual case, in one C loop
                    continue
                out.update(f"{t.model} {r[i]!r} has {len(r[i])} characters (NetBox allows {NAME_MAX})"
                           for r in t.rows if len(r[i]) > NAME_MAX)
    return sorted(out)


def _module_note(spec, fabric, lk, med_name: str) -> str:
    """For a link on a twin-port module: the module at the switch cage and the transceiver at the far end."""
    med = spec.catalog.media[med_name]
    if med.module_ports == 1:
        return ""
    ends = module_ends(spec, fabric, lk, med.module_ports)
    if len(ends) == 2:  # a module at both ends (a switch cage and a NIC's, or two switch cages)
        return f"; {med_name} modules in {ends[0][0]} and {ends[1][0]} (one per cage, both ends)"
    end = module_end(spec, fabric, lk, med.module_ports)
    where = f" in {end[0]} {end[1]}" if end else ""
    return f"; {med_name} module{where} (one per cage), {med.far_end} at the far end"

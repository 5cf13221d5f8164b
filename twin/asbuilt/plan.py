"""The plan a generated folder holds, read back and checked: every cable with both ends and labels,
where every device stands, and the names a device may use for its ports.

What is read (through :mod:`twin.folder`: each path kept inside the folder, each file against its
size and sha256 in ``manifest.json``, so an edited or planted file is refused rather than trusted):

- ``cabling/cables.csv`` (:mod:`twin.emit.cabling`): cable ids, ends, hall/row/rack/U, labels; every
  label is recomputed from its columns and must agree;
- ``model/fabric.json`` (:mod:`twin.emit.model_export`): each device's role, level and model, the
  server a NIC sits in, each link's speed; its links must be the CSV's cables;
- ``design.json``: the switch models used (the catalog), whose port names, SONiC aliases (``etp5``,
  what SONiC's lldpd sends as its port id) and port numbers (InfiniBand) resolve what devices report;
- on InfiniBand, ``model/topology.net`` and OpenSM's GUID files (:mod:`twin.asbuilt.plan_ib`).

A NIC is cabled as ``<server>-nicK/port1``; its host reports it as interface ``nicK`` of system
``<server>`` (the suffix of the NIC's name after its server's), which :attr:`Plan.host_iface` maps.
A NIC with ports on several planes (cabled ``port1``, ``port2``...) is one interface per port, ``nicKpJ``
(or ``nicK/portJ``, as the cabling plan and NetBox name it); :attr:`Plan.host_port` maps each to its end.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import NamedTuple

from twin.asbuilt.files import Folder, Problems, find_key, line_col
from twin.emit.model_export import FORMAT, LINK_FIELDS
from twin.folder import MANIFEST
from twin.version import __version__

End = tuple[str, str]  # (device, port)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$")  # device, port, rack and hall names as twin writes them
NAMES = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._:/@+-]*\n)*")  # many names, one per line: one call checks them all


def all_names(values: list[str]) -> bool:
    """Whether every value is a name (one regex call over all of them).

    >>> all_names(["L000001", "1/1"]), all_names(["ok", "not ok"])
    (True, False)
    """
    return NAMES.fullmatch("\n".join(values) + "\n" if values else "") is not None


def whole(v: str) -> bool:
    """A row, slot or U as twin writes it: ASCII digits, at most 6 (``isdigit`` alone takes '²', which
    ``int`` refuses, and thousands of digits, which it refuses too).

    >>> whole("47"), whole("²"), whole("9" * 5000)
    (True, False, False)
    """
    return v.isascii() and v.isdigit() and len(v) <= 6


class Device(NamedTuple):
    role: str
    level: int
    hall: str
    row: int
    rack: str
    u: int
    model: str | None


class Plan:
    """The cables of a build and how to name what devices report (see the module docstring)."""

    def __init__(self, root: Path, site: str) -> None:
        self.root, self.site = root, site
        self.technology = ""
        self.ids: list[str] = []
        self.tier: list[str] = []
        self.a: list[End] = []
        self.b: list[End] = []
        self.labels: list[tuple[str, str]] = []
        self.speed: list[float] = []
        self.at: dict[End, int] = {}  # end -> index of the cable planned there
        self.devices: dict[str, Device] = {}
        self.roles: dict[str, str] = {}  # every node of the model (servers included)
        self.host_iface: dict[tuple[str, str], str] = {}  # (server, interface) -> NIC device
        self.host_port: dict[tuple[str, str], End] = {}  # (server, interface) -> the NIC port it is (every port of a multi-port NIC)
        self.host_name: dict[End, tuple[str, str]] = {}  # NIC port -> (server, the interface name its host gives it)
        self.nics: dict[str, list[str]] = {}  # server -> its NICs
        self.hosts: dict[str, tuple[str, int]] = {}  # server -> (rack, U): to label what a server reports on no NIC
        self.port_names: dict[str, tuple[str, ...]] = {}  # switch model -> port names in port order
        self.port_alias: dict[str, dict[str, str]] = {}  # switch model -> {alias or name: name}
        self.rate: dict[End, tuple[int, str]] = {}  # InfiniBand: planned (width, speed) per end
        self._ports: dict[str, dict[str, str]] = {}  # device -> {name, alias or planned port: name} (built when first asked)
        self.floor: dict[str, tuple[str, int, int]] = {}  # rack -> (hall, row, position in the row) (placement/floor.csv)
        self.guid: dict[int, str] = {}  # InfiniBand node GUID -> device
        self.port_guid: dict[int, End] = {}  # InfiniBand port GUID (OpenSM's files) -> end

    # -------------------------------------------------------------- names
    def device(self, raw: str) -> str | None:
        """The plan's name for a reported system name: itself, or its first DNS label."""
        if raw in self.roles:
            return raw
        short = raw.split(".", 1)[0]
        return short if short in self.roles else None

    def port(self, dev: str, raw: str) -> str | None:
        """The plan's name of port ``raw`` of device ``dev`` (a name, a SONiC alias or a port number
        of its model; a NIC's one port), or None."""
        ports = self._ports.get(dev)
        if ports is None:
            d = self.devices.get(dev)
            if d is None:
                return None
            if d.role == "nic":
                return "port1"
            ports = self._ports[dev] = self.port_alias.get(d.model or "") or {p: p for (x, p) in self.at if x == dev}
        return ports.get(raw)

    def numbered(self, dev: str, number: int) -> str | None:
        """Port ``number`` (1-based, as InfiniBand numbers ports) of ``dev``."""
        d = self.devices.get(dev)
        if d is None:
            return None
        if d.role == "nic":
            return f"port{number}" if number == 1 or (dev, f"port{number}") in self.at else None
        if d.role == "endpoint":
            return f"port{number}"
        names = self.port_names.get(d.model or "", ())
        return names[number - 1] if 1 <= number <= len(names) else None

    def label(self, end: End) -> str:
        """``hall/Rrow/rack/Uu/device/port`` as the cabling plan prints it (a server's other interfaces
        too); a device the plan does not have is ``not-in-plan/device/port``."""
        dev, port = end
        d = self.devices.get(dev)
        if d is not None:
            return f"{d.hall}/R{d.row:02d}/{d.rack}/U{d.u:02d}/{dev}/{port}"
        rack, u = self.hosts.get(dev, ("", 0))
        if rack in self.floor:  # a server's interface that is no NIC of the plan
            hall, row, _slot = self.floor[rack]
            return f"{hall}/R{row:02d}/{rack}/U{u:02d}/{dev}/{port}"
        return f"not-in-plan/{dev}/{port}"

    def level(self, dev: str) -> int:
        d = self.devices.get(dev)
        return d.level if d is not None else 99

    def place(self, end: End) -> tuple:
        """Sort key of an end: where a technician walks to (hall, row, position in the row, rack,
        U, device, port); ends the plan does not place sort last."""
        d = self.devices.get(end[0])
        if d is None:
            return ("~", 1 << 30, 0, "", 0, end[0], end[1])
        return (d.hall, d.row, self.floor.get(d.rack, ("", 0, 0))[2], d.rack, d.u, end[0], end[1])


def load(root: Path) -> tuple[Plan | None, Problems]:
    """The plan of a generated folder, or None with every problem found."""
    problems = Problems()
    shown = str(root)
    if not root.is_dir():
        problems.error(shown, 1, 1, "not a folder", "a folder written by `twin build`")
        return None, problems
    reader = Folder(root, problems)
    if reader.manifest is None:
        return None, problems
    site = reader.manifest.doc.get("site")
    if not isinstance(site, str) or not NAME.match(site):
        problems.error(reader.shown(MANIFEST), 1, 1, "the manifest names no site", "a site name as `twin build` writes it")
        return None, problems
    plan = Plan(root, site)
    from twin.asbuilt.plan_cables import read_cables

    read_cables(plan, reader)
    _model(plan, reader, cables_read=not problems.errors)
    _catalog(plan, reader)
    _floor(plan, reader)
    _host_ports(plan)
    if plan.technology == "infiniband" and not problems.errors:
        from twin.asbuilt.plan_ib import load_ib

        load_ib(plan, reader)
    return (None if problems.errors else plan), problems


def _model(plan: Plan, reader: Folder, cables_read: bool) -> None:
    rel = "model/fabric.json"
    doc, text = reader.json(rel)
    if doc is None:
        return
    shown, problems = reader.shown(rel), reader.problems
    nf = doc.get("node_fields") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(nf, list) or doc.get("link_fields") != LINK_FIELDS:
        problems.error(shown, 1, 1, "not a twin fabric model", f'format "{FORMAT}" with node_fields and link_fields')
        return
    if doc.get("site") != plan.site:
        problems.error(shown, 1, 1, f"site {doc.get('site')!r} but manifest.json says {plan.site!r}", "one site per folder")
    plan.technology = doc.get("technology") if isinstance(doc.get("technology"), str) else ""
    want = ("id", "role", "level")
    if not all(f in nf for f in want):
        problems.error(shown, 1, 1, "node_fields lacks id, role or level", "the graph contract's node fields")
        return
    ix = {f: i for i, f in enumerate(nf)}
    nodes = doc.get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(x, list) and len(x) == len(nf) for x in nodes):
        problems.error(shown, *line_col(text, find_key(text, "nodes")), "nodes are not rows of node_fields", "one list per node")
        return
    none = [None] * len(nodes)
    cols = [[x[ix[f]] for x in nodes] if f in ix else none for f in ("id", "role", "level", "model", "server", "rack", "u")]
    if not all(type(x) is str for x in cols[0]) or not all_names(cols[0]):
        k = next(k for k, x in enumerate(cols[0]) if type(x) is not str or not NAME.match(x))
        problems.error(shown, *line_col(text, find_key(text, "nodes")), f"node {k}: {cols[0][k]!r} is not a name", "a device name", ("nodes", k))
        return
    devices, roles = plan.devices, plan.roles
    for k, (nid, role, level, model, server, rack, u) in enumerate(zip(*cols)):
        if not (type(nid) is str and type(role) is str and type(level) is int and (model is None or type(model) is str)
                and (server is None or type(server) is str)):
            problems.error(shown, *line_col(text, find_key(text, "nodes")), f"node {k} is not [id, role, level, ...] as node_fields say",
                           "strings and an integer level", ("nodes", k))
            return
        roles[nid] = role
        d = devices.get(nid)
        if d is not None:
            devices[nid] = Device(role, level, d.hall, d.row, d.rack, d.u, model)
        if role == "server" and type(rack) is str and type(u) is int:
            plan.hosts[nid] = (rack, u)
        if server is not None and role == "nic":
            plan.nics.setdefault(server, []).append(nid)
            iface = nid[len(server) + 1:] if nid.startswith(server + "-") else nid
            plan.host_iface[(server, iface)] = nid
    if not cables_read:  # the cable schedule's own errors are reported; comparing with it would repeat them
        return
    links = {}
    for lk in doc.get("links") or []:
        if isinstance(lk, list) and len(lk) == len(LINK_FIELDS) and lk[1] == "link":
            links[lk[0]] = lk
    for i, cid in enumerate(plan.ids):
        lk = links.get(cid)
        if lk is None or (lk[3], lk[4]) != plan.a[i] or (lk[5], lk[6]) != plan.b[i] or not isinstance(lk[7], (int, float)):
            problems.error(shown, *line_col(text, text.find(json.dumps(cid))), f"{cid}: cabling/cables.csv and model/fabric.json disagree on this cable",
                           f"{plan.a[i][0]} {plan.a[i][1]} to {plan.b[i][0]} {plan.b[i][1]} in both")
            return
        plan.speed.append(float(lk[7]))
    if len(links) != len(plan.ids):
        problems.error(shown, 1, 1, f"{len(links)} links but cabling/cables.csv has {len(plan.ids)} cables", "the same cables in both")
    for dev, d in plan.devices.items():
        if d.level < 0:
            problems.error(shown, 1, 1, f"device {dev} of cabling/cables.csv is not a node of the model", "every cable end a node")
            return


def _host_ports(plan: Plan) -> None:
    """The interface a host gives each port of its NICs: ``nicK`` for a NIC cabled on one port, ``nicKpJ``
    (and ``nicK/portJ``) for port J of a NIC cabled on several (one port per plane)."""
    cabled: dict[str, list[str]] = {}
    for dev, port in plan.at:
        if plan.roles.get(dev) == "nic":
            cabled.setdefault(dev, []).append(port)
    for (server, iface), nic in plan.host_iface.items():
        ports = sorted(cabled.get(nic, ["port1"]), key=lambda p: (len(p), p))
        if len(ports) == 1:
            plan.host_port[(server, iface)] = (nic, ports[0])
            plan.host_name[(nic, ports[0])] = (server, iface)
            continue
        for port in ports:
            short = f"{iface}p{port.removeprefix('port')}"
            plan.host_port[(server, short)] = plan.host_port[(server, f"{iface}/{port}")] = (nic, port)
            plan.host_name[(nic, port)] = (server, short)


def _catalog(plan: Plan, reader: Folder) -> None:
    """Port names, aliases and numbers of every switch model the plan uses (from design.json)."""
    from pydantic import ValidationError

    from twin.compiler.config.sonic import platform_ports
    from twin.compiler.fabric.ports import port_names
    from twin.lang.site.catalog_models import SwitchModel

    doc, text = reader.json("design.json")
    if doc is None:
        return
    shown, problems = reader.shown("design.json"), reader.problems
    site = doc.get("site") if isinstance(doc, dict) else None
    switches = (site.get("catalog") or {}).get("switches") if isinstance(site, dict) else None
    if not isinstance(switches, dict) or site.get("name") != plan.site:
        problems.error(shown, 1, 1, "not the design of this site", f"site.name {plan.site!r} and site.catalog.switches")
        return
    used = {d.model for d in plan.devices.values() if d.role not in ("nic", "endpoint")}
    for name in sorted(m for m in used if m):
        raw = switches.get(name)
        try:
            model = SwitchModel.model_validate(raw)
            names = port_names(model)
        except (ValidationError, ValueError, TypeError) as e:
            err = e.errors()[0] if isinstance(e, ValidationError) else {"loc": (), "msg": str(e)}
            first = ": ".join(x for x in (".".join(str(x) for x in err["loc"]), err["msg"]) if x)  # "loc: msg", or msg
            problems.error(shown, *line_col(text, find_key(text, name)), f"switch model {name}: {first}",
                           f"a switch model of this twin's catalog (build the folder again with twin {__version__})", ("site", "catalog", "switches", name))
            continue
        plan.port_names[name] = names
        alias = {n: n for n in names}
        if model.port_map is not None:
            alias.update((row["alias"], n) for n, row in platform_ports(model))
        plan.port_alias[name] = alias
    for (dev, port), _ in plan.at.items():
        d = plan.devices[dev]
        if d.model in plan.port_alias and port not in plan.port_alias[d.model]:
            problems.error(reader.shown("cabling/cables.csv"), 1, 1, f"{dev} {port} is not a port of its model {d.model}", "a port name of the model")
            return


def _floor(plan: Plan, reader: Folder) -> None:
    """Each rack's place on the floor (``placement/floor.csv``): the work order walks a row in order and
    the page draws the floor plan."""
    rel = "placement/floor.csv"
    text = reader.text(rel)
    if text is None:
        return
    rows = csv.reader(io.StringIO(text))
    if next(rows, [])[:4] != ["hall", "row", "slot", "rack"]:
        reader.problems.error(reader.shown(rel), 1, 1, "not twin's floor plan header", "hall,row,slot,rack,...")
        return
    for n, row in enumerate(rows, start=2):
        if len(row) < 4 or not (whole(row[1]) and whole(row[2])) or not NAME.match(row[0]) or not NAME.match(row[3]):
            reader.problems.error(reader.shown(rel), n, 1, "not a rack position", "hall,row,slot,rack with whole row and slot numbers")
            return
        plan.floor[row[3]] = (row[0], int(row[1]), int(row[2]))

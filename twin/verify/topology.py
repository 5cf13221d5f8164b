"""``configs/frr/topology.json`` read as untrusted input: the lab ``twin verify`` builds from it.

``twin verify`` runs as root and turns these names into namespaces, interface names, ``ip`` commands
and folders, so every value is checked against what its target allows before anything starts: a switch
name is a hostname label (it names a folder of the work folder: ``../x`` or ``/etc`` can never be one),
an interface a Linux interface name, an address an IP address or prefix, a number an integer in its
range, a config a file name in ``configs/frr`` read through :mod:`twin.folder` (inside the folder, no
symlink out, size-capped, UTF-8). The first problem is one :class:`TopologyError` line naming the file
and the JSON path, e.g. ``.../topology.json: switches[3].name: '../x' is not a hostname (...)``.

>>> hostname("z1-ctsw-01"), hostname("../x"), hostname("a" * 64), ifname("Ethernet128"), ifname("eth 0")
(True, False, False, True, False)
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

from twin.folder import FolderError, expect, printable, read_bytes, read_json

TOPOLOGY = "configs/frr/topology.json"
CONFIG_LIMIT = 4 * 2**20  # bytes per FRR config; an ATSW of a 24K-GPU site has ~60 KB
HOSTNAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
IFNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}")  # Linux: at most 15 bytes, no '/', ':' or space
CONFIG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,250}\.conf")
LINK_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
WORD = re.compile(r"[a-z0-9_-]{1,32}")


class TopologyError(FolderError):
    """topology.json (or a config it names) cannot be used as it is; one located line."""


def hostname(name) -> bool:
    return isinstance(name, str) and HOSTNAME.fullmatch(name) is not None


def ifname(name) -> bool:
    return isinstance(name, str) and IFNAME.fullmatch(name) is not None


@dataclass
class Topology:
    switches: dict[str, dict]
    links: list[dict]
    hosts: list[dict]
    unnumbered: bool
    bfd: bool
    site: str
    sessions_per_link: int = 1  # 2 with numbered IPv6: a separate IPv6 session per link
    folder: Path | None = None

    @classmethod
    def load(cls, folder: Path) -> "Topology":
        """The folder's topology.json, every value checked (FolderError, one located line)."""
        return parse(read_json(folder, TOPOLOGY), str(folder / TOPOLOGY), folder)

    def slice_zone(self, zone: int) -> "Topology":
        """Zone ``zone`` (1-based) with every top-tier switch: the links leaving to other zones go."""
        keep = {n for n, s in self.switches.items() if s["zone"] == zone - 1 or s["level"] >= 3}
        if not any(s["zone"] == zone - 1 for s in self.switches.values()):
            raise ValueError(f"no zone {zone} in {self.site} (zones are numbered from 1)")
        return Topology(
            {n: s for n, s in self.switches.items() if n in keep},
            [lk for lk in self.links if lk["a"] in keep and lk["b"] in keep],
            [h for h in self.hosts if h["switch"] in keep],
            self.unnumbered, self.bfd, self.site, self.sessions_per_link, self.folder,
        )

    def slice_buildings(self, buildings: list[int], racks: int = 4, ctsws: int = 2) -> "Topology":
        """A campus slice: in each building of ``buildings`` (1-based) the first AI zone's first ``racks``
        racks and first ``ctsws`` CTSWs (planes), the ATSWs those CTSWs reach and the campus spines those
        ATSWs reach; so routes cross every tier and the campus between the buildings while the slice stays
        small enough for one machine (the prediction is made on the slice, as FRR runs it). The racks are
        those whose rack switches link to the kept CTSWs: on a multi-plane campus the first CTSWs by name are
        the first plane's, so the slice is that plane (the others are copies of it)."""
        have = sorted({s["building"] + 1 for s in self.switches.values() if s.get("building") is not None})
        if not have:
            raise ValueError(f"{self.site} is not a campus (no buildings); use --slice zone:N")
        bad = [b for b in buildings if b not in have]
        if bad or len(set(buildings)) < 2:
            raise ValueError(f"--slice building: needs two or more of the buildings 1-{have[-1]} (got {', '.join(map(str, buildings))})")
        keep: set[str] = set()
        for b in buildings:
            mine = {n: s for n, s in self.switches.items() if s.get("building") == b - 1}
            zone = min(s["zone"] for s in mine.values() if s["zone"] is not None)
            kept = set(sorted(n for n, s in mine.items() if s["level"] == 2 and s["zone"] == zone)[:ctsws])
            linked = {y for lk in self.links for x, y in ((lk["a"], lk["b"]), (lk["b"], lk["a"])) if x in kept}
            keep |= kept | set(sorted(n for n, s in mine.items() if s["level"] == 1 and s["zone"] == zone and n in linked)[:racks])
        levels = {n: sw["level"] for n, sw in self.switches.items()}
        for level in (3, 4):  # the ATSWs the kept CTSWs reach, then the campus spines those ATSWs reach
            keep |= {y for lk in self.links for x, y in ((lk["a"], lk["b"]), (lk["b"], lk["a"]))
                     if x in keep and levels[x] == level - 1 and levels[y] == level}
        return Topology(
            {n: s for n, s in self.switches.items() if n in keep},
            [lk for lk in self.links if lk["a"] in keep and lk["b"] in keep],
            [h for h in self.hosts if h["switch"] in keep],
            self.unnumbered, self.bfd, self.site, self.sessions_per_link, self.folder,
        )

    def without(self, link_id: str) -> "Topology":
        return Topology(self.switches, [lk for lk in self.links if lk["id"] != link_id], self.hosts, self.unnumbered, self.bfd, self.site, self.sessions_per_link, self.folder)

    def config(self, name: str) -> str:
        """The FRR config of switch ``name`` (a file of configs/frr, read as untrusted)."""
        folder = self.folder
        if folder is None:
            raise TopologyError(f"{self.site}: no folder to read {name}'s config from")
        rel = self.switches[name]["config"]
        try:
            data = read_bytes(folder / "configs" / "frr", rel, CONFIG_LIMIT, "config")
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise TopologyError(f"{folder / 'configs' / 'frr' / rel}: not UTF-8 (byte {e.start})") from None
        except FolderError as e:
            raise TopologyError(str(e)) from None
        if "\x00" in text:
            raise TopologyError(f"{folder / 'configs' / 'frr' / rel}: holds a NUL byte (not an FRR config)")
        return text


def _fail(where: str, value, expected: str):
    raise TopologyError(f"{where}: {printable(repr(value), 80)} {expected}")


def _int(v, where: str, lo: int, hi: int) -> int:
    expect(v, int, where, f"an integer from {lo} to {hi}")
    if not lo <= v <= hi:
        _fail(where, v, f"is out of range (expected {lo} to {hi})")
    return v


def _net(v, where: str, kind: str, version: int | None = None, optional: bool = False):
    """An address (``ip``), an address with its prefix length (``iface``) or a network (``net``)."""
    if v is None and optional:
        return None
    expect(v, str, where, f"an IP {kind}")
    try:
        x = {"ip": ipaddress.ip_address, "iface": ipaddress.ip_interface, "net": ipaddress.ip_network}[kind](v)
    except ValueError:
        _fail(where, v, f"is not an IP {'address' if kind == 'ip' else 'prefix'} (expected e.g. {'10.0.0.1' if kind == 'ip' else '10.0.0.0/27'})")
    if version is not None and x.version != version:
        _fail(where, v, f"is not IPv{version}")
    if kind != "ip" and "/" not in v:
        _fail(where, v, "has no prefix length (expected ADDRESS/LENGTH)")
    return v


def parse(js, where: str, folder: Path | None = None) -> Topology:
    """A Topology from the parsed topology.json, every value checked against what it becomes."""
    expect(js, dict, where, "a JSON object (twin's topology.json)")
    site = js.get("site")
    if not hostname(site):
        _fail(f"{where}: site", site, "is not a site name (expected letters, digits and '-')")
    flags = {k: expect(js.get(k), bool, f"{where}: {k}", "true or false") for k in ("unnumbered", "bfd")}
    ipv6 = expect(js.get("ipv6", False), bool, f"{where}: ipv6", "true or false")
    switches: dict[str, dict] = {}
    for i, s in enumerate(expect(js.get("switches"), list, f"{where}: switches", "a list")):
        at = f"{where}: switches[{i}]"
        expect(s, dict, at, "an object")
        name = s.get("name")
        if not hostname(name):
            _fail(f"{at}.name", name, "is not a hostname (expected letters, digits and '-', at most 63, not starting or ending with '-')")
        if name in switches:
            _fail(f"{at}.name", name, "names a second switch")
        if not isinstance(s.get("role"), str) or not WORD.fullmatch(s["role"]):
            _fail(f"{at}.role", s.get("role"), "is not a role (expected e.g. rtsw, ctsw, atsw)")
        _int(s.get("level"), f"{at}.level", 1, 8)
        if s.get("zone") is not None:
            _int(s["zone"], f"{at}.zone", 0, 1_000_000)
        if s.get("building") is not None:
            _int(s["building"], f"{at}.building", 0, 1_000_000)
        _int(s.get("asn"), f"{at}.asn", 1, 2**32 - 1)
        _int(s.get("maximum_paths"), f"{at}.maximum_paths", 1, 1024)
        for key, version in (("originate", None), ("originate6", 6)):
            for j, p in enumerate(expect(s.get(key, []), list, f"{at}.{key}", "a list of prefixes")):
                _net(p, f"{at}.{key}[{j}]", "net", version)
        _net(s.get("loopback"), f"{at}.loopback", "iface")
        cfg = s.get("config")
        if not isinstance(cfg, str) or not CONFIG.fullmatch(cfg) or ".." in cfg:
            _fail(f"{at}.config", cfg, "is not a config file name in configs/frr (expected e.g. z1-ctsw-01.conf)")
        switches[name] = s
    ifaces: set[tuple[str, str]] = set()

    def port(sw, ifn, at: str) -> None:
        if not isinstance(sw, str) or sw not in switches:
            _fail(at, sw, "is not a switch of this topology")
        if not ifname(ifn):
            _fail(f"{at} interface", ifn, "is not a Linux interface name (expected letters, digits, '_', '.', '-', at most 15)")
        if (sw, ifn) in ifaces:
            _fail(f"{at} interface", ifn, f"is used twice on {sw}")
        ifaces.add((sw, ifn))

    links = expect(js.get("links"), list, f"{where}: links", "a list")
    for i, lk in enumerate(links):
        at = f"{where}: links[{i}]"
        expect(lk, dict, at, "an object")
        if not isinstance(lk.get("id"), str) or not LINK_ID.fullmatch(lk["id"]):
            _fail(f"{at}.id", lk.get("id"), "is not a link id (expected e.g. L000017)")
        port(lk.get("a"), lk.get("a_if"), f"{at}.a")
        port(lk.get("b"), lk.get("b_if"), f"{at}.b")
    hosts = expect(js.get("hosts"), list, f"{where}: hosts", "a list")
    for i, h in enumerate(hosts):
        at = f"{where}: hosts[{i}]"
        expect(h, dict, at, "an object")
        port(h.get("switch"), h.get("ifname"), f"{at}.switch")
        _net(h.get("subnet"), f"{at}.subnet", "net", 4)
        _net(h.get("gateway"), f"{at}.gateway", "ip", 4)
        _net(h.get("host_ip"), f"{at}.host_ip", "iface", 4)
        _net(h.get("subnet6"), f"{at}.subnet6", "net", 6, optional=True)
        _net(h.get("gateway6"), f"{at}.gateway6", "ip", 6, optional=True)
        _net(h.get("host_ip6"), f"{at}.host_ip6", "iface", 6, optional=True)
    per_link = 2 if ipv6 and not flags["unnumbered"] else 1
    return Topology(switches, links, hosts, flags["unnumbered"], flags["bfd"], site, per_link, folder)

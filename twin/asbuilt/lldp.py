"""LLDP neighbour tables as devices print them, read into raw entries: (local interface, the
neighbour's system name, the names its port may go by, line).

Two formats, told apart by their content:

- **lldpd** (``lldpcli show neighbors -f json``; SONiC, Cumulus and Linux hosts run lldpd): the
  document is ``{"lldp": {"interface": ...}}`` where ``interface`` is an *object* ``{ifname: entry}``
  when the device has one neighbour and a *list* of such one-key objects when it has several (the
  same interface appears twice when two neighbours answer on it); no neighbour at all is
  ``{"lldp": {}}``. An entry's ``chassis`` is ``{system name: {...}}`` (or the bare ``{"id": ...}``
  when the neighbour sends no name) and its ``port`` has ``id`` (``type``, ``value``) and ``descr``.
  A Linux host sends its port id as a MAC address (``type`` ``mac``) with the interface name only in
  ``descr``; SONiC sends its port alias (``etp5``, ``type`` ``local``) with the port's description.
  The output does not name the device it was taken on: that comes from the file (see
  :mod:`twin.asbuilt.collect`) or from a ``local-chassis`` section (``lldpcli show chassis``) in the
  same document.
- **Arista EOS** (``show lldp neighbors detail | json``): ``{"lldpNeighbors": {port: {"lldpNeighborInfo":
  [neighbour, ...]}}}``, each neighbour with ``systemName`` and ``neighborInterfaceInfo``
  (``interfaceIdType``, ``interfaceId`` in quotes, ``interfaceId_v2``, ``interfaceDescription``); a
  ``macAddress`` id type means the port's name is in its description. The summary form (``show lldp
  neighbors | json``: a list of ``port``, ``neighborDevice``, ``neighborPort``) and an eAPI reply
  (``{"jsonrpc": ..., "result": [...]}``, which may carry ``show hostname``) are read too.
"""

from __future__ import annotations

from typing import NamedTuple

from twin.asbuilt.files import Lines, find_key


class Raw(NamedTuple):
    local: str
    remote: str  # the neighbour's system name ("" when it sends none)
    ports: tuple[str, ...]  # names the neighbour's port may go by, most specific first
    line: int


class Malformed(ValueError):
    """A document of a known format with a part that is not what the format says (``offset`` into
    the text, ``expected`` what should be there)."""

    def __init__(self, message: str, offset: int, expected: str) -> None:
        super().__init__(message)
        self.offset, self.expected = offset, expected


def kind(doc: object) -> str | None:
    """The format of one device's document: ``lldpd``, ``eos``, ``eapi``, or None.

    >>> kind({"lldp": {}}), kind({"lldpNeighbors": {}}), kind({"jsonrpc": "2.0", "result": []}), kind([])
    ('lldpd', 'eos', 'eapi', None)
    """
    if not isinstance(doc, dict):
        return None
    if "lldp" in doc:
        return "lldpd"
    if "lldpNeighbors" in doc:
        return "eos"
    if "jsonrpc" in doc and isinstance(doc.get("result"), list):
        return "eapi"
    return None


def local_name(doc: dict, fmt: str) -> str | None:
    """The device's own name when the document carries it (lldpd's ``local-chassis``, EOS's
    ``hostname`` from ``show hostname`` in the same eAPI reply)."""
    if fmt == "lldpd":
        ch = (doc.get("local-chassis") or {}).get("chassis") if isinstance(doc.get("local-chassis"), dict) else None
        if isinstance(ch, dict) and len(ch) == 1:
            name = next(iter(ch))
            return name if name != "id" else None
        return None
    parts = doc.get("result") if fmt == "eapi" else [doc]
    for p in parts or []:
        if isinstance(p, dict) and isinstance(p.get("hostname"), str):
            return p["hostname"]
    return None


def entries(doc: dict, fmt: str, lines: Lines, start: int = 0) -> list[Raw]:
    """The neighbour entries of one device's document; ``lines`` holds the text of the file it came
    from and ``start`` is where the document begins in it (entries get their lines from a forward
    search for their keys)."""
    if fmt == "lldpd":
        return _lldpd(doc, lines, start)
    if fmt == "eapi":
        out: list[Raw] = []
        for part in doc["result"]:
            if isinstance(part, dict) and "lldpNeighbors" in part:
                out += _eos(part, lines, start)
        return out
    return _eos(doc, lines, start)


def _lldpd(doc: dict, lines: Lines, start: int) -> list[Raw]:
    text = lines.text
    lldp = doc["lldp"]
    at = find_key(text, "lldp", start, lines.end)
    if isinstance(lldp, list):  # json0-like wrapping of the one object
        lldp = lldp[0] if len(lldp) == 1 and isinstance(lldp[0], dict) else None
    if not isinstance(lldp, dict):
        raise Malformed("lldp is not an object", at, '{"interface": ...}')
    ifs = lldp.get("interface")
    if ifs is None:
        return []
    pairs: list[tuple[str, object]] = []
    if isinstance(ifs, dict):  # one neighbour: {ifname: entry}
        pairs = list(ifs.items())
    elif isinstance(ifs, list):  # several: [{ifname: entry}, ...]
        for item in ifs:
            if not isinstance(item, dict) or len(item) != 1:
                raise Malformed("an interface list item is not {ifname: entry}", find_key(text, "interface", at, lines.end), "one interface per item")
            pairs += item.items()
    else:
        raise Malformed("interface is neither an object nor a list", find_key(text, "interface", at, lines.end), "an object (one neighbour) or a list")
    out = []
    pos = find_key(text, "interface", at, lines.end)
    for ifname, entry in pairs:
        pos = find_key(text, ifname, pos + 1, lines.end)
        if not isinstance(entry, dict):
            raise Malformed(f"interface {ifname} is not an object", pos, "via, chassis, port")
        name, ports = _lldpd_neighbour(entry, pos)
        out.append(Raw(ifname, name, ports, lines.at(pos)))
    return out


def _lldpd_neighbour(entry: dict, pos: int) -> tuple[str, tuple[str, ...]]:
    chassis = entry.get("chassis")
    port = entry.get("port")
    if not isinstance(chassis, dict) or not isinstance(port, dict):
        raise Malformed("a neighbour without chassis or port", pos, "chassis and port objects")
    if "id" in chassis and isinstance(chassis["id"], dict) and "type" in chassis["id"]:
        cid = chassis["id"].get("value", "?")
        name = f"unnamed-neighbour-{cid}"  # the neighbour sends no system name
    elif len(chassis) == 1:
        name = next(iter(chassis))
    else:
        raise Malformed("chassis names more than one system", pos, "{system name: {...}}")
    pid = port.get("id") if isinstance(port.get("id"), dict) else {}
    value, typ, descr = pid.get("value"), pid.get("type"), port.get("descr")
    names = [v for v in (value, descr) if isinstance(v, str) and v]
    if typ == "mac":  # a Linux host: the interface name is only in the description
        names.reverse()
    return name, tuple(names)


def _eos(doc: dict, lines: Lines, start: int) -> list[Raw]:
    text = lines.text
    table = doc["lldpNeighbors"]
    at = find_key(text, "lldpNeighbors", start, lines.end)
    out = []
    if isinstance(table, list):  # show lldp neighbors | json (the summary)
        pos = at
        for item in table:
            if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("port", "neighborDevice", "neighborPort")):
                raise Malformed("a neighbour without port, neighborDevice and neighborPort", pos, "the summary's fields")
            pos = find_key(text, "port", pos + 1, lines.end)
            out.append(Raw(item["port"], item["neighborDevice"], (item["neighborPort"],), lines.at(pos)))
        return out
    if not isinstance(table, dict):
        raise Malformed("lldpNeighbors is neither an object nor a list", at, "{port: {lldpNeighborInfo: [...]}}")
    pos = at
    for port, info in table.items():
        pos = find_key(text, port, pos + 1, lines.end)
        nbrs = info.get("lldpNeighborInfo") if isinstance(info, dict) else None
        if not isinstance(nbrs, list):
            raise Malformed(f"port {port} has no lldpNeighborInfo list", pos, "lldpNeighborInfo: [neighbour, ...]")
        for n in nbrs:
            iface = n.get("neighborInterfaceInfo") if isinstance(n, dict) else None
            if not isinstance(iface, dict):
                raise Malformed(f"a neighbour of {port} without neighborInterfaceInfo", pos, "systemName and neighborInterfaceInfo")
            name = n.get("systemName") if isinstance(n.get("systemName"), str) else f"unnamed-neighbour-{n.get('chassisId', '?')}"
            v2, v1, descr = iface.get("interfaceId_v2"), iface.get("interfaceId"), iface.get("interfaceDescription")
            names = [v for v in (v2, v1.strip('"') if isinstance(v1, str) else None, descr) if isinstance(v, str) and v]
            if iface.get("interfaceIdType") == "macAddress":  # a host: its interface name is in the description
                names = [descr] if isinstance(descr, str) and descr else names
            out.append(Raw(port, name, tuple(dict.fromkeys(names)), lines.at(pos)))
    return out

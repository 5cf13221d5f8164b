"""Every SONiC ``config_db.json`` of a build, byte for byte ``config_db_json(config_db(...))`` of
:mod:`twin.compiler.config.sonic`, written without encoding what switches share once per switch.

A document is its tables in name order, each written at the top level the same way whatever else the
document holds (:func:`fragments`). So :class:`Writer` encodes once per build what switches share: the
site's QoS maps, a model's breakouts, the per-port QoS tables of a set of used ports, the buffer tables of
those ports cabled at the same speeds, cable lengths and headroom, and the PORT and DEVICE_NEIGHBOR text
of a model with those ports up at those speeds, with slots where a switch names its peers. A slot is cut
from the row written with a marker string in the peer's place (:class:`Row`); the peer's name goes in
encoded as the standard library encodes a string. The tables of the switch's own addresses, BGP peers
and metadata are encoded per switch.
``tests/test_config_sonic_write.py`` holds the writer to the dictionaries' bytes.
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii as json_str

from twin.compiler.config import sonic
from twin.compiler.config.intent import Neighbor, ServerPort, SwitchIntent
from twin.jsonfmt import dumps as json_dumps
from twin.lang.site.catalog_models import SwitchModel

_MARK = "twin-slot-{}-5c1d"  # plain ASCII: encoded as is, and never a port's or peer's name


def fragments(tables: dict) -> dict[str, bytes]:
    """Each table of a document as :func:`sonic.config_db_json` writes it inside the whole
    (`` "NAME": {...}``, indented one level), from one encoding of them all: at the top level, and only
    there, a line starts with one space and a quote (deeper lines with two spaces or more; JSON strings
    hold no newline)."""
    if not tables:
        return {}
    pieces = json_dumps(tables)[2:-3].split(b',\n "')
    return {name: piece if i == 0 else b' "' + piece for i, (name, piece) in enumerate(zip(sorted(tables), pieces, strict=True))}


def _rows(table: str, body: bytes) -> bytes:
    """The rows of a fragment of ``table``, without its name and braces."""
    head = f' "{table}": {{\n'.encode()
    assert body.startswith(head) and body.endswith(b"\n }"), body[:80]
    return body[len(head):-3]


class Row:
    """One row of a table, written as it sits in the document (text), cut at its slots for strings named
    per switch: ``Row("PORT", "Ethernet0", {..., "description": Row.slot(0)}).parts``."""

    @staticmethod
    def slot(i: int) -> str:
        return _MARK.format(i)

    def __init__(self, table: str, key: str, row: dict):
        text = _rows(table, fragments({table: {key: row}})[table]).decode()
        slots = [i for i in range(len(row)) if self.slot(i) in row.values()]
        marks = sorted((text.index(f'"{self.slot(i)}"'), i) for i in slots)
        assert [i for _, i in marks] == list(range(len(slots))), "slots appear in the row in their order"
        self.parts: list[str] = []
        start = 0
        for at, i in marks:
            self.parts.append(text[start:at])
            start = at + len(self.slot(i)) + 2
        self.parts.append(text[start:])



class _Text:
    """A table's text with slots between its chunks: ``chunks[0] + v0 + chunks[1] + ... + chunks[-1]``."""

    def __init__(self, head: str):
        self.chunks = [head]

    def add(self, text: str) -> None:
        self.chunks[-1] += text

    def add_row(self, row: Row) -> None:
        self.chunks[-1] += row.parts[0]
        self.chunks.extend(row.parts[1:])

    def fill(self, values: list[str]) -> bytes:
        """The text with ``values`` (encoded JSON strings) in its slots."""
        out: list[str] = [""] * (2 * len(values) + 1)
        out[0::2] = self.chunks
        out[1::2] = values
        return "".join(out).encode()


class _ModelRows:
    """A model's rows of PORT and DEVICE_NEIGHBOR in one build: a down port's row, an up port's per
    speed with its description's slot, a neighbour's with slots for the peer and its port."""

    def __init__(self, model: SwitchModel, site: dict):
        self.model, self.site = model, site
        ports = sonic.platform_ports(model)
        self.names = [name for name, _ in ports]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.down = [_rows("PORT", fragments({"PORT": {name: self._row(i)}})["PORT"]).decode() for i, (name, _) in enumerate(ports)]
        self.order = sorted(range(len(ports)), key=lambda i: ports[i][0])  # platform order to key order
        self._up: dict[tuple[int, float], Row] = {}
        self._neighbor: dict[int, Row] = {}

    def _row(self, i: int) -> dict:
        return dict(sonic.platform_ports(self.model)[i][1], admin_status="down", fec=self.model.port_map.fec, mtu=str(self.site["mtu"]))

    def up(self, i: int, speed: float) -> Row:
        row = self._up.get((i, speed))
        if row is None:
            name = sonic.platform_ports(self.model)[i][0]
            fields = dict(self._row(i), admin_status="up", speed=sonic.mbps(speed), description=Row.slot(0))
            fields["lanes"] = sonic.lanes_at(self.model, name, speed) or fields["lanes"]  # a wider port (fabric.cages)
            fields["alias"] = sonic.alias_at(self.model, name, speed) or fields["alias"]
            row = self._up[i, speed] = Row("PORT", name, fields)
        return row

    def neighbor(self, i: int) -> Row:
        row = self._neighbor.get(i)
        if row is None:
            name = sonic.platform_ports(self.model)[i][0]
            row = self._neighbor[i] = Row("DEVICE_NEIGHBOR", name, {"name": Row.slot(0), "port": Row.slot(1)})
        return row


class Writer:
    """Every SONiC switch's ``config_db.json`` of one build (``site``: the intent's site context)."""

    def __init__(self, site: dict):
        self.site = site
        self.shared = sonic.shared_tables(site)
        self._cache: dict[tuple, object] = {("shared",): fragments(self.shared)}

    def _once(self, key: tuple, build):
        out = self._cache.get(key)
        if out is None:
            out = self._cache[key] = build()
        return out

    def _port_text(self, m: _ModelRows, links: dict[str, Neighbor | ServerPort]) -> tuple[_Text, _Text, list[str]]:
        """PORT and DEVICE_NEIGHBOR of a port pattern, as :func:`sonic.port_tables` builds them, with
        slots for what names a peer: each used port's description, its peer and the peer's port (the
        used ports in key order)."""
        port, used = _Text(' "PORT": {\n'), []
        gone = sonic.taken(m.model, links)  # the ports a wider used port takes (fabric.cages)
        first = True
        for i in m.order:
            name = m.names[i]
            if name in gone:
                continue
            if not first:
                port.add(",\n")
            first = False
            lk = links.get(name)
            if lk is None:
                port.add(m.down[i])
            else:
                port.add_row(m.up(i, lk.speed))
                used.append(name)
        port.add("\n }" if m.order else "}")
        neighbor = _Text(' "DEVICE_NEIGHBOR": {' + ("\n" if used else ""))
        for k, name in enumerate(used):
            if k:
                neighbor.add(",\n")
            neighbor.add_row(m.neighbor(m.index[name]))
        neighbor.add("\n }" if used else "}")
        return port, neighbor, used

    def config_db_json(self, sw: SwitchIntent, model: SwitchModel) -> bytes:
        site = self.site
        links = sonic.used_ports(sw, model)
        m = self._once(("model", model), lambda: _ModelRows(model, site))
        parts = fragments(sonic.routing_tables(sw, site) | {"DEVICE_METADATA": sonic.metadata_table(sw, model, site)})
        parts.update(self._cache[("shared",)])
        wide = tuple((name, lk.speed) for name, lk in links.items() if lk.speed > model.port_speed)
        parts.update(self._once(("breakout", model, wide), lambda: fragments({"BREAKOUT_CFG": sonic.breakout_table(model, links)})))
        names = tuple(links)
        parts.update(self._once(("qos", names), lambda: fragments(sonic.qos_port_tables(list(links), site))))
        cabling = tuple((lk.speed, lk.cable_m, lk.xoff) for lk in links.values())
        parts.update(self._once(("buffers", model, names, cabling), lambda: fragments(sonic.buffer_tables(model, links, site))))
        speeds = tuple(lk.speed for lk in links.values())
        port, neighbor, used = self._once(("ports", model, names, speeds), lambda: self._port_text(m, links))
        cabled = [links[name] for name in used]
        parts["PORT"] = port.fill([json_str(f"{lk.peer}:{lk.peer_port}") for lk in cabled])
        peers: list[str] = []
        for lk in cabled:
            peers += (json_str(lk.peer), json_str(lk.peer_port))
        parts["DEVICE_NEIGHBOR"] = neighbor.fill(peers)
        return b"{\n" + b",\n".join(parts[name] for name in sorted(parts)) + b"\n}\n"

"""Neighbour files gathered into claims: "port x reports port y at its far end".

Inputs are files or folders (read recursively, hidden files skipped), in any mix. Each file's format
is found from its content, never its name:

- JSON with ``lldp`` (lldpd), ``lldpNeighbors`` (EOS) or an eAPI reply: one device's table. The device
  is the name the document carries (lldpd's ``local-chassis``, EOS ``show hostname``), else the file's
  name without ``.json``/``.txt``/``.out``/``.log`` (``leaf-0001.json``; a host's FQDN works too);
- a JSON object whose every value is such a table: a merged file, keyed by device;
- text with ibnetdiscover's node lines: the whole InfiniBand fabric (:mod:`twin.asbuilt.ibnet`).

A claim names both ports in the plan's terms (:class:`twin.asbuilt.plan.Plan` resolves system names,
SONiC aliases, hosts' ``nicK`` interfaces); a neighbour the plan does not know keeps its reported
name and becomes a finding. A port that is not a fabric port (``eth0``, ``Management1``) is counted
and left out. Bad files are located diagnostics; the other files are still read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from twin.asbuilt import ibnet, lldp
from twin.asbuilt.files import Lines, Problems, decode, first_key, json_error, line_col, load_json, lone_surrogate, members, read_bytes, shown_name
from twin.asbuilt.plan import End, Plan

SUFFIXES = (".json", ".txt", ".out", ".log")
SINGLE = ("lldp", "lldpNeighbors", "jsonrpc", "local-chassis", "result", "id")  # a first key that opens one device's table
NOT_KNOWN = 'lldpd {"lldp": ...}, EOS {"lldpNeighbors": ...}, an eAPI reply, or an object of them keyed by device'
FORMATS = "lldpd JSON (lldpcli show neighbors -f json), EOS JSON (show lldp neighbors detail | json) or ibnetdiscover output"


class Claim(NamedTuple):
    x: End  # the reporting port
    y: End  # what it sees at the far end
    width: int  # lanes (InfiniBand), 0 when the format carries none
    speed: str  # InfiniBand speed name, "" when the format carries none
    src: str  # file:line


class Collection:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.claims: list[Claim] = []
        self.reported: set[str] = set()  # plan devices that reported (a reporting server's NICs included)
        self.files: list[dict] = []
        self.ignored = 0  # entries on ports that are not fabric ports
        self.problems = Problems()
        self._warned: set[tuple[str, str]] = set()

    def report(self, dev: str) -> None:
        nics = self.plan.nics.get(dev)
        if nics is not None:
            self.reported.update(nics)
        else:
            self.reported.add(dev)

    def claim(self, x: End, y: End, width: int, speed: str, shown: str, line: int) -> None:
        self.claims.append(Claim(x, y, width, speed, f"{shown}:{line}"))

    def warn_once(self, shown: str, line: int, key: str, message: str, expected: str) -> None:
        if (shown, key) not in self._warned:
            self._warned.add((shown, key))
            self.problems.warn(shown, line, 1, message, expected)


def collect(plan: Plan, inputs: list[Path]) -> Collection:
    col = Collection(plan)
    for src in inputs:
        if src.is_dir():
            files = _files_in(col, src)
            if not files:
                col.problems.warn(str(src), 1, 1, "an empty folder", "neighbour files")
            for f in files:
                _file(col, f)
        elif src.exists():
            _file(col, src)
        else:
            col.problems.error(str(src), 1, 1, "no such file or folder", "neighbour files or folders of them")
    if not col.files and not col.problems.errors:
        shown = str(inputs[0]) if inputs else "."
        col.problems.error(shown, 1, 1, "no neighbour table was read: nothing to check", FORMATS)
    return col


def _files_in(col: Collection, src: Path) -> list[Path]:
    """The regular files under a folder (hidden ones skipped), never through a symbolic link: a link
    is told and left unread, so nothing outside the folder given is read."""
    import os

    found = []
    for top, dirs, names in os.walk(src, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            p = Path(top) / name
            if name.startswith("."):
                continue
            if p.is_symlink():
                col.problems.warn(str(p), 1, 1, "a symbolic link: not followed (a neighbour folder is read as given)", "a regular file")
            elif p.is_file():
                found.append(p)
        for d in dirs:
            if (Path(top) / d).is_symlink():
                col.problems.warn(str(Path(top) / d), 1, 1, "a symbolic link: not followed (a neighbour folder is read as given)", "a folder")
    return sorted(found)


def stem(path: Path) -> str:
    """The device a per-device file is named after.

    >>> stem(Path("x/leaf-0001.json")), stem(Path("dh1-z1-r001-s1.example.com.txt"))
    ('leaf-0001', 'dh1-z1-r001-s1.example.com')
    """
    name = path.name
    for s in SUFFIXES:
        if name.endswith(s) and len(name) > len(s):
            return name[: -len(s)]
    return name


def _file(col: Collection, path: Path) -> None:
    shown = str(path)
    data = read_bytes(path, shown, col.problems)
    text = None if data is None else decode(data, shown, col.problems)
    if text is None:
        return
    head = text.lstrip()
    if not head:
        col.problems.error(shown, 1, 1, "empty file", FORMATS)
    elif head[0] in "{[":
        try:
            _json(col, text, shown, path)
        except MemoryError:
            col.problems.error(shown, 1, 1, "too large to read in the memory left", "a smaller file (split a merged file by device)")
    elif ibnet.looks_like(text):
        ibnet.read(col.plan, text, shown, col)
    else:
        line, c = line_col(text, len(text) - len(head))
        col.problems.error(shown, line, c, "not a neighbour table of a known format", FORMATS)


def _json(col: Collection, text: str, shown: str, path: Path) -> None:
    """One device's table (its first key says so), or a merged file read member by member."""
    lines = Lines(text)
    try:
        first = first_key(text)
        if first is None or first in SINGLE:
            doc = load_json(text, shown, col.problems)
            fmt = lldp.kind(doc)
            if fmt is not None:
                devs = _device(col, lldp.local_name(doc, fmt) or stem(path), doc, fmt, lines, 0, shown)
                col.files.append({"file": shown, "format": "lldpd" if fmt == "lldpd" else "eos", "devices": devs[0], "entries": devs[1]})
            elif doc is not None:
                col.problems.error(shown, 1, 1, "JSON of no known neighbour format", NOT_KNOWN)
            return
        devices, count, fmts = 0, 0, set()
        for name, at, sub, end in members(text):
            lines.end = end
            k = lldp.kind(sub)
            if k is None:
                col.problems.error(shown, *lines.line_col(at), f"{name!r} holds no neighbour table of a known format", NOT_KNOWN)
                continue
            fmts.add("lldpd" if k == "lldpd" else "eos")
            d, n = _device(col, lldp.local_name(sub, k) or name, sub, k, lines, at, shown)
            devices, count = devices + d, count + n
        col.files.append({"file": shown, "format": "+".join(sorted(fmts)) + " (merged)", "devices": devices, "entries": count})
    except json.JSONDecodeError as e:
        json_error(e, text, shown, col.problems)
    except RecursionError:
        col.problems.error(shown, 1, 1, "JSON nested too deeply", "a neighbour table")


def _device(col: Collection, raw: str, doc: dict, fmt: str, lines: Lines, start: int, shown: str) -> tuple[int, int]:
    """Claims of one device's table; (1, entries) when it was read, (0, 0) when not."""
    plan = col.plan
    at = lines.line_col(start)  # before the entries: Lines only counts forward
    try:
        raws = lldp.entries(doc, fmt, lines, start)
    except lldp.Malformed as e:
        col.problems.error(shown, *line_col(lines.text, e.offset), str(e), e.expected)
        return 0, 0
    bad = next((r for r in raws if any(lone_surrogate(x) for x in (r.local, r.remote, *r.ports))), None)
    if lone_surrogate(raw) or bad is not None:
        col.problems.error(shown, bad.line if bad else at[0], 1 if bad else at[1], "a name with half of a UTF-16 surrogate pair (a lone \\ud800-\\udfff escape)",
                           "names of printable characters")
        return 0, 0
    raw = shown_name(raw)
    raws = [r._replace(local=shown_name(r.local), remote=shown_name(r.remote), ports=tuple(map(shown_name, r.ports))) for r in raws]
    rep = plan.device(raw)
    if rep is None:
        names = {r.remote for r in raws}
        if names and not any(plan.device(n) for n in names):
            col.problems.error(shown, *at, f"neither {raw!r} nor any of the {len(names)} neighbours it names is a device of site {plan.site}: "
                               "a neighbour file for another site?", f"neighbour tables of {plan.site}")
        else:
            col.problems.error(shown, *at, f"device {raw!r} is not in the plan of site {plan.site}",
                               "a file named after a device of the plan (or a merged file keyed by device names)")
        return 0, 0
    col.report(rep)
    server = plan.roles.get(rep) == "server"
    for r in raws:
        if server:
            x = plan.host_port.get((rep, r.local))
        else:
            p = plan.port(rep, r.local)
            x = (rep, p) if p else None
        if x is None:
            col.ignored += 1
            continue
        col.claim(x, _remote(col, r, shown), 0, "", shown, r.line)
    return 1, len(raws)


def _remote(col: Collection, r: lldp.Raw, shown: str) -> End:
    plan = col.plan
    first = r.ports[0] if r.ports else "?"
    dev = plan.device(r.remote)
    if dev is None:
        col.warn_once(shown, r.line, r.remote, f"neighbour {r.remote!r} is not a device of the plan (first seen here)", "devices of the plan")
        return (r.remote, first)
    if plan.roles.get(dev) == "server":
        for p in r.ports:
            end = plan.host_port.get((dev, p))
            if end:
                return end
        col.warn_once(shown, r.line, f"{dev} {first}", f"interface {first!r} of server {dev} is not one of its NICs (first seen here)",
                      "the NIC's name after its server's, e.g. nic1 (nic1p2 for port 2 of a NIC on several planes)")
        return (dev, first)
    for p in r.ports:
        q = plan.port(dev, p)
        if q:
            return (dev, q)
    col.warn_once(shown, r.line, f"{dev} {first}", f"{first!r} is not a port of {dev} (first seen here)", "a port name or alias of its model")
    return (dev, first)

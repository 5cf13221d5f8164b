"""The InfiniBand half of the plan: GUIDs, port numbers and link rates.

``ibnetdiscover`` names nodes by GUID and ports by number. The build writes the fabric in the same
format (``model/topology.net``, :mod:`twin.emit.configs_ib`): each node's GUID with its device name in
the comment, each port line with its peer and the rate the link should train at (``4xNDR``). Read
back here, it gives GUID -> device and, per end, the planned width and speed; its links must be the
cables of ``cabling/cables.csv`` port for port, with port N of a switch being the N-th name of its
model (so a disagreement between the two files is caught before any neighbour table is read).
OpenSM's GUID files add port GUIDs: ``cn_guids.conf`` (HCA port 1) and ``io_guids.conf`` (each port of
a fabric attachment); ``root_guids.conf`` must name switches of the topology.
"""

from __future__ import annotations

import re

from twin.asbuilt.plan import Plan

NODE = re.compile(r'^(Switch|Hca|Ca)\t(\d+) "([SH])-([0-9a-f]{16})"\t\t# "([^"]+)"')
PORT = re.compile(r'^\[(\d+)\]\t"([SH])-([0-9a-f]{16})"\[(\d+)\]\t\t# "([^"]+)" lid \d+ (\d+)x([A-Z0-9]+)\s*$')
GUID = re.compile(r"^0x([0-9a-fA-F]{1,16})$")
# signalling rate per lane in Gbit/s, in order (IBTA; FDR10 is FDR's 10 Gbit/s mode)
SPEEDS = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.3125, "FDR": 14.0625, "EDR": 25.78125, "HDR": 53.125, "NDR": 106.25, "XDR": 212.5}


def load_ib(plan: Plan, reader) -> None:
    rel = "model/topology.net"
    text = reader.text(rel)
    if text is None:
        return
    shown, problems = reader.shown(rel), reader.problems
    cur: str | None = None
    links: dict[tuple[str, int], tuple[int, str, int, int, str]] = {}  # (device, port no) -> (line, peer guid ref, peer port no, width, speed)
    ref: dict[str, str] = {}  # "S-<guid>" -> device
    for n, line in enumerate(text.splitlines(), start=1):
        if not line or line.startswith("#") or line.startswith(("switchguid=", "caguid=")):
            continue
        m = NODE.match(line)
        if m:
            kind, _ports, sh, hexguid, name = m.groups()
            if plan.device(name) != name:
                problems.error(shown, n, line.index(name) + 1, f"{name} is not a device of cabling/cables.csv", "the plan's devices")
                cur = None
                continue
            cur = name
            plan.guid[int(hexguid, 16)] = name
            ref[f"{sh}-{hexguid}"] = name
            continue
        m = PORT.match(line)
        if m and cur is not None:
            port, sh, hexguid, pport, _peer, width, speed = m.groups()
            if speed not in SPEEDS:
                problems.error(shown, n, line.rindex(speed) + 1, f"unknown link speed {speed}", " ".join(SPEEDS))
                continue
            links[(cur, int(port))] = (n, f"{sh}-{hexguid}", int(pport), int(width), speed)
            continue
        problems.error(shown, n, 1, "not a line of twin's ibnetdiscover-format topology", 'Switch/Hca lines with # "device", port lines [N] "peer"[M]')
        return
    for (dev, num), (n, peer_ref, pnum, width, speed) in links.items():
        peer = ref.get(peer_ref)
        x, y = plan.numbered(dev, num), plan.numbered(peer, pnum) if peer else None
        i = plan.at.get((dev, x)) if x else None
        if i is None or y is None or {plan.a[i], plan.b[i]} != {(dev, x), (peer, y)}:
            problems.error(shown, n, 1, f"port {num} of {dev} links to {peer_ref}[{pnum}], which is no cable of cabling/cables.csv",
                           "the topology and the cable schedule of one build")
            return
        plan.rate[(dev, x)] = (width, speed)
    if len(links) != 2 * len(plan.ids):
        problems.error(shown, 1, 1, f"{len(links)} port lines for {len(plan.ids)} cables", "two port lines (one per end) for every cable")
        return
    _opensm(plan, reader)


def _opensm(plan: Plan, reader) -> None:
    """Port GUIDs from OpenSM's GUID files (checked against the topology's node GUIDs)."""
    problems = reader.problems
    for name in ("root_guids.conf", "cn_guids.conf", "io_guids.conf"):
        rel = f"configs/opensm/{name}"
        text = reader.text(rel, required=name == "root_guids.conf")
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), start=1):
            m = GUID.match(line.strip())
            if not m:
                problems.error(reader.shown(rel), n, 1, f"{line.strip()!r} is not a GUID", "0x followed by up to 16 hex digits")
                return
            g = int(m.group(1), 16)
            if name == "root_guids.conf":
                dev = plan.guid.get(g)
                if dev is None or plan.roles.get(dev) in ("nic", "endpoint"):
                    problems.error(reader.shown(rel), n, 1, f"0x{g:016x} is not a switch of model/topology.net", "switch node GUIDs")
                continue
            # an HCA's port p has GUID node + p (ibsim, and OpenSM's files as twin writes them)
            for p in range(1, 257 if name == "io_guids.conf" else 2):
                dev = plan.guid.get(g - p)
                if dev is not None:
                    plan.port_guid[g] = (dev, plan.numbered(dev, p) or f"port{p}")
                    break
            else:
                problems.error(reader.shown(rel), n, 1, f"0x{g:016x} is no HCA port of model/topology.net", "port GUIDs of the topology's HCAs")
                return

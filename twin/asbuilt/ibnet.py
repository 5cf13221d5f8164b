"""``ibnetdiscover`` output read into claims: every port line says "port N of this node reaches port M
of that node, trained at width x speed".

ibnetdiscover prints one block per node (``Switch``, ``Ca``; a switch's port lines first name the peer,
an HCA's carry their own port GUID first) and sees every link from both of its nodes, since the
subnet manager's sweep reads each port's state. A node is named in the plan's terms by, in order:
its node GUID (``S-``/``H-`` id, as ``model/topology.net`` gives them), one of its port GUIDs (OpenSM's
``cn_guids.conf``/``io_guids.conf``), or its node description: the device name itself, its first word
(``host mlx5_0``), or the name in a switch's ``MF0;name:model/U1``.
"""

from __future__ import annotations

import re

from twin.asbuilt.plan_ib import SPEEDS

NODE = re.compile(r'^(Switch|Ca|Hca|Rt)\s+(\d+)\s+"([^"]+)"\s*(?:#\s*"((?:[^"\\]|\\.)*)")?')
PORT = re.compile(r'^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s*"([^"]+)"\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s*(?:#(.*))?$')
RATE = re.compile(r"\b(\d+)x([A-Z0-9]+)\s*$")
DESC = re.compile(r'"((?:[^"\\]|\\.)*)"')
REF = re.compile(r"^[SHR]-([0-9a-fA-F]{1,16})$")
OTHER = re.compile(r"^(?:#.*|\s*|(?:vendid|devid|sysimgguid|switchguid|caguid|rtguid)=.*)$")
MF0 = re.compile(r"^MF0;([^:]+):")


def looks_like(text: str) -> bool:
    """Whether text is ibnetdiscover output (a node line near the top)."""
    return any(NODE.match(line) for line in text[:20000].splitlines())


def read(plan, text: str, shown: str, col) -> None:
    """Add the claims of one ibnetdiscover output to ``col`` (a :class:`twin.asbuilt.collect.Collection`)."""
    nodes: dict[str, list] = {}  # ref -> [line, desc, port guids, device]
    blocks: list[tuple[str, int, int, str, int, int, str, str]] = []  # (node ref, line, port, peer ref, peer port, width, speed, peer desc)
    cur: str | None = None
    odd: list[int] = []
    for n, line in enumerate(text.splitlines(), start=1):
        m = NODE.match(line)
        if m:
            cur = m.group(3)
            nodes[cur] = [n, (m.group(4) or "").replace('\\"', '"'), [], None]
            continue
        m = PORT.match(line)
        if m and cur is not None:
            port, own_guid, peer, pport, peer_guid, comment = m.groups()
            comment = comment or ""
            if max(len(port), len(pport)) > 4 or own_guid and len(own_guid) > 34:  # a port number of thousands of digits is none
                col.problems.error(shown, n, 1, f"port number {max(port, pport, key=len)[:12]}... of {max(len(port), len(pport)):,} digits"
                                   if max(len(port), len(pport)) > 4 else "a GUID longer than 16 hex digits", "a port number of at most 4 digits")
                continue
            rate = RATE.search(comment)
            descs = DESC.findall(comment)
            if own_guid:
                nodes[cur][2].append(int(own_guid, 16))
            blocks.append((cur, n, int(port), peer, int(pport), int(rate.group(1)) if rate else 0,
                           rate.group(2) if rate and rate.group(2) in SPEEDS else "", descs[-1] if descs else ""))
            continue
        if not OTHER.match(line):
            odd.append(n)
    if odd:
        col.problems.warn(shown, odd[0], 1, f"{len(odd)} line(s) that are not ibnetdiscover's (first here) were skipped", "node, port and guid lines")
    for ref, node in nodes.items():
        node[3] = _name(plan, ref, node[1], node[2])
    known = [ref for ref, node in nodes.items() if node[3]]
    if nodes and not known:
        col.problems.error(shown, 1, 1, f"none of its {len(nodes)} nodes is a device of site {plan.site} (by GUID or node description): "
                           "a neighbour file for another site?", f"ibnetdiscover output of {plan.site}")
        return
    for ref, node in nodes.items():
        if node[3] is None:
            col.problems.warn(shown, node[0], 1, f"node {ref} ({node[1]!r}) is not a device of the plan", "GUIDs of model/topology.net or device names")
        else:
            col.report(node[3])
    for ref, n, port, peer, pport, width, speed, pdesc in blocks:
        dev = nodes[ref][3] or nodes[ref][1] or ref
        x = (dev, plan.numbered(dev, port) or f"#{port}")
        pn = nodes.get(peer)
        pdev = (pn[3] if pn else None) or _name(plan, peer, pdesc, []) or pdesc or peer
        y = (pdev, plan.numbered(pdev, pport) or f"#{pport}")
        col.claim(x, y, width, speed, shown, n)
    col.files.append({"file": shown, "format": "ibnetdiscover", "devices": len(known), "entries": len(blocks)})


def _name(plan, ref: str, desc: str, port_guids: list[int]) -> str | None:
    m = REF.match(ref)
    if m:
        dev = plan.guid.get(int(m.group(1), 16))
        if dev:
            return dev
    for g in port_guids:
        end = plan.port_guid.get(g)
        if end:
            return end[0]
    for cand in (desc, desc.split()[0] if desc.split() else "", (MF0.match(desc) or [None, ""])[1]):
        if cand:
            dev = plan.device(cand)
            if dev and plan.roles.get(dev) != "server":
                return dev
    return None

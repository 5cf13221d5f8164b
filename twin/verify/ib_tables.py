"""What the InfiniBand diagnostics print, read: ``ibnetdiscover``'s nodes, ports and link widths, and
``dump_fts``'s forwarding tables; and every pair's route walked through those tables (unrouted pairs,
loops, hop counts). :mod:`twin.verify.ib` runs the tools; this module only reads their text.
"""

from __future__ import annotations

import re

LINE_NODE = re.compile(r'^(Switch|Ca|Hca)\s+(\d+)\s+"([^"]+)"\s*#\s*"([^"]*)"(?:.*?\blid (\d+))?')
LINE_PORT = re.compile(r'^\[(\d+)\](?:\(([0-9a-fx]+)\))?\s+"([^"]+)"\[(\d+)\](?:\(([0-9a-fx]+)\))?\s*#\s*(?:lid \d+ lmc \d+ )?"([^"]*)"\s+lid (\d+)')


def parse_ibnetdiscover(text: str) -> tuple[dict[str, dict], dict[tuple[str, int], str]]:
    """(node id -> {kind, desc, lid}, (switch id, port) -> neighbour node id) from ibnetdiscover."""
    nodes: dict[str, dict] = {}
    ports: dict[tuple[str, int], str] = {}
    cur: str | None = None
    for line in text.splitlines():
        m = LINE_NODE.match(line)
        if m:
            kind, _n, nid, desc, lid = m.groups()
            cur = nid
            nodes.setdefault(nid, {})
            nodes[nid].update(kind="switch" if kind == "Switch" else "hca", desc=desc)
            if lid:
                nodes[nid]["lid"] = int(lid)
            continue
        m = LINE_PORT.match(line)
        if m and cur:
            port, _pg, rid, _rport, _rpg, rdesc, rlid = m.groups()
            ports[(cur, int(port))] = rid
            nodes.setdefault(rid, {"desc": rdesc})
            if nodes[cur].get("kind") == "switch":
                nodes[rid].setdefault("lid", int(rlid))  # an HCA's lid is on the switch's port line
    return nodes, ports


PORT_RATE = re.compile(r'^\[(\d+)\].*\blid \d+ (\d+)x\w+\s*$')


def link_widths(text: str) -> dict[tuple[str, int], int]:
    """(node id, port) -> link width in lanes, from ibnetdiscover text (generated or discovered).

    >>> link_widths('Switch 8 "S-1"  # "leaf" base port 0 lid 2 lmc 0' + chr(10) + '[3] "H-2"[1](3)  # "nic" lid 5 2xSDR')
    {('S-1', 3): 2}
    """
    out: dict[tuple[str, int], int] = {}
    cur: str | None = None
    for line in text.splitlines():
        m = LINE_NODE.match(line)
        if m:
            cur = m.group(3)
            continue
        m = PORT_RATE.match(line)
        if m and cur:
            out[(cur, int(m.group(1)))] = int(m.group(2))
    return out


def width_mismatches(designed: dict[tuple[str, int], int], found: dict[tuple[str, int], int]) -> list[str]:
    """Ports whose link came up at another width than the topology gives (ibsim honours the width;
    it leaves every link at SDR signalling, so the speed itself is not compared)."""
    bad = [f"{n}[{p}] {found.get((n, p), 0)}x (want {w}x)" for (n, p), w in sorted(designed.items()) if found.get((n, p)) != w]
    return [f"{len(bad)} port(s) came up at another link width than the topology's: " + ", ".join(bad[:5])] if bad else []


LFT_HEAD = re.compile(r"^Unicast lids .* guid 0x([0-9a-f]+) \((.*)\):")
LFT_LINE = re.compile(r"^0x([0-9a-f]+) (\d+)(?: :|\s*$)")
LFT_UNSET = 255  # an LFT entry no subnet manager wrote


def parse_dump_fts(text: str) -> dict[str, dict[int, int]]:
    """switch node id ("S-<guid>") -> {destination lid: output port} from ``dump_fts`` (with or without
    ``-n``, ``-a``); unset entries (port 255) are left out."""
    tables: dict[str, dict[int, int]] = {}
    cur: dict[int, int] | None = None
    for line in text.splitlines():
        m = LFT_HEAD.match(line)
        if m:
            cur = tables.setdefault(f"S-{m.group(1)}", {})
            continue
        m = LFT_LINE.match(line)
        if m and cur is not None and int(m.group(2)) != LFT_UNSET:
            cur[int(m.group(1), 16)] = int(m.group(2))
    return tables


def check_routes(nodes: dict[str, dict], ports: dict[tuple[str, int], str], lfts: dict[str, dict[int, int]]) -> dict:
    """Follow the forwarding tables from every HCA's switch to every HCA's LID.

    Per destination, each switch is resolved once (memoised), so the check is O(switches x HCAs)
    and still proves every pair: a pair is routed iff its source switch's chain ends at the
    destination HCA. A chain that revisits a switch is a loop.
    """
    hcas = {nid: n for nid, n in nodes.items() if n.get("kind") == "hca" or nid.startswith("H-")}
    attach: dict[str, str] = {}  # hca -> switch
    for (sw, _port), nb in ports.items():
        if nb in hcas and nodes.get(sw, {}).get("kind") == "switch":
            attach.setdefault(nb, sw)
    problems: list[str] = []
    unrouted = loops = max_hops = pairs = 0
    for dst, dn in sorted(hcas.items()):
        lid = dn.get("lid")
        if lid is None:
            problems.append(f"{dn.get('desc', dst)}: no LID")
            continue
        memo: dict[str, int] = {}  # switch -> hops to dst (-1 unrouted, -2 loop)

        def resolve(sw: str, memo: dict[str, int] = memo, lid: int = lid, dst: str = dst) -> int:
            # this destination's memo, LID and name, bound here (the loop rebinds them for the next one)
            path: list[str] = []
            seen: set[str] = set()
            cur = sw
            result = -1
            while True:
                if cur in memo:
                    result = memo[cur]
                    break
                if cur in seen:
                    result = -2
                    break
                seen.add(cur)
                path.append(cur)
                port = lfts.get(cur, {}).get(lid)
                if port is None or port == 0:
                    result = -1
                    break
                nb = ports.get((cur, port))
                if nb == dst:
                    memo[cur] = 1
                    path.pop()
                    result = 1
                    break
                if nb is None or nb not in lfts:
                    result = -1
                    break
                cur = nb
            for i, s in enumerate(reversed(path)):
                memo[s] = result + i + 1 if result > 0 else result
            return memo.get(sw, result)

        for src, sw in attach.items():
            if src == dst:
                continue
            pairs += 1
            h = resolve(sw)
            if h == -2:
                loops += 1
            elif h < 0:
                unrouted += 1
            else:
                max_hops = max(max_hops, h)
    if unrouted:
        problems.append(f"{unrouted} HCA pairs have no route")
    if loops:
        problems.append(f"{loops} HCA pairs are routed in a loop")
    missing = sorted(set(hcas) - set(attach))
    if missing:
        problems.append(f"{len(missing)} HCAs are not attached to a switch (e.g. {missing[0]})")
    return {"hcas": len(hcas), "pairs": pairs, "unrouted": unrouted, "loops": loops, "max_hops": max_hops, "problems": problems}

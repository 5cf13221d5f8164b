"""``twin verify`` for routed fabrics: the generated FRR configs, run for real, must do what the design says.

The prediction is computed here from ``configs/frr/topology.json`` (design intent: links, ASNs, the
intended maximum-paths), independently of the FRR configs, by a small path-vector model of eBGP as
RFC 7938 uses it: shortest AS path, multipath-relax, AS-path loop rejection, leaves announce only
their own prefixes, spines never pass aggregation-learned routes back up. FRR then runs the configs;
every switch's kernel FIB must hold every rack subnet with exactly the predicted number of next hops.
A config that drops a peer, mis-sets maximum-paths or leaks transit therefore fails.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from twin.verify.frr import FrrLab, HostAttachment, Link, Switch, binaries, wait
from twin.verify.netns import require_root
from twin.verify.topology import TOPOLOGY, Topology

__all__ = ["Topology", "VerifyResult", "is_roce", "predict", "verify"]


def predict(topo: Topology) -> dict[str, dict[str, int]]:
    """switch -> {rack subnet: ECMP width} as eBGP in the RFC 7938 design computes it.

    Breadth-first from each originating leaf: a switch's best paths are those of minimal AS-path
    length; every link to a neighbour that advertises such a path is an ECMP next hop (multipath-relax),
    capped by the switch's maximum-paths.

    lab-2zone: an RTSW reaches every other rack over all 16 uplinks; a CTSW reaches its own zone's
    racks over 4 parallel links and the other zone's over its 8 ATSW uplinks.

    >>> w = predict(Topology.load(Path("generated/lab-2zone")))
    >>> sorted(set(w["lab1-z1-r002-rtsw"].values()))
    [16]
    >>> sorted(w["z1-ctsw-01"].values())
    [4, 4, 4, 4, 8, 8, 8, 8]
    """
    sw = topo.switches
    adj: dict[str, list[tuple[str, str]]] = defaultdict(list)  # node -> [(neighbour, link id)]
    for lk in topo.links:
        adj[lk["a"]].append((lk["b"], lk["id"]))
        adj[lk["b"]].append((lk["a"], lk["id"]))
    for n in adj:
        adj[n].sort()
    top_asns = {s["asn"] for s in sw.values() if s["level"] >= 3}
    out: dict[str, dict[str, int]] = {n: {} for n in sw}
    for h in topo.hosts:
        origin, prefix = h["switch"], h["subnet"]
        path: dict[str, tuple[int, ...]] = {origin: ()}  # AS path as received (without own ASN)
        frontier = [origin]
        while frontier:
            cand: dict[str, list[tuple[str, str]]] = defaultdict(list)  # v -> [(u, link)]
            for u in frontier:
                adv = (sw[u]["asn"],) + path[u]
                for v, lid in adj[u]:
                    if v in path:
                        continue
                    if sw[u]["level"] == 1 and u != origin:
                        continue  # a leaf announces only its own prefixes
                    if sw[v]["level"] > sw[u]["level"] and sw[u]["level"] == 2 and top_asns & set(path[u]):
                        continue  # a spine never gives aggregation-learned routes back up
                    if sw[u]["level"] == 3 and sw[v]["level"] >= 3 and top_asns & set(path[u]):
                        continue  # a campus ATSW gives the campus tier only its own building's routes
                    if sw[v]["asn"] in adv:
                        continue  # AS-path loop
                    cand[v].append((u, lid))
            frontier = sorted(cand)
            for v in frontier:
                first = min(cand[v])[0]
                path[v] = (sw[first]["asn"],) + path[first]
                out[v][prefix] = min(len(cand[v]), sw[v]["maximum_paths"])
                if h.get("subnet6"):
                    out[v][h["subnet6"]] = out[v][prefix]  # same sessions, same policy, same width
    return out


@dataclass
class VerifyResult:
    site: str
    scope: str
    switches: int
    links: int
    racks: int
    problems: list[str] = field(default_factory=list)
    figures: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {"site": self.site, "scope": self.scope, "switches": self.switches, "links": self.links,
                "racks": self.racks, "ok": self.ok, "problems": self.problems, **self.figures}


def _mismatches(lab: FrrLab, expected: dict[str, dict[str, int]], limit: int = 20) -> list[str]:
    v6 = any(":" in p for routes in expected.values() for p in routes)

    def one(name: str) -> list[str]:
        got = lab.kernel_routes(name)
        if v6:
            got.update(lab.kernel_routes(name, "-6"))
        return [
            f"{name}: {p} has {got.get(p, 0)} next hop(s), design predicts {w}"
            for p, w in sorted(expected[name].items()) if got.get(p, 0) != w
        ]
    with ThreadPoolExecutor(max_workers=4) as ex:
        found = [m for ms in ex.map(one, sorted(expected)) for m in ms]
    return found[:limit] + ([f"... and {len(found) - limit} more"] if len(found) > limit else [])


def _ping_pairs(topo: Topology, all_pairs_up_to: int = 16) -> list[tuple[str, str]]:
    """Rack pairs to ping, within each connected fabric: the planes of a multi-plane site are separate
    fabrics (a host reaches another plane's racks through its own port on that plane, not through the
    switches), so racks are paired only with racks their switches connect to."""
    comp = {n: n for n in topo.switches}

    def root(n: str) -> str:
        while comp[n] != n:
            comp[n] = comp[comp[n]]
            n = comp[n]
        return n

    for lk in topo.links:
        if lk["a"] in comp and lk["b"] in comp:
            comp[root(lk["a"])] = root(lk["b"])
    groups: dict[str, list[str]] = {}
    for r in sorted(h["switch"] for h in topo.hosts):
        groups.setdefault(root(r), []).append(r)
    pairs: set[tuple[str, str]] = set()
    for racks in groups.values():
        n = len(racks)
        if n <= all_pairs_up_to:
            pairs |= {(a, b) for a in racks for b in racks if a != b}
        else:
            pairs |= {(racks[i], racks[(i + 1) % n]) for i in range(n)} | {(racks[i], racks[(i + n // 2) % n]) for i in range(n)}
    return sorted(pairs)


def _pings(lab: FrrLab, topo: Topology, pairs: list[tuple[str, str]]) -> list[str]:
    dst = {h["switch"]: h["host_ip"].split("/")[0] for h in topo.hosts}

    def one(pair: tuple[str, str]) -> str | None:
        a, b = pair
        ok = lab.ping(a, dst[b], count=1, timeout=2) or lab.ping(a, dst[b], count=2, timeout=2)
        return None if ok else f"ping from rack of {a} to {dst[b]} (rack of {b}) failed"

    with ThreadPoolExecutor(max_workers=8) as ex:
        return [r for r in ex.map(one, pairs) if r]


def verify(folder: Path, zone: int | None = None, timeout: float = 600, bfd: bool | None = None,
           log: Callable[[str], None] = lambda _m: None, mutate: Callable[[dict[str, str]], None] | None = None,
           buildings: list[int] | None = None) -> VerifyResult:
    """Bring the generated configs up in FRR and check sessions, ECMP widths, pings and a link failure.

    ``zone`` verifies one AI zone with its ATSWs; ``buildings`` (a campus) the slice of
    :meth:`Topology.slice_buildings`. ``mutate`` (tests) may edit the config texts before they are
    loaded, to prove a broken config fails.
    """
    full = topo = Topology.load(folder)
    scope = "whole site"
    if zone is not None:
        topo, scope = topo.slice_zone(zone), f"zone {zone}"
    elif buildings:
        topo, scope = topo.slice_buildings(buildings), f"buildings {', '.join(map(str, buildings))}"
    use_bfd = topo.bfd if bfd is None else bfd
    why = require_root(binaries(use_bfd))
    res = VerifyResult(topo.site, scope, len(topo.switches), len(topo.links), len(topo.hosts))
    if why:
        res.problems.append(why)
        return res
    configs = {n: topo.config(n) for n in topo.switches}
    if mutate:
        mutate(configs)
    expected = predict(topo)
    hosts = [HostAttachment(h["switch"], h["switch"], h["ifname"], h["host_ip"], h["gateway"],
                            h.get("host_ip6"), h.get("gateway6")) for h in topo.hosts]
    links = [Link(lk["a"], lk["a_if"], lk["b"], lk["b_if"]) for lk in topo.links]
    t0 = time.monotonic()
    with FrrLab([Switch(n, c) for n, c in sorted(configs.items())], links, hosts, bfd=use_bfd, log=log) as lab:
        lab.start()
        t_push = time.monotonic()
        res.figures["setup_s"] = round(t_push - t0, 2)
        log(f"waiting for convergence ({len(topo.switches)} switches, {len(topo.links)} links)")
        last: list[str] = []

        def converged() -> bool:
            nonlocal last
            lab.sample_memory()
            last = _mismatches(lab, expected)
            return not last

        converged_ok = wait(converged, timeout, interval=1.0)
        res.figures["convergence_s"] = round(time.monotonic() - t_push, 2)
        res.figures["routes_checked"] = sum(len(v) for v in expected.values())
        if not converged_ok:
            res.problems += [f"not converged to the predicted ECMP after {timeout:g} s:"] + last
        # sessions: every configured link must carry an Established session at both ends
        # A slice keeps every configured peer of its switches but not every link: the top tier's
        # sessions into other zones must be configured (the config is whole) yet cannot come up.
        want, configured = defaultdict(int), defaultdict(int)
        k = topo.sessions_per_link
        for lk in topo.links:
            want[lk["a"]] += k
            want[lk["b"]] += k
        for lk in full.links:
            configured[lk["a"]] += k
            configured[lk["b"]] += k
        with ThreadPoolExecutor(max_workers=4) as ex:
            summaries = dict(zip(sorted(topo.switches), ex.map(lab.bgp_summary, sorted(topo.switches))))
        down: list[str] = []
        sessions = 0
        for n, peers in summaries.items():
            up = sum(1 for st in peers.values() if st == "Established")
            sessions += up
            if len(peers) != configured[n] or up != want[n]:
                bad = [f"{p}={st}" for p, st in sorted(peers.items()) if st != "Established"]
                more = f" (+{len(bad) - 5} more)" if len(bad) > 5 else ""
                down.append(f"{n}: {len(peers)} BGP peers configured for {configured[n] // k} links, {up} established of "
                            f"{want[n]} expected; not established: {', '.join(bad[:5]) or '-'}{more}")
        # an RTSW announces only its own rack subnet(s) and loopback: ask FRR what it really sends
        def leaks(n: str) -> str | None:
            peer = next((p for p, st in sorted(summaries[n].items()) if st == "Established"), None)
            if peer is None:
                return None
            allowed = set(topo.switches[n]["originate"]) | set(topo.switches[n].get("originate6", []))
            sent = set()
            for afi in ("ipv4", "ipv6") if topo.sessions_per_link == 1 or ":" not in peer else ("ipv6",):
                js = lab.vtysh_json(n, f"show bgp {afi} unicast neighbors {peer} advertised-routes json")
                sent |= set(js.get("advertisedRoutes", {}))
            extra = sorted(sent - allowed)
            return f"{n} announces more than its rack: {', '.join(extra[:5])}{' ...' if len(extra) > 5 else ''} (to {peer})" if extra else None

        leaves = sorted(n for n, s in topo.switches.items() if s["level"] == 1)
        with ThreadPoolExecutor(max_workers=4) as ex:
            leaked = [m for m in ex.map(leaks, leaves) if m]
        res.figures["leaves_leaking_transit"] = len(leaked)
        res.problems += leaked[:10]
        # a campus: an ATSW gives the campus tier (mesh peers, spines) only its own building's prefixes
        atsws = sorted(n for n, s in topo.switches.items() if s["level"] == 3 and s.get("building") is not None)
        if atsws:
            with ThreadPoolExecutor(max_workers=4) as ex:
                crossing = [m for m in ex.map(lambda n: _campus_leak(lab, full, n), atsws) if m]
            res.figures["atsws_leaking_other_buildings"] = len(crossing)
            res.problems += crossing[:10]
        res.figures["bgp_sessions_established"] = sessions
        res.figures["bgp_sessions_expected"] = 2 * k * len(topo.links)
        res.problems += down[:20]
        if use_bfd:
            # every in-scope session has a BFD session up (a slice's out-of-scope peers cannot)
            with ThreadPoolExecutor(max_workers=4) as ex:
                bfd = dict(zip(sorted(topo.switches), ex.map(lab.bfd_peers, sorted(topo.switches))))
            bfd_down = sum(max(0, want[n] - sum(1 for st in bfd[n].values() if st == "up")) for n in bfd)
            res.figures["bfd_sessions_down"] = bfd_down
            if bfd_down:
                res.problems.append(f"{bfd_down} BFD session ends are not up")
        pairs = _ping_pairs(topo)
        failed = _pings(lab, topo, pairs)
        res.figures["pings"] = {"sent": len(pairs), "failed": len(failed)}
        res.problems += failed[:10]

        # one CTSW link down: ECMP must shrink exactly as predicted, reachability must hold
        link = next((lk for lk in topo.links if {topo.switches[lk["a"]]["level"], topo.switches[lk["b"]]["level"]} == {1, 2}), None)
        if link is not None and not converged_ok:
            res.figures["link_down"] = "skipped: the fabric never reached the predicted state"
        elif link is not None:
            leaf_end = (link["a"], link["a_if"]) if topo.switches[link["a"]]["level"] == 1 else (link["b"], link["b_if"])
            after = predict(topo.without(link["id"]))
            changed = sum(1 for n in after for p, w in after[n].items() if expected[n].get(p) != w)
            log(f"taking {leaf_end[0]} {leaf_end[1]} down ({changed} routes predicted to change)")
            t1 = time.monotonic()
            lab.link_state(*leaf_end, up=False)
            ok = wait(lambda: not _mismatches(lab, after, limit=1), 120, interval=0.3)
            fig = {"link": f"{link['a']}:{link['a_if']} - {link['b']}:{link['b_if']}", "routes_changed": changed,
                   "convergence_s": round(time.monotonic() - t1, 2)}
            if not ok:
                res.problems += [f"after {leaf_end[0]} {leaf_end[1]} went down, ECMP did not shrink as predicted:"] + _mismatches(lab, after)
            failed = _pings(lab, topo, pairs[: max(8, len(pairs) // 4)])
            fig["pings_failed"] = len(failed)
            res.problems += failed[:10]
            res.figures["link_down"] = fig
        lab.sample_memory()
        res.figures["peak_rss_mib"] = round(lab.peak_rss / 2**20, 1)
        res.figures["frr_instances"] = len(topo.switches)
        res.figures["namespace_prefix"] = lab.ns.prefix
    res.figures["total_s"] = round(time.monotonic() - t0, 2)
    return res


def _campus_leak(lab: FrrLab, full: Topology, n: str) -> str | None:
    """What ATSW ``n`` advertises to one established campus peer beyond its own building's prefixes."""
    js = lab.vtysh_json(n, "show bgp neighbors json")
    peer = next((p for p, info in sorted(js.items()) if isinstance(info, dict) and info.get("bgpState") == "Established"
                 and info.get("peerGroup") in ("ATSW", "CSSW")), None)
    if peer is None:
        return None
    mine = full.switches[n]["building"]
    allowed = {p for s in full.switches.values() if s.get("building") == mine for p in s["originate"] + list(s.get("originate6", []))}
    sent = set(lab.vtysh_json(n, f"show bgp ipv4 unicast neighbors {peer} advertised-routes json").get("advertisedRoutes", {}))
    extra = sorted(sent - allowed)
    return f"{n} gives the campus tier routes of other buildings: {', '.join(extra[:5])}{' ...' if len(extra) > 5 else ''} (to {peer})" if extra else None


def is_roce(folder: Path) -> bool:
    return (folder / TOPOLOGY).is_file()


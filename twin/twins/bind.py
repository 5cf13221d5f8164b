"""A scenario bound to a design: every reference it makes resolved once, at load, before any twin runs.

A scenario names things of the design and of itself: the site's workloads (jobs, serving, the campaign),
its routing schemes (the campaign's), links, tiers, switches and servers (failures, replacements), GPU,
server, rack and zone numbers (rank selections), the catalog's failure classes and the site's storage
(the campaign). :func:`check` resolves all of them against the compiled design and reports every bad
one at once, each at its place in the scenario file, so a typo in the third case is found before the
first case has run for minutes. The twins then read references that are known to resolve.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from twin.lang.diagnostics import Diagnostic, SpecError
from twin.lang.scenario.models import Case, Ranks, Scenario
from twin.lang.validator import error
from twin.twins.net import collectives as coll
from twin.twins.net.failures import degrade
from twin.twins.net.topology import Net
from twin.twins.reliability.campaign import resolve_classes


def _server_index(net: Net, ref: int | str, src, path) -> int:
    if isinstance(ref, int):
        if not 1 <= ref <= len(net.server_ids):
            raise SpecError([error(src, path, f"server {ref} does not exist", f"1..{len(net.server_ids)}")])
        return ref - 1
    try:
        return net.server_ids.index(ref)
    except ValueError:
        raise SpecError([error(src, path, f"unknown server '{ref}'", f"e.g. {net.server_ids[0]}")]) from None


def resolve_ranks(net: Net, sel: Ranks, case: Case, src=None, path: tuple = (), at_least: int = 1) -> np.ndarray:
    """GPU indices in rank order for a selection, after the case's server replacements; a located error
    when it holds fewer than ``at_least`` GPUs (a collective's ranks need 2)."""
    G = net.n_gpus
    all_gpus = np.arange(G)
    srv = net.gpu_server

    def pick(values, universe_size, key, what):
        bad = [v for v in values if not 1 <= v <= universe_size]
        if bad:
            raise SpecError([error(src, path + (what,), f"{what} {bad[0]} does not exist", f"1..{universe_size}")])
        order = {v - 1: i for i, v in enumerate(values)}
        chosen = [g for g in all_gpus if key[g] in order]
        return np.array(sorted(chosen, key=lambda g: (order[key[g]], g)), np.int64)

    if sel.servers is not None:
        gpus = pick(sel.servers, len(net.server_ids), srv, "servers")
    elif sel.racks is not None:
        racks = list(dict.fromkeys(net.server_rack))
        rk = np.array([racks.index(r) for r in net.server_rack])[srv]
        gpus = pick(sel.racks, len(racks), rk, "racks")
    elif sel.zones is not None:
        zones = sorted(set(net.server_zone.tolist()))
        zk = np.array([zones.index(z) for z in net.server_zone])[srv]
        gpus = pick(sel.zones, len(zones), zk, "zones")
    elif isinstance(sel.gpus, list):
        bad = [v for v in sel.gpus if not 1 <= v <= G]
        if bad:
            raise SpecError([error(src, path + ("gpus",), f"GPU {bad[0]} does not exist", f"1..{G}")])
        gpus = np.array([v - 1 for v in sel.gpus], np.int64)
    else:
        gpus = all_gpus.copy()
    if case.replace:
        mapping = {}
        for k, rp in enumerate(case.replace):
            a = _server_index(net, rp.server, src, ("cases", k, "replace", "server"))
            b = _server_index(net, rp.with_, src, ("cases", k, "replace", "with"))
            mapping[a] = b
        first = {}
        for g in range(G):
            first.setdefault(int(srv[g]), g)
        gpus = np.array([first[mapping[int(srv[g])]] + int(net.gpu_local[g]) if int(srv[g]) in mapping else g for g in gpus], np.int64)
    if sel.per_server:
        gpus = gpus[net.gpu_local[gpus] < sel.per_server]
    if sel.count:
        if sel.count > len(gpus):
            raise SpecError([error(src, path + ("count",), f"asks for {sel.count} GPUs, the selection has {len(gpus)}")])
        gpus = gpus[: sel.count]
    if len(gpus) < at_least:
        raise SpecError([error(src, path, f"the selection holds {len(gpus)} GPU(s)", f"at least {at_least}")])
    return gpus


@dataclass(frozen=True)
class Failures:
    """A case's failures as the compiled fabric takes them: cables cut (link ids), cables at a share of
    their speed, and the servers that are down (:func:`twin.twins.net.topology.degrade` applies them)."""

    dead: frozenset[str] = frozenset()
    scale: tuple[tuple[str, float], ...] = ()
    down_servers: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.dead or self.scale or self.down_servers)


def apply_failures(g: nx.MultiGraph, net0: Net, case: Case, src=None, case_index: int = 0) -> tuple[Net, list[str]]:
    """The compiled fabric with the case's failures applied (``net0`` itself without any), and the GPUs'
    servers that are down."""
    f = failures_of(g, net0, case, src, case_index)
    return (degrade(net0, f.dead, dict(f.scale)) if f else net0), list(f.down_servers)


def failures_of(g: nx.MultiGraph, net0: Net, case: Case, src=None, case_index: int = 0) -> Failures:
    """The case's failures resolved on the design: every reference checked, nothing copied."""
    if not case.failures:
        return Failures()
    links = {k: (u, v) for u, v, k, d in g.edges(keys=True, data=True) if d.get("kind") == "link"}
    dead: set[str] = set()
    scale: dict[str, float] = {}
    down_servers: list[str] = []

    def hit(key: str, capacity: float | None) -> None:
        if key in dead:
            return
        if capacity:
            scale[key] = scale.get(key, 1.0) * capacity
        else:
            dead.add(key)
            scale.pop(key, None)

    for i, f in enumerate(case.failures):
        where = ("cases", case_index, "failures", i)
        if f.link is not None:
            if f.link not in links:
                raise SpecError([error(src, where + ("link",), f"unknown link '{f.link}'", f"a link id such as {next(iter(links), 'L000001')}")])
            hit(f.link, f.capacity)
        elif f.tier is not None:
            keys = [k for u, v, k, d in g.edges(keys=True, data=True) if d.get("tier") == f.tier]
            if not keys:
                raise SpecError([error(src, where + ("tier",), f"no links in tier '{f.tier}'", "e.g. rtsw-ctsw, ctsw-atsw")])
            for k in keys:
                hit(k, f.capacity)
        elif f.plane is not None:  # every cable of a plane: its switches' links (a NIC's port on it included)
            on = {n for n, d in g.nodes(data=True) if d.get("level", -1) >= 1 and d.get("plane") == f.plane - 1}
            if not on:
                planes = 1 + max((d.get("plane", 0) for _, d in g.nodes(data=True) if d.get("level", -1) >= 1), default=0)
                raise SpecError([error(src, where + ("plane",), f"plane {f.plane} does not exist",
                                       f"1..{planes}" if planes > 1 else "a multi-plane fabric (fabric.planes)")])
            for u, v, k, d in g.edges(keys=True, data=True):
                if d.get("kind") == "link" and (u in on or v in on):
                    hit(k, f.capacity)
        elif f.switch is not None:
            if f.switch not in g or g.nodes[f.switch].get("level", -1) < 1:
                raise SpecError([error(src, where + ("switch",), f"unknown switch '{f.switch}'", f"e.g. {net0.switch_ids[-1]}")])
            for _, _, k, d in g.edges(f.switch, keys=True, data=True):
                if d.get("kind") == "link":
                    hit(k, None)
        else:
            s = net0.server_ids[_server_index(net0, f.server, src, where + ("server",))]
            down_servers.append(s)
            for nic in [n for n, d in g.nodes(data=True) if d.get("role") == "nic" and d.get("server") == s]:
                for _, _, k, d in g.edges(nic, keys=True, data=True):
                    if d.get("kind") == "link":
                        hit(k, None)
    return Failures(frozenset(dead), tuple(sorted(scale.items())), tuple(down_servers))


def _collect(found: list[Diagnostic], step: Callable[[], object]) -> None:
    try:
        step()
    except SpecError as e:
        found.extend(e.diagnostics)


def check(design, scn: Scenario, src, g0: nx.MultiGraph, net0: Net) -> None:
    """Raise one :class:`SpecError` with every reference of ``scn`` that does not resolve on the design."""
    found: list[Diagnostic] = []
    workloads = {w.name for w in design.spec.site.workloads} if design is not None else set()
    known = ", ".join(sorted(workloads)) or "a workload of the site"
    if design is None and (scn.jobs or scn.serving or scn.campaign is not None):
        what = "jobs" if scn.jobs else ("serving" if scn.serving else "campaign")
        found.append(error(src, (what,), f"{what} need a site design (its workloads, GPUs and catalog)"))
    for k, j in enumerate(scn.jobs):
        if design is not None and j.workload not in workloads:
            found.append(error(src, ("jobs", k, "workload"), f"unknown workload '{j.workload}'", known))
    for k, sv in enumerate(scn.serving):
        if design is not None and sv.workload is not None and sv.workload not in workloads:
            found.append(error(src, ("serving", k, "workload"), f"unknown workload '{sv.workload}'", known))
    for k, c in enumerate(scn.collectives):
        algs = list(c.compare or [c.algorithm or ("direct" if c.op in ("alltoall", "sendrecv") else "ring")])
        for i, a in enumerate(algs):
            if a not in coll.ALGORITHMS[c.op]:
                where = ("collectives", k) + (("compare", i) if c.compare else ("algorithm",))
                found.append(error(src, where, f"{a} is not an algorithm of {c.op}", ", ".join(coll.ALGORITHMS[c.op])))
    for ci, case in enumerate(scn.cases):
        before = len(found)
        _collect(found, lambda case=case, ci=ci: failures_of(g0, net0, case, src, ci))
        if len(found) > before:
            continue  # the case's selections are read after its failures
        for k, c in enumerate(scn.collectives):
            path = ("collectives", k)
            _collect(found, lambda c=c, case=case, path=path: resolve_ranks(net0, c.ranks, case, src, path + ("ranks",), at_least=2))
            if c.peers is not None:
                _collect(found, lambda c=c, case=case, path=path: resolve_ranks(net0, c.peers, case, src, path + ("peers",)))
    c = scn.campaign
    if c is not None and design is not None:
        _collect(found, lambda: resolve_classes(design.spec.catalog.reliability, c, src))
        if scn.jobs:
            if c.job > len(scn.jobs):
                found.append(error(src, ("campaign", "job"), f"job {c.job} does not exist", f"1..{len(scn.jobs)}"))
            if c.routing is not None and c.routing not in [r.name for r in scn.routing]:
                found.append(error(src, ("campaign", "routing"), f"unknown routing scheme '{c.routing}'", ", ".join(r.name for r in scn.routing)))
        elif c.workload is not None and c.workload not in workloads:
            found.append(error(src, ("campaign", "workload"), f"unknown workload '{c.workload}'", known))
    if found:
        raise SpecError(sorted(dict.fromkeys(found), key=lambda d: (d.line, d.col, d.message)))

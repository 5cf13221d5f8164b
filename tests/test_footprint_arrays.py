"""The reliability twin's footprint read off the fabric's arrays (twin/twins/reliability/arrays.py) is the
footprint a walk of the graph gives: the same servers, NICs, switches per role and cables per tier, for jobs
that fill part of a zone, a whole zone and the whole site, on an AI-zone Clos, a campus and two planes; and
the arrays read from the design's link list are the arrays read from the graph's edges."""

from __future__ import annotations

import networkx as nx
import pytest

from tests.conftest import compiled
from twin.twins.reliability import arrays
from twin.twins.reliability.components import Reach, footprint, server_order


def walked(g: nx.MultiGraph, gpus: int) -> dict:
    """The footprint by the definition, node by node: the first servers in topology order, their NICs, the
    switches reached going up the tiers, every cable between two of them."""
    servers, total = [], 0
    for s in server_order(g):
        if total >= gpus:
            break
        servers.append(s)
        total += g.nodes[s]["gpus"]
    nics = {n for s in servers for n in g.neighbors(s) if g.nodes[n]["role"] == "nic"}
    level = {n: g.nodes[n].get("level", -1) for n in g}
    switches, frontier = set(), {b for n in nics for b in g.neighbors(n) if (level[b] or -1) >= 1}
    while frontier:
        switches |= frontier
        frontier = {b for s in frontier for b in g.neighbors(s) if level[b] > level[s] and b not in switches}
    inside = nics | switches
    tiers: dict[str, list[str]] = {}
    for u, v, k, d in g.edges(keys=True, data=True):
        if d["kind"] == "link" and u in inside and v in inside:
            tiers.setdefault(d["tier"], []).append(k)
    roles: dict[str, list[str]] = {}
    for s in switches:
        roles.setdefault(g.nodes[s]["role"], []).append(s)
    return {"servers": tuple(servers), "nics": len(nics), "switches": {r: tuple(sorted(v)) for r, v in sorted(roles.items())},
            "links": {t: len(v) for t, v in sorted(tiers.items())}, "first_links": {t: min(v) for t, v in sorted(tiers.items())}}


@pytest.mark.parametrize("site", ["lab-2zone", "lab-campus", "lab-2plane"])
def test_the_footprint_off_the_arrays_is_the_footprint_a_graph_walk_gives(site):
    d = compiled(site)
    g = d.fabric.graph
    gpus = d.spec.gpus
    per_server = g.nodes[server_order(g)[0]]["gpus"]
    for n in sorted({per_server, 3 * per_server, gpus // 2, gpus}):
        fp = footprint(g, n)
        want = walked(g, n)
        got = {"servers": fp.servers, "nics": fp.nics, "switches": fp.switches, "links": fp.links, "first_links": fp.first_links}
        assert got == want, (site, n)


def test_arrays_from_the_design_link_list_equal_arrays_from_the_graph():
    d = compiled("lab-2zone")
    g = d.fabric.graph
    a = arrays.GraphArrays(g, d.fabric.links)
    b = arrays.GraphArrays(g)
    assert a.names == b.names and a.roles == b.roles and a.tiers == b.tiers
    assert (a.level == b.level).all() and (a.role == b.role).all()
    mine = sorted(zip(a.keys, a.eu.tolist(), a.ev.tolist(), a.etier.tolist(), a.elink.tolist()))
    theirs = sorted((k, *sorted((u, v)), t, e) for k, u, v, t, e in zip(b.keys, b.eu.tolist(), b.ev.tolist(), b.etier.tolist(), b.elink.tolist()))
    assert sorted((k, *sorted((u, v)), t, e) for k, u, v, t, e in mine) == theirs
    assert len(a.keys) == g.number_of_edges()


def test_a_failure_cuts_the_servers_whose_nics_lose_the_job_on_a_copy_of_the_graph():
    """Reach against networkx's own connected components on the graph with the part removed."""
    d = compiled("lab-2zone")
    g = d.fabric.graph
    fp = footprint(g, d.spec.gpus)
    r = Reach(g, fp)
    nics = [n for n in g if g.nodes[n].get("role") == "nic"]

    def by_networkx(remove_node=None, remove_link=None) -> int:
        h = nx.MultiGraph(g)
        h.remove_nodes_from([n for n in g if g.nodes[n].get("role") == "server"])  # paths run over the fabric only
        if remove_node:
            h.remove_node(remove_node)
        if remove_link:
            h.remove_edges_from([(u, v, k) for u, v, k in h.edges(keys=True) if k == remove_link])
        comps = sorted(nx.connected_components(h), key=lambda c: -sum(1 for n in c if n in set(nics)))
        main = comps[0]
        return len({g.nodes[n]["server"] for n in nics if n not in main})

    cuts = {}
    for role, ids in fp.switches.items():
        cuts[role] = r.servers_cut(node=ids[0])
        assert cuts[role] == by_networkx(remove_node=ids[0]), role
    for tier, first in fp.first_links.items():
        cuts[tier] = r.servers_cut(link=first)
        assert cuts[tier] == by_networkx(remove_link=first), tier
    assert cuts["rtsw"] > 0 and cuts["nic-rtsw"] == 1 and cuts["ctsw"] == 0  # a rack switch takes its rack, a NIC cable its server

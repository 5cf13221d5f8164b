"""The fabric pass's own edge loader (twin/compiler/fabric/graph.py `add_edges`) builds the graph
networkx's `add_edges_from` builds: the same nodes, edges, keys, data and adjacency order."""

from pathlib import Path

import networkx as nx
import pytest

from twin.compiler.fabric.graph import add_edges
from twin.compiler.pipeline import compile_design

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("site", ["lab-2zone", "lab-campus"])
def test_add_edges_is_add_edges_from(site):
    g = compile_design(ROOT / "sites" / f"{site}.yaml", until="fabric").fabric.graph
    edges = [(u, v, k, dict(d)) for u, v, k, d in g.edges(keys=True, data=True)]
    ref, ours = nx.MultiGraph(), nx.MultiGraph()
    for h in (ref, ours):
        h.add_nodes_from(g.nodes(data=True))
    ref.add_edges_from(edges)
    add_edges(ours, edges)
    assert ours.number_of_edges() == g.number_of_edges() > 100
    assert list(ours.edges(keys=True, data=True)) == list(ref.edges(keys=True, data=True))
    # adjacency in the same order at every node (what every later pass iterates)
    assert all(list(ours.adj[n]) == list(ref.adj[n]) for n in ref)
    assert all(ours._adj[n][m] is ours._adj[m][n] for n in ours for m in ours._adj[n])  # one key dict per pair, as networkx keeps


def test_add_edges_refuses_unknown_devices_and_reused_ids():
    g = nx.MultiGraph()
    g.add_nodes_from(["a", "b"])
    with pytest.raises(AssertionError, match="never added"):
        add_edges(g, [("a", "c", "L1", {})])
    with pytest.raises(AssertionError, match="share the id L1"):
        add_edges(g, [("a", "b", "L1", {}), ("b", "a", "L1", {})])


@pytest.mark.parametrize("site", ["lab-2zone-2plane", "lab-campus"])
def test_port_table_is_ports_of_every_device(site):
    # the emitters' one-pass table: for every linked device the same ports, peers and order (link id) as Fabric.ports
    fabric = compile_design(ROOT / "sites" / f"{site}.yaml", until="fabric").fabric
    table = fabric.port_table()
    linked = [n for n in fabric.graph if fabric.graph.degree(n)]
    assert sorted(table) == sorted(linked) and len(linked) > 100
    assert all(list(table[n].items()) == list(fabric.ports(n).items()) for n in linked)
    switches = set(fabric.switches())
    assert fabric.port_table(switches) == {n: table[n] for n in switches if n in table}
    nic = next(n for n, r in fabric.graph.nodes(data="role") if r == "nic")
    assert list(table[nic])[0] == "pcie"  # its host edge (H...) sorts before its cables (L...)

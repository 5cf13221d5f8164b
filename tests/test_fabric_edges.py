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


def test_a_port_used_twice_is_named_at_build():
    from twin.compiler.fabric.graph import Builder, PortReuse

    b = Builder()
    for n in ("nic1", "nic2", "sw"):
        b.node(n, role="nic")
    b.link("nic1", "port1", "sw", "Ethernet1", 400e9, "nic-rtsw")
    b.link("nic2", "port1", "sw", "Ethernet2", 400e9, "nic-rtsw")  # the same port name on another device: fine
    b.link("nic2", "port2", "sw", "Ethernet1", 400e9, "nic-rtsw")
    with pytest.raises(PortReuse, match="sw port Ethernet1 used twice"):
        b.build("ai-zone", "roce", ("nic-rtsw",), ("rtsw",))
    # an a-end too (a NIC's port cabled twice), the first repeat in link order named
    b = Builder()
    for n in ("nic1", "sw", "sw2"):
        b.node(n, role="nic")
    b.link("nic1", "port1", "sw", "Ethernet1", 400e9, "nic-rtsw")
    b.link("sw2", "Ethernet1", "sw", "Ethernet2", 400e9, "rtsw-ctsw")
    b.link("nic1", "port1", "sw2", "Ethernet2", 400e9, "nic-rtsw")
    b.link("sw2", "Ethernet1", "sw", "Ethernet3", 400e9, "rtsw-ctsw")
    with pytest.raises(PortReuse, match="nic1 port port1 used twice"):
        b.build("ai-zone", "roce", ("nic-rtsw",), ("rtsw",))


def test_add_nodes_is_add_nodes_from():
    """The builder hands its node dicts to the graph (add_nodes): the nodes, attributes and order networkx's
    add_nodes_from makes, and a repeated id refused."""
    from twin.compiler.fabric.graph import add_nodes

    g = compile_design(ROOT / "sites" / "lab-campus.yaml", until="fabric").fabric.graph
    nodes = [(n, dict(d)) for n, d in g.nodes(data=True)]
    ref, ours = nx.MultiGraph(), nx.MultiGraph()
    ref.add_nodes_from([(n, dict(d)) for n, d in nodes])
    add_nodes(ours, nodes)
    assert list(ours.nodes(data=True)) == list(ref.nodes(data=True)) and ours.number_of_nodes() > 100
    assert dict(ours.adj) == dict(ref.adj) == {n: {} for n in ref}
    with pytest.raises(AssertionError, match="share an id"):
        add_nodes(nx.MultiGraph(), [("a", {}), ("a", {})])


def test_mismatches_name_a_missing_switch_and_link():
    """The graph-versus-shape proof (synthesis.mismatches) counts roles and cable tiers: one switch and
    one cable fewer are both named, with the counts."""
    from twin.compiler.fabric.graph import Fabric
    from twin.compiler.fabric.synthesis import mismatches

    d = compile_design(ROOT / "sites" / "lab-2zone.yaml", until="fabric")
    f, shape = d.fabric, d.spec.shape
    assert mismatches(shape, f) == []
    g = nx.MultiGraph(f.graph)
    g.remove_node(f.switches()[-1])
    first = f.cables()[0]
    n = sum(1 for lk in f.cables() if lk.tier == first.tier)
    role = f.graph.nodes[f.switches()[-1]]["role"]
    count = sum(1 for s in f.switches() if f.graph.nodes[s]["role"] == role)
    wrong = mismatches(shape, Fabric(g, f.family, f.technology, f.links[1:], f.tiers, f.roles))
    assert f"{role}: the graph has {count - 1} switches, the shape {count}" in wrong
    assert f"{first.tier}: the graph has {n - 1} links, the shape {n}" in wrong


def test_port_book_hands_out_every_port_once_then_refuses():
    """A QM9700 has 32 OSFP cages of two NDR ports: 64 names in port order, then PortsExhausted naming the switch."""
    from twin.compiler.fabric.ports import PortBook, PortsExhausted
    from twin.lang.catalog import builtin

    book = PortBook("leaf-1", builtin().switches["qm9700"])
    taken = [book.take() for _ in range(64)]
    assert taken[:3] == ["1/1", "1/2", "2/1"] and taken[-1] == "32/2" and len(set(taken)) == 64
    with pytest.raises(PortsExhausted, match="leaf-1: all 64 ports are in use"):
        book.take()

"""A compiled fabric with cables cut or slowed, without compiling the graph again.

A scenario's failures (a link, a tier, a switch, a server's NICs) cut cables or run them at a share of
their speed. Copying a 24K-GPU graph and compiling it again costs seconds per case and per campaign
failure mode; the cut fabric differs from the whole one only in which arcs exist, so :func:`degrade`
keeps every index of the compiled :class:`~twin.twins.net.topology.Net` and recomputes what depends on
the arcs: each NIC's first live up- and down-arc (as a compile of the cut graph picks them: cables in
link-id order), the leaves and their host numbering, and the BFS distances and ECMP groups over the
live arcs. A cut arc keeps its slot but belongs to no group and no NIC, so no flow is routed on it.

>>> import networkx as nx
>>> from twin.twins.net.topology import compile_graph
>>> g = nx.MultiGraph()
>>> for s, lvl in (("leaf1", 1), ("leaf2", 1), ("spine1", 2), ("spine2", 2)): g.add_node(s, level=lvl)
>>> for r in (1, 2):
...     _ = g.add_node(f"srv{r}", role="server", gpus=1, zone=0, rack=r)
...     _ = g.add_node(f"nic{r}", role="nic", server=f"srv{r}", gpu=0, level=0)
...     _ = g.add_edge(f"nic{r}", f"leaf{r}", key=f"N{r}", kind="link", speed=400e9, length=2.0)
...     for s in (1, 2): _ = g.add_edge(f"leaf{r}", f"spine{s}", key=f"U{r}{s}", kind="link", speed=400e9, length=30.0)
>>> net = compile_graph(g)
>>> len(net.group(0, 1)), len(degrade(net, {"U11"}, {}).group(0, 1))  # leaf1 -> leaf2 over 2 spines, then 1
(2, 1)
>>> int(degrade(net, {"N1"}, {}).nic_up[0])  # a NIC whose cable is cut is down
-1
"""

from __future__ import annotations

import dataclasses

import numpy as np

from twin.twins.net.leafclass import class_routes
from twin.twins.net.planes import first_live
from twin.twins.net.topology import Net


def degrade(net: Net, dead: set[str] | frozenset[str], scale: dict[str, float]) -> Net:
    """``net`` with the cables ``dead`` (link ids) cut and those of ``scale`` at that share of their speed."""
    if not dead and not scale:
        return net
    L, S = net.n_link_arcs, net.n_switches
    links = net.arc_link[:L]
    alive = np.ones(net.n_arcs, bool)
    alive[:L] = [lk not in dead for lk in links]
    cap = net.arc_cap.copy()
    if scale:
        cap[:L] *= np.array([scale.get(lk, 1.0) for lk in links])
    tails, heads = net.arc_tail, net.arc_head
    n_nics = len(net.nic_ids)

    def first_arc(from_nic: bool) -> np.ndarray:
        """Each NIC's first live arc to (from_nic) or from its leaf, -1 without one."""
        arcs = np.flatnonzero(alive[:L])
        nic_end, sw_end = (tails[arcs], heads[arcs]) if from_nic else (heads[arcs], tails[arcs])
        ok = (nic_end >= S) & (sw_end >= 0) & (sw_end < S)
        arcs, nic = arcs[ok], nic_end[ok] - S
        out = np.full(n_nics, -1, np.int64)
        first = np.unique(nic, return_index=True)[1]  # arcs are in link-id order, as the compile meets them
        out[nic[first]] = arcs[first]
        return out

    nic_up, nic_down = first_arc(True), first_arc(False)
    nic_leaf = np.where(nic_up >= 0, heads[np.maximum(nic_up, 0)], -1)
    nic_host = np.zeros(n_nics, np.int64)
    seen: dict[int, int] = {}
    for i, leaf in enumerate(nic_leaf.tolist()):
        nic_host[i] = seen.get(leaf, 0)
        seen[leaf] = nic_host[i] + 1
    leaves = np.unique(nic_leaf[nic_leaf >= 0])
    dest_of_switch = np.full(S, -1, np.int64)
    dest_of_switch[leaves] = np.arange(len(leaves))
    live_tails = np.where(alive[:L], tails[:L], -1)
    routes, gptr, garcs = class_routes(S, live_tails, heads[:L], leaves)
    out = dataclasses.replace(net, nic_leaf=nic_leaf, nic_up=nic_up, nic_down=nic_down, nic_host=nic_host, arc_cap=cap,
                              leaf_of_dest=leaves, dest_of_switch=dest_of_switch, routes=routes,
                              group_ptr=gptr, group_arcs=garcs, notes=list(net.notes))
    if net.gpu_ports is not None:  # a multi-plane fabric: a GPU's NIC is its first port still up
        out = dataclasses.replace(out, gpu_nic=first_live(out))
    return out

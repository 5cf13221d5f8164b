"""Multi-plane fabrics in the network twin: a NIC's ports, each on its own plane, and each flow split over them.

A NIC of a multi-plane fabric (``twin.compiler.resolve.planes``) has one port per plane (or several);
the twin compiles each port as a NIC of its own (``compile_graph(split_ports=True)``), keeps every GPU's ports in
``Net.gpu_ports`` and routes every transfer as equal shares over the ports that are up at both ends,
port j to port j (the same plane): :func:`split`. NCCL does the same with a multi-port NIC, one
net device per port with its channels spread over them. A plane that fails takes its port out of
every split, so the surviving planes carry the whole transfer: with two planes, losing one halves
a GPU's network bandwidth and every GPU stays reachable.
"""

from __future__ import annotations

import numpy as np


def port_table(gpu_ports: list[list[int]]) -> np.ndarray | None:
    """(GPUs, ports) NIC indices, -1 padded; None when every GPU's NIC has one port."""
    width = max((len(p) for p in gpu_ports), default=1)
    if width <= 1:
        return None
    out = np.full((len(gpu_ports), width), -1, np.int64)
    for k, p in enumerate(gpu_ports):
        out[k, :len(p)] = p
    return out


def split(net, s_gpu: np.ndarray, d_gpu: np.ndarray, nbytes: np.ndarray):
    """Each network transfer (source GPU, destination GPU, bytes) as shares over the planes whose ports
    are up at both ends: (transfer index, source NIC, destination NIC, bytes) per share. A transfer with
    no such plane keeps its GPUs' first ports (routing then reports it unreachable).

    >>> from types import SimpleNamespace as NS
    >>> net = NS(gpu_ports=np.array([[0, 1], [2, 3]]), gpu_nic=np.array([0, 2]), nic_leaf=np.array([5, -1, 6, 7]))
    >>> [a.tolist() for a in split(net, np.array([0]), np.array([1]), np.array([8.0]))]  # plane 2 down at the source
    [[0], [0], [2], [8.0]]
    """
    if net.gpu_ports is None:
        return np.arange(len(s_gpu)), net.gpu_nic[s_gpu], net.gpu_nic[d_gpu], nbytes
    sp, dp = net.gpu_ports[s_gpu], net.gpu_ports[d_gpu]
    up = (sp >= 0) & (dp >= 0)
    up &= (net.nic_leaf[np.maximum(sp, 0)] >= 0) & (net.nic_leaf[np.maximum(dp, 0)] >= 0)
    none = ~up.any(axis=1)
    up[none, 0] = True  # nothing up: the first port, which routing finds unreachable
    live = up.sum(axis=1)
    t, j = np.nonzero(up)
    return t, sp[t, j], dp[t, j], nbytes[t] / live[t]


def first_live(net) -> np.ndarray:
    """Each GPU's first port that is up (its first port when none is): ``Net.gpu_nic`` after failures."""
    if net.gpu_ports is None:
        return net.gpu_nic
    p = net.gpu_ports
    up = (p >= 0) & (net.nic_leaf[np.maximum(p, 0)] >= 0)
    first = np.where(up.any(axis=1), up.argmax(axis=1), 0)
    return p[np.arange(len(p)), first]

"""Relays: the GPU a network transfer is forwarded through over NVLink before it enters the network.

On a rail-only fabric the rails never meet, so a transfer to another rail of another server is forwarded
inside the source's NVLink domain to the GPU on the destination's rail (:func:`relays`; the rail-only
paper, arXiv 2307.12169). NCCL's PXN does the same by choice on rail-optimized fabrics (:func:`pxn_relays`).
Routing (:mod:`twin.twins.net.routing`) prepends the relay's NVLink arcs to the transfer's network path.
"""

from __future__ import annotations

import numpy as np

from twin.twins.net.topology import Net


def relays(net: Net, src_gpu: np.ndarray, dst_gpu: np.ndarray) -> np.ndarray:
    """The GPU each network transfer is forwarded through, -1 where the network reaches the
    destination directly.

    Why: on a rail-only fabric (arXiv 2307.12169) the rails never meet, so GPU i of one server has
    no network path to GPU j != i of another. The paper forwards such traffic inside the source's
    high-bandwidth (NVLink) domain to the GPU on the destination's rail, which then sends it over
    that rail (NCCL's PXN does the same on rail-optimized fabrics). The relay is the source-server
    GPU with the destination's local index when its NIC reaches the destination's leaf, else the
    first source-server GPU whose NIC does. Without NVLink, or with no such GPU, the destination is
    unreachable and routing raises."""
    src_gpu = np.asarray(src_gpu, np.int64)
    dst_gpu = np.asarray(dst_gpu, np.int64)
    out = np.full(len(src_gpu), -1, np.int64)
    if not len(src_gpu) or not len(net.leaf_of_dest):
        return out

    def reaches(g: np.ndarray, d: np.ndarray) -> np.ndarray:
        sl = net.nic_leaf[net.gpu_nic[g]]
        dl = net.nic_leaf[net.gpu_nic[d]]
        ok = (sl >= 0) & (dl >= 0)
        t = net.dest_of_switch[np.where(ok, dl, 0)]
        return ok & (t >= 0) & (net.routes.dist_at(np.where(t >= 0, t, 0), np.where(ok, sl, 0)) >= 0)

    need = ~reaches(src_gpu, dst_gpu) & (net.nic_leaf[net.gpu_nic[src_gpu]] >= 0) & (net.nic_leaf[net.gpu_nic[dst_gpu]] >= 0)
    if not need.any():
        return out
    if (net.gpu_nvl_out[src_gpu[need]] < 0).any():
        k = int(np.flatnonzero(need & (net.gpu_nvl_out[src_gpu] < 0))[0])
        raise ValueError(f"GPU {int(dst_gpu[k])} is unreachable from GPU {int(src_gpu[k])}: no network path (their rails never meet) and "
                         "no NVLink to forward over (the chassis has no nvlink_bandwidth)")
    if net.gpu_domain is not None:
        return _domain_relays(net, src_gpu, dst_gpu, need, reaches, out)
    srv = net.gpu_server
    first = np.searchsorted(srv, srv[src_gpu[need]])  # GPUs are numbered server by server
    width = np.bincount(srv, minlength=int(srv.max()) + 1)[srv[src_gpu[need]]]
    cand = first + np.minimum(net.gpu_local[dst_gpu[need]], width - 1)
    ok = reaches(cand, dst_gpu[need]) & (net.gpu_nvl_out[src_gpu[need]] >= 0)
    idx = np.flatnonzero(need)
    out[idx[ok]] = cand[ok]
    for k in np.flatnonzero(~ok):  # rare: the rail index differs from the GPU index; search the server
        s, d = int(src_gpu[idx[k]]), int(dst_gpu[idx[k]])
        if net.gpu_nvl_out[s] < 0:
            continue
        peers = np.arange(first[k], first[k] + width[k])
        hit = peers[reaches(peers, np.full(len(peers), d))]
        if len(hit):
            out[idx[k]] = hit[0]
    return out


def domain_peers(net: Net, src_gpu: np.ndarray, dst_gpu: np.ndarray) -> np.ndarray:
    """The GPU of each source's NVLink domain on the destination's rail (``Net.gpu_domain`` and
    ``gpu_rail``), -1 where the domain has none.

    >>> class N: gpu_domain = np.array([0, 0, 1, 1]); gpu_rail = np.array([1, 0, 0, 1])
    >>> domain_peers(N, np.array([0, 2, 3]), np.array([2, 0, 1])).tolist()
    [1, 3, 2]
    """
    rails = int(net.gpu_rail.max(initial=0)) + 1
    key = net.gpu_domain * rails + net.gpu_rail
    order = np.argsort(key, kind="stable")
    want = net.gpu_domain[src_gpu] * rails + net.gpu_rail[dst_gpu]
    at = np.minimum(np.searchsorted(key[order], want), len(order) - 1)
    return np.where(key[order][at] == want, order[at], -1)


def _domain_relays(net: Net, src_gpu, dst_gpu, need, reaches, out) -> np.ndarray:
    """:func:`relays` where NVLink domains span servers: the source domain's GPU on the destination's
    rail, else the first GPU of the domain whose NIC reaches the destination."""
    idx = np.flatnonzero(need & (net.gpu_nvl_out[src_gpu] >= 0))
    cand = domain_peers(net, src_gpu[idx], dst_gpu[idx])
    ok = (cand >= 0) & reaches(np.maximum(cand, 0), dst_gpu[idx])
    out[idx[ok]] = cand[ok]
    for k in np.flatnonzero(~ok):  # rare: no GPU of that rail in the domain; search the domain
        peers = np.flatnonzero(net.gpu_domain == net.gpu_domain[src_gpu[idx[k]]])
        hit = peers[reaches(peers, np.full(len(peers), dst_gpu[idx[k]]))]
        if len(hit):
            out[idx[k]] = hit[0]
    return out


def pxn_relays(net: Net, src_gpu: np.ndarray, dst_gpu: np.ndarray) -> np.ndarray:
    """PXN: the source-server GPU with the destination's local index, for transfers between servers
    whose GPUs differ in local index (another rail) and whose server has NVLink; -1 elsewhere (where a
    domain spans servers: the source domain's GPU on the destination's rail)."""
    out = np.full(len(src_gpu), -1, np.int64)
    if net.gpu_domain is not None:
        cross = (net.gpu_domain[src_gpu] != net.gpu_domain[dst_gpu]) & (net.gpu_rail[src_gpu] != net.gpu_rail[dst_gpu])
        cross &= net.gpu_nvl_out[src_gpu] >= 0
        out[cross] = domain_peers(net, src_gpu[cross], dst_gpu[cross])
        return out
    cross = (net.gpu_server[src_gpu] != net.gpu_server[dst_gpu]) & (net.gpu_local[src_gpu] != net.gpu_local[dst_gpu])
    cross &= net.gpu_nvl_out[src_gpu] >= 0
    if not cross.any():
        return out
    srv = net.gpu_server[src_gpu[cross]]
    first = np.searchsorted(net.gpu_server, srv)  # GPUs are numbered server by server
    width = np.bincount(net.gpu_server, minlength=int(net.gpu_server.max()) + 1)[srv]
    loc = net.gpu_local[dst_gpu[cross]]
    ok = loc < width
    idx = np.flatnonzero(cross)[ok]
    out[idx] = first[ok] + loc[ok]
    return out

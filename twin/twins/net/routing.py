"""Routing schemes: which arcs each queue pair of a transfer crosses, as a sparse flow x arc matrix.

A *transfer* is "GPU a sends B bytes to GPU b"; the collective library splits it evenly over ``qps``
queue pairs (NCCL_IB_QPS_PER_CONNECTION), each pinned to one path by the switches' hashes. Schemes:

- ``ecmp``: per-switch hash of the 5-tuple; QPs differ only by the UDP source port RoCEv2 derives
  from the QP numbers.
- ``e-ecmp``: the same plus the destination QP (Meta's enhanced ECMP).
- ``static``: Meta's earlier path pinning: at every switch the member is the destination's host index
  (its position among its leaf's NICs) modulo the group size, so hosts at the same position in two
  racks share uplinks.
- ``ftree``: OpenSM's ``ftree`` engine, replayed (:mod:`twin.twins.net.ftree`): each switch forwards on the
  entry OpenSM would program for the destination NIC.
- ``spray``: ideal packet spraying / adaptive routing: each switch splits traffic evenly over every
  next hop towards the destination; the upper bound a hash can approach.
- ``adaptive``: InfiniBand adaptive routing (OpenSM's ``ar_ftree``/``ar_updn`` on Quantum switches): each switch
  sends each packet to the least loaded port of its minimal-hop group towards the destination; on a tree
  whose links are equal that splits every transfer evenly over the group, as ``spray`` does.
- ``te``: an optimal traffic-engineered split (min-max link load LP, see :mod:`twin.twins.net.te`); it is a
  reference number, not a per-flow route.

On a rail-only fabric the rails never meet: a transfer to another rail on another server is
forwarded over NVLink to the source server's GPU on the destination's rail, which sends it over that
rail (:func:`twin.twins.net.relays.relays`; the rail-only paper's scheme, and NCCL's PXN). Its flows then cross both
NVLink arcs and the network path, pipelined as PXN does. Where the NVLink domain spans several servers
(the paper's 256-GPU domain of 8-GPU servers: ``Net.gpu_domain``), the domain takes the server's part:
GPUs of one domain talk over NVLink, and the relay is the source domain's GPU on the destination's rail.

Flows with the same path and size are aggregated into one *class* with a count: their max-min rates
are equal, so the fluid model solves one variable per class. A 24K-GPU ring step has 393K QP flows and
~250K classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csc_matrix

from twin.lang import limits
from twin.lang.site.models import ADAPTIVE_ENGINES, FIVE_TUPLE
from twin.twins.net import hashing, pairsplit, planes, sprayclasses
from twin.twins.net.flowpaths import choice_base, class_matrix, first_classes, flows_per_transfer, hashed_paths, row_classes
from twin.twins.net.relays import pxn_relays, relays
from twin.twins.net.topology import Net

SCHEMES = ("ecmp", "e-ecmp", "static", "ftree", "spray", "adaptive", "te")


@dataclass(frozen=True)
class Scheme:
    """One routing configuration to compare (a scenario lists several side by side)."""

    name: str
    kind: str = "e-ecmp"
    qps: int = 16
    hash_function: str = "xxmix"
    seed: int = 1
    per_switch: bool = True
    hash_fields: tuple[str, ...] = FIVE_TUPLE
    ecmp_width: int | None = None

    def fields(self) -> list[str]:
        f = [x for x in self.hash_fields if x != "roce-dst-qp"]
        if self.kind == "e-ecmp":
            f.append("roce-dst-qp")
        return f


def site_scheme(fabric) -> Scheme:
    """The scheme a site's switches run, as its spec (``fabric:``) states it: on InfiniBand, OpenSM's routing
    engine (an adaptive engine, ``ar_*``: ``adaptive``; ``ftree``: its tables replayed; any other: ``static``); on Ethernet,
    the hash fields (``roce-dst-qp``: ``e-ecmp`` with the site's QPs per GPU pair; else ``ecmp``).

    >>> from twin.lang.site.models import Infiniband, Routing
    >>> class F: technology = "infiniband"; infiniband = Infiniband(routing_engine="ar_ftree"); routing = Routing()
    >>> s = site_scheme(F); s.name, s.kind, s.qps
    ('ar_ftree', 'adaptive', 1)
    """
    r = fabric.routing
    if getattr(fabric.technology, "value", fabric.technology) == "infiniband":
        engine = fabric.infiniband.routing_engine
        return Scheme(engine, "adaptive" if engine in ADAPTIVE_ENGINES else "ftree" if engine == "ftree" else "static", 1)
    fields = tuple(f for f in r.hash_fields if f != "roce-dst-qp")
    if "roce-dst-qp" in r.hash_fields:
        return Scheme(f"e-ecmp, {r.qps_per_gpu_pair} QP", "e-ecmp", r.qps_per_gpu_pair, hash_fields=fields, ecmp_width=r.ecmp_width)
    return Scheme(f"ecmp, {r.qps_per_gpu_pair} QP", "ecmp", r.qps_per_gpu_pair, hash_fields=fields, ecmp_width=r.ecmp_width)


@dataclass
class Routed:
    """Flow classes of one phase: ``A[arc, class]`` = members x fraction of a member's rate on the arc."""

    A: csc_matrix
    size: np.ndarray  # bytes per member flow
    count: np.ndarray  # members per class
    latency: np.ndarray  # path latency of the class (s)
    n_flows: int
    notes: list[str] = field(default_factory=list)
    # virtual arcs after the net's (lumped private arcs, twin/twins/net/sprayclasses.py ``lumped``): their
    # capacities, and the real arcs each stands for (``lump_arcs[i]`` is one of virtual row ``lump_row[i]``)
    extra_cap: np.ndarray = field(default_factory=lambda: np.zeros(0))
    lump_arcs: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    lump_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def route(net: Net, src_gpu: np.ndarray, dst_gpu: np.ndarray, nbytes: np.ndarray, scheme: Scheme,
          conns: int = 1, pxn: bool = False, lump: int | None = None) -> Routed:
    """Route every transfer of a phase under ``scheme``; intra-server transfers take NVLink.

    Each transfer runs over ``conns`` connections (NCCL channels), each with the scheme's QPs, so a
    hashed transfer is ``conns x qps`` flows. With ``pxn``, a transfer to another rail of another
    server first crosses NVLink to the source server's GPU on the destination's rail (NCCL's PXN and
    rail-aligned rings), so the network hop stays on one rail."""
    src_gpu = np.asarray(src_gpu, np.int64)
    dst_gpu = np.asarray(dst_gpu, np.int64)
    nbytes = np.asarray(nbytes, float)
    keep = (src_gpu != dst_gpu) & (nbytes > 0)
    src_gpu, dst_gpu, nbytes = src_gpu[keep], dst_gpu[keep], nbytes[keep]
    same = net.domain[src_gpu] == net.domain[dst_gpu]
    nvl = same & (net.gpu_nvl_out[src_gpu] >= 0)
    parts = []
    if nvl.any():
        parts.append(_nvlink(net, src_gpu[nvl], dst_gpu[nvl], nbytes[nvl]))
    netw = ~nvl
    if netw.any():
        sg, dg = src_gpu[netw], dst_gpu[netw]
        rel = relays(net, sg, dg)
        if pxn:
            rel = np.where(rel >= 0, rel, pxn_relays(net, sg, dg))
        via = np.where(rel >= 0, rel, sg)
        pre = np.full((len(sg), 2), -1, np.int64)
        fw = rel >= 0
        pre[fw, 0] = net.gpu_nvl_out[sg[fw]]
        pre[fw, 1] = net.gpu_nvl_in[rel[fw]]
        t, s_nic, d_nic, b = planes.split(net, via, dg, nbytes[netw])  # one share per plane up at both ends
        pre = pre[t]
        if scheme.kind in ("spray", "adaptive", "te"):
            taken = np.r_[net.gpu_nvl_out[src_gpu[nvl]], net.gpu_nvl_in[dst_gpu[nvl]]]  # the NVLink part's arcs
            lumped = sprayclasses.lumped(net, s_nic, d_nic, b, pre, taken) if lump is not None and len(s_nic) >= lump else None
            if lumped is not None:
                A, size, count, lat, extra, arcs, row = lumped
                parts.append(Routed(A, size, count, lat, len(s_nic), [], extra, arcs, row))
            else:
                parts.append(_spray(net, s_nic, d_nic, b, pre))
        elif scheme.kind in ("ecmp", "e-ecmp", "static", "ftree"):
            parts.append(_hashed(net, s_nic, d_nic, b, scheme, pre, conns))
        else:
            raise ValueError(f"unknown routing scheme {scheme.kind!r}; expected one of {', '.join(SCHEMES)}")
    return _concat(net, parts)


def _nvlink(net: Net, s: np.ndarray, d: np.ndarray, b: np.ndarray) -> Routed:
    k = len(s)
    rows = np.stack([net.gpu_nvl_out[s], net.gpu_nvl_in[d]], axis=1).reshape(-1)
    cols = np.repeat(np.arange(k), 2)
    A = csc_matrix((np.ones(2 * k), (rows, cols)), shape=(net.n_arcs, k))
    return Routed(A, b, np.ones(k), np.zeros(k), k)


def _hashed(net: Net, s_nic, d_nic, b, scheme: Scheme, pre: np.ndarray | None = None, conns: int = 1) -> Routed:
    """Hashed QP flows aggregated into classes; ``pre`` (transfers x 2, -1 = none) holds the NVLink
    arcs of a forwarded transfer (see :func:`relays`), prepended to each of its QPs' paths."""
    qps = flows_per_transfer(scheme, conns)
    limits.check("hashed_flows", len(s_nic) * qps, f"QP flows of {len(s_nic):,} hashed transfers ({qps} each) in one phase")
    forwarded = pre is not None and (pre >= 0).any()
    per = b / qps  # bytes of each member flow, per transfer
    size_id = np.unique(per, return_inverse=True)[1].reshape(-1)
    choices = np.zeros(len(s_nic) * qps, np.int64)
    P = hashed_paths(net, s_nic, d_nic, scheme, conns, choices=choices)
    # classes of identical (NVLink prefix, path, size): transfers of the same prefix, NICs and size
    # differ only by their flows' choices (twin/twins/net/flowpaths.py)
    kind = np.stack(([pre[:, 0], pre[:, 1]] if forwarded else []) + [s_nic, d_nic, size_id], axis=1)
    _, kind = np.unique(kind, axis=0, return_inverse=True)
    kind = np.asarray(kind).reshape(-1)
    span = choice_base(net, scheme) ** (P.shape[1] - 2)
    if len(kind) and int(kind.max()) == len(kind) - 1:  # every transfer its own kind: classes inside transfers
        first, count = row_classes(choices.reshape(len(kind), qps))
    elif len(kind) and int(kind.max()) < (1 << 62) // span:
        first, _, count = first_classes(np.repeat(kind, qps) * span + choices)
    else:  # too many kinds x choices for one int64: the paths themselves, row by row
        key = np.concatenate(([np.repeat(pre, qps, axis=0)] if forwarded else []) + [P, np.repeat(size_id, qps)[:, None]], axis=1)
        first, _, count = _row_classes(key)
    del choices
    Pc = P[first]
    if forwarded:
        Pc = np.concatenate([pre[first // qps], Pc], axis=1)
    valid = Pc >= 0
    lat = np.where(valid, net.arc_latency[np.where(valid, Pc, 0)], 0.0).sum(axis=1)
    return Routed(class_matrix(net.n_arcs, Pc, count), per[first // qps], count.astype(float), lat, len(P))


_ROW_MIX = np.random.default_rng(20240805).integers(1, 2**63, size=64, dtype=np.uint64) | np.uint64(1)


def _row_classes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Identical rows of ``key`` as classes: (first row of each class, class of each row, members),
    classes in order of first appearance. Rows are keyed by a 64-bit mix (a 1-D sort instead of a
    lexicographic one, ~5x faster on a million flows), checked exactly; an exact sort is the fallback."""
    if key.shape[1] <= len(_ROW_MIX):
        # column by column (a sum mod 2**64 in any order): no (rows x columns) uint64 copy of the key
        mix = np.zeros(len(key), np.uint64)
        with np.errstate(over="ignore"):
            for c in range(key.shape[1]):
                mix += key[:, c].astype(np.uint64) * _ROW_MIX[c]
        h = hashing.fmix64(mix)
        del mix
        _, first, inv, count = np.unique(h, return_index=True, return_inverse=True, return_counts=True)
        inv = np.asarray(inv).reshape(-1)
        if not all(np.array_equal(key[first, c][inv], key[:, c]) for c in range(key.shape[1])):
            _, first, inv, count = np.unique(key, axis=0, return_index=True, return_inverse=True, return_counts=True)
            inv = np.asarray(inv).reshape(-1)
    else:
        _, first, inv, count = np.unique(key, axis=0, return_index=True, return_inverse=True, return_counts=True)
        inv = np.asarray(inv).reshape(-1)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inv], count[order]


def _spray(net: Net, s_nic, d_nic, b, pre: np.ndarray | None = None) -> Routed:
    src_leaf = net.nic_leaf[s_nic]
    t = net.dest_of_switch[net.nic_leaf[d_nic]]
    pair_key = src_leaf * max(1, len(net.leaf_of_dest)) + t
    pairs, pinv = np.unique(pair_key, return_inverse=True)
    pinv = pinv.reshape(-1)
    T = max(1, len(net.leaf_of_dest))
    # the splits held per pair of leaf classes first (a DAG's shared middle once), so that what the transfers would
    # cross is counted, and refused past its limit, before it is laid out per pair and per transfer
    sp = pairsplit.split(net, pairs // T, pairs % T)
    limits.check("spray_entries", int(sp.entries()[pinv].sum()), f"arcs crossed by {len(s_nic):,} sprayed transfers of one phase")
    p_arcs_a, p_frac_a, p_ptr_a = pairsplit.expand(sp)  # spray.table's arcs and fractions, bit for bit
    w = net.arc_latency[p_arcs_a] * p_frac_a
    # mean over the split = per-hop latency sum; each pair's own sum (numpy's pairwise order)
    p_lat = [float(w[a:b].sum()) for a, b in zip(p_ptr_a[:-1].tolist(), p_ptr_a[1:].tolist())]
    A = spray_columns(net.n_arcs, net.nic_up[s_nic], net.nic_down[d_nic], pre, pinv, p_arcs_a, p_frac_a, p_ptr_a)
    K = len(s_nic)
    lat = net.arc_latency[net.nic_up[s_nic]] + np.asarray(p_lat)[pinv] + net.arc_latency[net.nic_down[d_nic]]
    return Routed(A, np.asarray(b, float), np.ones(K), lat, K)


ENTRIES = 1 << 23  # a sprayed phase's split entries laid out at a time (whole columns): their index arrays only


def spray_columns(n_arcs: int, up: np.ndarray, down: np.ndarray, pre: np.ndarray | None, pinv: np.ndarray,
                  p_arcs: np.ndarray, p_frac: np.ndarray, p_ptr: np.ndarray) -> csc_matrix:
    """The sprayed transfers' matrix, column k: its NIC's up-arc, its pair's split (``p_arcs``/``p_frac`` from
    ``p_ptr[pinv[k]]``), the destination NIC's down-arc, then its NVLink hops before the network (``pre``, -1 where
    none), each at 1 but the split's fractions. Written straight into the compressed arrays, a slice of columns at
    a time, then put in canonical order (rows sorted in each column): the matrix ``csc_matrix((vals, (rows,
    cols)))`` makes of the same entries, without its (rows, columns) copies at a million GPUs."""
    K = len(up)
    n = p_ptr[pinv + 1] - p_ptr[pinv]
    has_pre = pre is not None and bool((pre >= 0).any())
    counts = 2 + n + ((pre >= 0).sum(axis=1) if has_pre else 0)
    nnz = int(counts.sum())
    idx = np.int32 if max(nnz, n_arcs, K) < np.iinfo(np.int32).max else np.int64
    indptr = np.zeros(K + 1, idx)
    np.cumsum(counts, out=indptr[1:])
    start = indptr[:-1].astype(np.int64)
    indices = np.empty(nnz, idx)
    data = np.ones(nnz)
    indices[start] = up
    indices[start + 1 + n] = down
    if has_pre:
        fr, fc = np.nonzero(pre >= 0)
        rank = (np.cumsum(pre >= 0, axis=1) - 1)[fr, fc]
        indices[start[fr] + 2 + n[fr] + rank] = pre[fr, fc]
    cum = np.cumsum(n)
    cuts = np.unique(np.r_[0, np.searchsorted(cum, np.arange(ENTRIES, int(n.sum()), ENTRIES)), K])  # ~ENTRIES apiece
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        m = n[a:b]
        rep = np.repeat(np.arange(a, b), m)
        offs = np.arange(len(rep)) - np.repeat(np.cumsum(m) - m, m)
        mid = p_ptr[pinv[rep]] + offs
        pos = start[rep] + 1 + offs
        indices[pos] = p_arcs[mid]
        data[pos] = p_frac[mid]
        del rep, offs, mid, pos
    A = csc_matrix((data, indices, indptr), shape=(n_arcs, K))
    A.sum_duplicates()
    return A


def capacity(routed: Routed, cap: np.ndarray) -> np.ndarray:
    """The capacity of every row of ``routed.A``: the net's arcs' ``cap``, then the virtual arcs'."""
    return cap if not len(routed.extra_cap) else np.concatenate([cap, routed.extra_cap])


def _concat(net: Net, parts: list[Routed]) -> Routed:
    from scipy.sparse import hstack

    if any(len(p.extra_cap) for p in parts):  # virtual rows: each part's after the previous parts'
        extra = sum(len(p.extra_cap) for p in parts)
        off, fixed = 0, []
        for p in parts:
            A = p.A.tocoo()
            r = np.where(A.row >= net.n_arcs, A.row + off, A.row)
            A = csc_matrix((A.data, (r, A.col)), shape=(net.n_arcs + extra, A.shape[1]))
            fixed.append(Routed(A, p.size, p.count, p.latency, p.n_flows, p.notes, p.extra_cap, p.lump_arcs, p.lump_row + off))
            off += len(p.extra_cap)
        parts = fixed
    if not parts:
        return Routed(csc_matrix((net.n_arcs, 0)), np.zeros(0), np.zeros(0), np.zeros(0), 0)
    if len(parts) == 1:
        return parts[0]
    return Routed(
        hstack([p.A for p in parts], format="csc"),
        np.concatenate([p.size for p in parts]),
        np.concatenate([p.count for p in parts]),
        np.concatenate([p.latency for p in parts]),
        sum(p.n_flows for p in parts),
        extra_cap=np.concatenate([p.extra_cap for p in parts]),
        lump_arcs=np.concatenate([p.lump_arcs for p in parts]),
        lump_row=np.concatenate([p.lump_row for p in parts]),
    )


def link_load(net: Net, routed: Routed, rates: np.ndarray | None = None) -> np.ndarray:
    """Bytes (or bytes/s, given rates per member) each arc carries; with no rates, offered bytes."""
    x = routed.size if rates is None else rates
    y = routed.A @ x
    if not len(routed.extra_cap):
        return y
    out = y[:net.n_arcs].copy()
    per = np.bincount(routed.lump_row, minlength=len(routed.extra_cap))  # real arcs per virtual one
    out[routed.lump_arcs] += y[net.n_arcs + routed.lump_row] / per[routed.lump_row]
    return out

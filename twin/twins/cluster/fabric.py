"""The shared fabric: concurrent jobs whose collectives cross the same links slow each other.

Each job of more than one server runs its data-parallel collective (a ring AllReduce over its GPUs, in
the order the scheduler lists its servers: NCCL's rail rings, :func:`twin.twins.net.collectives.plan`)
on the compiled fabric, sprayed over every shortest path (the flow model's ideal share, without hash
collisions). Its *footprint* is the load that collective puts on each switch-to-switch arc at full
speed, as a share of the arc's capacity: ``u(a) = bytes(a) / cap(a) / T`` with ``T`` the job's own
bottleneck (``max bytes/cap`` over every arc it crosses, its NICs included), so ``u = 1`` on a link the
job alone fills. Footprints are cached by placement.

A job spends a share ``w`` of its step in that collective (``fabric.comm_share``, or the job twin's own for
a job that runs a scenario's workload: :mod:`twin.twins.cluster.profiles`). Its neighbours are
counted at their share (the chance that their collective runs at the same moment: a mean field), so on
arc ``a`` the load seen by job ``j`` while it communicates is ``u_j(a) + sum_{k != j} w_k u_k(a)``, and
its collective stretches by the worst of its arcs::

    C_j = max(1, max_a [u_j(a) + U(a) - w_j u_j(a)]),   U(a) = sum_k w_k u_k(a)
    step stretch s_j = 1 + w_j (C_j - 1)

Two identical jobs (``w = 1``) forced across one uplink that each alone fills get half of it each:
``C = 2``, their communication time doubles. Jobs in separate zones of a fabric that is non-blocking
inside a zone share no loaded arc and slow each other by nothing.

Only arcs where the jobs' raw loads ``R(a) = sum_k u_k(a)`` exceed 1 can stretch anyone
(``u_j + U - w_j u_j <= R``), so an event that leaves every arc it touches at or below 1 re-times no
other job: inside a non-blocking zone nothing is recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HOT = 1.0 + 1e-9


@dataclass(frozen=True)
class Footprint:
    arcs: np.ndarray  # the switch-to-switch arcs the job's collective loads
    u: np.ndarray  # its load on each, as a share of the arc's capacity at the job's own full speed


class SharedFabric:
    """Running jobs' footprints on the compiled fabric and the stretch each one's step gets from them."""

    def __init__(self, net, server_ids: tuple[str, ...], comm_share: float, cache: int = 4096):
        from twin.twins.net.load import fabric_arcs

        self.net = net
        index = {s: i for i, s in enumerate(net.server_ids)}
        missing = [s for s in server_ids if s not in index]
        if missing:
            raise ValueError(f"the fabric has no server {missing[0]!r}")
        order = np.argsort(net.gpu_server, kind="stable")
        bounds = np.searchsorted(net.gpu_server[order], np.arange(len(net.server_ids) + 1))
        self.gpus = [order[bounds[index[s]]:bounds[index[s] + 1]] for s in server_ids]
        self.fabric = fabric_arcs(net)
        self.w = float(comm_share)
        self.U = np.zeros(net.n_arcs)
        self.R = np.zeros(net.n_arcs)
        self.on: dict[int, Footprint] = {}
        self.s: dict[int, float] = {}
        self.wj: dict[int, float] = {}  # each running job's own share (default: w)
        self.cache: dict[tuple[int, ...], Footprint] = {}
        self.limit = cache
        self.routed = 0
        # the ring's hops read straight off the spray tables where a hop is one NIC to one NIC of one plane
        # between two NVLink domains (else every transfer is routed: multi-plane NICs, rack-scale domains)
        G = {len(x) for x in self.gpus}
        self.direct = net.planes == 1 and net.gpu_domain is None and len(G) == 1
        self.pairs: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def footprint(self, servers: tuple[int, ...]) -> Footprint:
        fp = self.cache.get(servers)
        if fp is None:
            fp = self._ring(servers) if self.direct and len(servers) > 1 else self._route(servers)
            if len(self.cache) >= self.limit:
                self.cache.pop(next(iter(self.cache)))
            self.cache[servers] = fp
        return fp

    def _route(self, servers: tuple[int, ...]) -> Footprint:
        from twin.twins.net import collectives, routing
        from twin.twins.net.load import SPRAY

        net = self.net
        self.routed += 1
        ranks = np.concatenate([self.gpus[s] for s in servers])
        (ph,), _ = collectives.plan(net, "allreduce", "ring", ranks)
        r = routing.route(net, ph.src, ph.dst, ph.frac, SPRAY, ph.conns, ph.pxn)
        share = routing.link_load(net, r) / net.arc_cap
        top = float(share.max()) if len(share) else 0.0
        arcs = np.flatnonzero(self.fabric & (share > 0))
        return Footprint(arcs, share[arcs] / top if top > 0 else share[arcs])

    def _ring(self, servers: tuple[int, ...]) -> Footprint:
        """:meth:`_route`'s footprint without building the flows: NCCL's rail rings cross from each server to the
        next on one rail (GPU ``i`` to GPU ``i``; with an odd count of servers the ring's closing hop goes from
        GPU ``i`` to ``i + 1``, :func:`twin.twins.net.phases.rings`), every hop the same bytes, each sprayed
        by its (leaf, destination) table, the tables cached."""
        from twin.twins.net import spray

        net = self.net
        self.routed += 1
        nic = net.gpu_nic[np.stack([self.gpus[s] for s in servers])]
        dst = np.roll(nic, -1, axis=0)
        if len(servers) % 2:
            dst[-1] = np.roll(nic[0], -1)
        src, dst = nic.ravel(), dst.ravel()
        top = float(max((1.0 / net.arc_cap[net.nic_up[src]]).max(), (1.0 / net.arc_cap[net.nic_down[dst]]).max()))
        sl, dl = net.nic_leaf[src], net.nic_leaf[dst]
        cross = sl != dl
        S = net.n_switches
        keys, count = np.unique(sl[cross] * S + dl[cross], return_counts=True)
        new = [k for k in keys.tolist() if k not in self.pairs]
        if new:
            nk = np.array(new, np.int64)
            arcs, frac, ptr = spray.table(net, nk // S, net.dest_of_switch[nk % S])
            for i, k in enumerate(new):
                self.pairs[k] = (arcs[ptr[i]:ptr[i + 1]], frac[ptr[i]:ptr[i + 1]])
        if not len(keys):
            return Footprint(np.zeros(0, np.int64), np.zeros(0))
        parts = [self.pairs[k] for k in keys.tolist()]
        arcs = np.concatenate([a for a, _ in parts])
        w = np.concatenate([f * c for (_, f), c in zip(parts, count.tolist())])
        arcs, inv = np.unique(arcs, return_inverse=True)
        share = np.bincount(inv.reshape(-1), weights=w, minlength=len(arcs)) / net.arc_cap[arcs]
        top = max(top, float(share.max()))
        keep = self.fabric[arcs]
        return Footprint(arcs[keep], share[keep] / top)

    def stretch_of(self, j: int) -> float:
        fp, w = self.on[j], self.wj[j]
        if not len(fp.arcs):
            return 1.0
        c = float((fp.u * (1.0 - w) + self.U[fp.arcs]).max())
        return 1.0 + w * (c - 1.0) if c > HOT else 1.0

    def add(self, j: int, servers: tuple[int, ...], w: float | None = None) -> dict[int, float]:
        """Job ``j`` starts on ``servers``, its collective ``w`` of its step (default: the stated share): the
        stretches that changed (``j``'s own always)."""
        fp = self.footprint(servers)
        self.on[j] = fp
        self.wj[j] = w = self.w if w is None else float(w)
        self.U[fp.arcs] += w * fp.u
        self.R[fp.arcs] += fp.u
        return self._changed(j, fp, hot=self.R[fp.arcs] > HOT)

    def remove(self, j: int) -> dict[int, float]:
        """Job ``j`` stops: the stretches of the others that changed."""
        fp = self.on.pop(j, None)
        self.s.pop(j, None)
        w = self.wj.pop(j, self.w)
        if fp is None:
            return {}
        hot = self.R[fp.arcs] > HOT
        self.U[fp.arcs] -= w * fp.u
        self.R[fp.arcs] -= fp.u
        return self._changed(None, fp, hot)

    def _changed(self, j: int | None, fp: Footprint, hot: np.ndarray) -> dict[int, float]:
        out = {}
        if j is not None:
            self.s[j] = out[j] = self.stretch_of(j)
        others = [k for k, o in self.on.items() if k != j and len(o.arcs)] if hot.any() else []
        if not others:
            return out
        # every other job's stretch at once: the max of u (1 - w) + U over its arcs, compared with the one it has
        fps = [self.on[k] for k in others]
        n = np.array([len(o.arcs) for o in fps])
        arcs = np.concatenate([o.arcs for o in fps])
        w = np.array([self.wj[k] for k in others])
        v = np.concatenate([o.u for o in fps]) * np.repeat(1.0 - w, n) + self.U[arcs]
        c = np.maximum.reduceat(v, np.r_[0, np.cumsum(n)[:-1]])
        new = np.where(c > HOT, 1.0 + w * (c - 1.0), 1.0)
        for k, x in zip(others, new.tolist()):
            if x != self.s.get(k, 1.0):
                self.s[k] = out[k] = x
        return out


def retime(R, t: float, changed: dict[int, float]) -> None:
    """New stretches on the clock of a run ``R`` (:class:`twin.twins.cluster.engine.Run`): each running job's
    end moves with its remaining running time (:meth:`~twin.twins.cluster.engine.Run.restretch`)."""
    for j, s in changed.items():
        if j in R.running:
            R.restretch(j, t, sf=s)

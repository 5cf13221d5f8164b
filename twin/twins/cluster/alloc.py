"""Where a job goes: the servers' free GPUs, gang allocation and topology-aware packing.

A job of at most one server's GPUs takes one server: the fullest in-service server it fits on (best
fit, so partly used servers fill before empty ones are broken into). A larger job takes whole free
servers, all at once (gang): with ``topology`` packing inside one AI zone, the zone with the fewest
whole free servers that still holds it (so the big holes stay for big jobs), else across zones, most
free first; ``first-fit`` takes the first free servers in server order.

A server is in service, down (drained for repair) or a spare (held back, brought in when one goes down).
Counters kept on every change let the scheduler reject a job that cannot fit in O(1).

>>> from twin.twins.cluster.site import uniform
>>> a = Allocator(uniform(zones=2, racks_per_zone=2, servers_per_rack=2, gpus_per_server=8), "topology")
>>> a.allocate(3), a.allocate(4), a.allocate(2)      # best fit: the 3-GPU job's server takes the 4, then a fresh one
([(0, 3)], [(0, 4)], [(1, 2)])
>>> a.allocate(24)                                   # three whole servers, one zone: zone 1 (zone 0 has two)
[(4, 8), (5, 8), (6, 8)]
>>> a.fits(24), a.fits(32), a.whole_free, a.free_in_service
(True, False, 3, 31)
"""

from __future__ import annotations

import numpy as np

IN_SERVICE, DOWN, SPARE = 0, 1, 2


class Allocator:
    def __init__(self, site, packing: str, spares: int = 0, seed: int = 1):
        self.G = G = site.gpus_per_server
        self.S = S = site.servers
        self.zone = site.zone
        self.Z = site.zones
        self.topology = packing == "topology"
        self.rng = np.random.default_rng([seed, 38]) if packing == "random" else None
        self.free = np.full(S, G, np.int64)
        self.state = np.zeros(S, np.int8)
        if spares:
            self.state[S - min(spares, S):] = SPARE  # the last servers in topology order
        self.level = [0] * (G + 1)  # in-service servers by free GPUs
        n_in = int((self.state == IN_SERVICE).sum())
        self.level[G] = n_in
        self.free_in_service = n_in * G
        self.free_down = 0
        self.free_spare = (S - n_in) * G

    @property
    def whole_free(self) -> int:
        return self.level[self.G]

    def fits(self, g: int) -> bool:
        """Can a job of ``g`` GPUs start now (by shape, not only by count)?"""
        G = self.G
        if g <= G:
            lv = self.level
            return any(lv[x] for x in range(g, G + 1))
        return self.level[G] * G >= g

    def _set(self, s: int, new: int) -> None:
        old = int(self.free[s])
        self.free[s] = new
        st = self.state[s]
        if st == IN_SERVICE:
            self.level[old] -= 1
            self.level[new] += 1
            self.free_in_service += new - old
        elif st == DOWN:
            self.free_down += new - old
        else:
            self.free_spare += new - old

    def allocate(self, g: int) -> list[tuple[int, int]] | None:
        G = self.G
        if not self.fits(g):
            return None
        if g <= G:
            lv = self.level
            best = next(x for x in range(g, G + 1) if lv[x])
            s = int(np.flatnonzero((self.free == best) & (self.state == IN_SERVICE))[0])
            self._set(s, best - g)
            return [(s, g)]
        k = -(-g // G)
        whole = np.flatnonzero((self.free == G) & (self.state == IN_SERVICE))
        if self.topology and self.Z > 1:
            per = np.bincount(self.zone[whole], minlength=self.Z)
            ok = np.flatnonzero(per >= k)
            if len(ok):
                z = int(ok[np.argmin(per[ok])])
                pick = whole[self.zone[whole] == z][:k]
            else:
                order = np.argsort(-per, kind="stable")
                rank = np.empty(self.Z, np.int64)
                rank[order] = np.arange(self.Z)
                pick = whole[np.argsort(rank[self.zone[whole]], kind="stable")][:k]
        elif self.rng is not None:
            pick = self.rng.choice(whole, size=k, replace=False)
        else:
            pick = whole[:k]
        out = []
        for s in pick.tolist():
            self._set(s, 0)
            out.append((s, G))
        return out

    def release(self, alloc: list[tuple[int, int]]) -> None:
        for s, g in alloc:
            self._set(s, int(self.free[s]) + g)

    def set_state(self, s: int, st: int) -> None:
        old = self.state[s]
        if old == st:
            return
        f = int(self.free[s])
        if old == IN_SERVICE:
            self.level[f] -= 1
            self.free_in_service -= f
        elif old == DOWN:
            self.free_down -= f
        else:
            self.free_spare -= f
        self.state[s] = st
        if st == IN_SERVICE:
            self.level[f] += 1
            self.free_in_service += f
        elif st == DOWN:
            self.free_down += f
        else:
            self.free_spare += f

    def zones_of(self, alloc: list[tuple[int, int]]) -> int:
        return len({int(self.zone[s]) for s, _ in alloc})

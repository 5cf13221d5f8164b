"""PFC headroom per port and per switch: the one model the SONiC buffer profiles and the distance verdict read.

A lossless priority group must absorb, on every port, what keeps arriving after it sends PAUSE:
:func:`twin.physics.pfc_xoff` at the port's link speed over its cable, with the site's MTU. The cable
is the link's ordered length in ``design.cabling`` rounded up to whole metres, the cable length a SONiC
profile is named by (``pg_lossless_400000_12060m_profile``): a 3 m DAC reserves less than a 12 km
route between buildings. A switch holds its ports' xoff in one shared headroom pool of at most
:data:`twin.physics.HEADROOM_SHARE` of its packet buffer (:func:`pool_cap`); the pool a SONiC switch is
configured with is the sum of its ports' xoff up to that cap. Lossless holds on every port of a switch
when the sum fits under the cap; beyond it the headroom is oversubscribed and a PAUSE on enough ports
at once drops packets.

Worked example (lab-campus, b2-atsw-01, Minipack2 with a 64 MiB buffer: a 16 MiB pool): 4 links to b3
at 12,060 m reserve 50 GB/s x (2 x 12,060 m x 4.9 ns/m + 1.5 us) + 18,432 B = 6,002,832 B each, 24 MB
together: more than the pool, so the switch does not hold lossless.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from twin.physics import HEADROOM_SHARE, pfc_xoff


def cable_metres(length_m: float) -> int:
    """A cable's length as a headroom profile names it: whole metres, rounded up (at least 1).

    >>> cable_metres(3.0), cable_metres(12059.2), cable_metres(0.5)
    (3, 12060, 1)
    """
    return max(1, math.ceil(length_m - 1e-9))


@lru_cache(maxsize=1024)
def port_xoff(speed: float, metres: int, mtu: int) -> int:
    """Bytes one port's lossless priority group reserves (the SONiC profile's ``xoff``).

    >>> port_xoff(400e9, 100, 9216)   # 50 GB/s x (2 x 100 m x 4.9 ns/m + 1.5 us) + 2 x 9216
    142432
    """
    return pfc_xoff(speed, float(metres), mtu)


def pool_cap(buffer_bytes: float) -> int:
    """The largest shared headroom pool of a switch: HEADROOM_SHARE of its packet buffer.

    >>> pool_cap(64 * 2**20) == 2**24
    True
    """
    return int(buffer_bytes * HEADROOM_SHARE)


@dataclass(frozen=True)
class Headroom:
    """Per cable (the cable plan's order) and per switch (``names``)."""

    ids: tuple[str, ...]  # link ids of the cables
    speed: np.ndarray  # bit/s per cable
    metres: np.ndarray  # whole metres per cable (:func:`cable_metres`)
    xoff: np.ndarray  # bytes one end port of each cable reserves (:func:`port_xoff`)
    names: tuple[str, ...]  # switches
    a: np.ndarray  # switch index of each cable's a end, -1 where it is not a switch (a NIC, an attachment)
    b: np.ndarray
    ports: np.ndarray  # used ports per switch
    need: np.ndarray  # bytes per switch: the sum of its ports' xoff
    pool: np.ndarray  # bytes per switch: :func:`pool_cap` of its buffer (NaN where the catalog gives none)

    @property
    def configured(self) -> np.ndarray:
        """The shared headroom pool each switch is configured with: its ports' xoff, at most the cap."""
        return np.fmin(self.need, self.pool)

    @property
    def switch_fits(self) -> np.ndarray:
        """Per switch: the pool holds every port's xoff at once (True where the buffer is unknown)."""
        return ~(self.need > self.pool)

    @property
    def fits(self) -> np.ndarray:
        """Per cable: lossless holds at both ends."""
        ok = self.switch_fits
        return np.where(self.a >= 0, ok[np.maximum(self.a, 0)], True) & np.where(self.b >= 0, ok[np.maximum(self.b, 0)], True)


def plan(spec, fabric, cabling) -> Headroom:
    """The headroom of every cable and switch of a compiled design (spec, fabric graph, cable plan)."""
    mtu = spec.fabric.qos.mtu
    cables = fabric.cables()
    if [c.id for c in cables] != list(cabling.ids):
        raise ValueError("the cable plan does not follow the fabric's cables")
    names = tuple(fabric.switches())
    index = {n: i for i, n in enumerate(names)}
    g = fabric.graph
    speed = np.array([c.speed for c in cables], float)
    # a site has a handful of stock lengths and speeds: each distinct value worked out once, then spread
    lengths, at = np.unique(np.asarray(cabling.stock, float), return_inverse=True)
    metres = np.array([cable_metres(x) for x in lengths.tolist()], np.int64)[at.reshape(-1)]
    speeds, s_at = np.unique(speed, return_inverse=True)
    whole, m_at = np.unique(metres, return_inverse=True)
    pairs, at = np.unique(s_at.reshape(-1) * len(whole) + m_at.reshape(-1), return_inverse=True)
    xoff = np.array([port_xoff(speeds[k // len(whole)].item(), int(whole[k % len(whole)]), mtu) for k in pairs.tolist()],
                    np.int64)[at.reshape(-1)]
    a = np.array([index.get(c.a, -1) for c in cables], np.int64)
    b = np.array([index.get(c.b, -1) for c in cables], np.int64)
    n = len(names)
    ports = np.bincount(a[a >= 0], minlength=n) + np.bincount(b[b >= 0], minlength=n)
    need = (np.bincount(a[a >= 0], weights=xoff[a >= 0], minlength=n)
            + np.bincount(b[b >= 0], weights=xoff[b >= 0], minlength=n)).astype(np.int64)
    buffers = [spec.switch(g.nodes[x]["model"]).buffer for x in names]
    pool = np.array([np.nan if buf is None else pool_cap(buf) for buf in buffers])
    return Headroom(tuple(cabling.ids), speed, metres, xoff, names, a, b, ports, need, pool)

"""How an AI zone's uplinks go round the tier above: the CTSWs of a zone take its RTSW uplinks as one run,
and each CTSW's uplinks go round the ATSWs of its plane, starting where the previous zone's stopped
(the rules are :mod:`twin.compiler.resolve.shape`'s; the fabric pass builds exactly these links)."""

from __future__ import annotations

import math


def ctsw_downlinks(zone_uplinks: int, ctsws: int) -> tuple[int, ...]:
    """Downlinks of each CTSW when a zone's ``zone_uplinks`` RTSW uplinks go round ``ctsws`` CTSWs."""
    q, r = divmod(zone_uplinks, ctsws)
    return tuple(q + (1 if j < r else 0) for j in range(ctsws))


def ctsw_uplink_targets(zone: int, j: int, uplinks: int, ctsws: int, atsws: int) -> list[int]:
    """ATSW index of each uplink of CTSW ``j`` of ``zone``.

    With ``P = gcd(ctsws, atsws)`` planes, CTSW j uses plane ``j mod P`` of ``atsws / P`` ATSWs,
    starting where CTSW j of the previous zone stopped, so every ATSW of a plane gets the same share.

    >>> ctsw_uplink_targets(0, 3, 2, 16, 16), ctsw_uplink_targets(1, 0, 3, 4, 2)
    ([3, 3], [0, 0, 0])
    """
    planes = math.gcd(ctsws, atsws)
    per_plane = atsws // planes
    start = (j // planes + zone) * uplinks
    return [(j % planes) * per_plane + (start + t) % per_plane for t in range(uplinks)]


def atsw_downlinks(zones: int, ctsw_up: tuple[int, ...], atsws: int) -> tuple[int, ...]:
    """Links into each of ``atsws`` ATSWs from ``zones`` AI zones whose CTSW j has ``ctsw_up[j]`` uplinks.

    >>> atsw_downlinks(2, (3, 3), 2)
    (6, 6)
    """
    c = len(ctsw_up)
    per = [0] * atsws
    for z in range(zones):
        for j in range(c):
            for k in ctsw_uplink_targets(z, j, ctsw_up[j], c, atsws):
                per[k] += 1
    return tuple(per)

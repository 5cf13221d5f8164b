"""Rack pairs: where a system that fills two racks (GB200 NVL36x2, ``rack_scale.racks: 2``) can stand.

Its two racks share one NVLink domain over short copper cables, so they stand side by side in one row:
two neighbouring positions free for GPU racks, not split by a cross-aisle. A row's free positions pair
up from its start, run by run (a run ends at a taken position or a cross-aisle); a run of odd length
leaves its last position to the network racks.

>>> from types import SimpleNamespace as H
>>> pair_slots(H(cross_aisle_every=4), [(1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 7), (1, 8), (2, 1)])
[((1, 1), (1, 2)), ((1, 3), (1, 4)), ((1, 7), (1, 8))]
"""

from __future__ import annotations

from collections.abc import Iterable


def aisle_between(h, slot: int) -> bool:
    """A cross-aisle runs between ``slot`` and ``slot + 1``."""
    every = getattr(h, "cross_aisle_every", None)
    return bool(every) and slot % every == 0


def pair_slots(h, free: Iterable[tuple[int, int]]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Neighbouring (row, slot) pairs among the ``free`` positions of hall ``h``, in reading order."""
    out = []
    left: tuple[int, int] | None = None
    for pos in sorted(free):
        if left is not None and pos == (left[0], left[1] + 1) and not aisle_between(h, left[1]):
            out.append((left, pos))
            left = None
        else:
            left = pos
    return out


def adjacent(h, a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Positions ``a`` and ``b`` stand side by side in one row of hall ``h`` (no cross-aisle between)."""
    (ra, sa), (rb, sb) = sorted((a, b))
    return ra == rb and sb == sa + 1 and not aisle_between(h, sa)

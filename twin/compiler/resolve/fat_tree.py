"""Textbook folded-Clos (fat-tree) wiring at the index level, and its three families.

A full-bisection L-tier tree of radix k (h = k/2) has ``m = ceil(N/h)`` switches in each of the tiers
1..L-1 (h ports down, h up) and ``ceil(m/2)`` at the top (all k ports down): (2L-1)N/k switches in
all, N links per tier boundary (derived from the k-ary fat-tree of [al-fares08]).

Wiring (k-ary L-tree, folded at the top). Between tiers t and t+1 (t+1 < L) the switches fall into
blocks of ``B = h^t`` consecutive indices (a pod at t = 1); switch at offset o of a block of s
switches sends uplink u to offset ``(o + u * h^(t-1)) mod s`` of the same block. In a full block this
is the canonical "same position, every digit" pattern; in the last, partial block it still gives
every upper switch exactly h downlinks.

Into the top tier: tier L-1 switch i sits at position r of pod j (pods of ``P = h^(L-2)``
switches). Positions are grouped into classes of g; a class owns ``C = g * pods/2`` top switches and
numbers its up-ports pod by pod, ``x = (j*g + s)*h + u`` (s = position within the class), sending
port x to top ``x mod C`` of the class. Consecutive port numbers land on consecutive tops, so:

- a switch's h up-ports reach h distinct tops whenever C >= h: no parallel links;
- the ports of a class are one contiguous range of length C*k, so every top gets exactly k links;
- a pod's g*h ports of a class cover all C tops (C <= g*h since pods <= 2h), so every top reaches
  every pod and the down path top -> pod -> leaf always exists.

g is the smallest divisor of P with C >= h (:func:`top_classes`). In a full tree (pods = 2h) that is
g = 1, C = h: the canonical core groups (position r's spines meet only core group r). With fewer pods
a class of one position would own fewer than h tops and a switch would have to send several links to
the same top: meta-24k-ib (24 pods of 32 on 64-port QM9700, 384 cores) would give each spine 12
distinct cores for 32 up-ports; with g = 4 every spine reaches 32 distinct cores, with the same switch
and link counts. When pods are partial or odd in number, all positions form one class over every top
switch (``x = i*h + u``): the same properties for every full pod; a partial last pod reaches only
as many tops as it has up-ports (the down path to it runs through those), and with an odd leaf count
the top tier is h links short of full, the gap spread over its switches (floor or ceil of the mean).

Only a 2-tier tree with fewer than 2h leaves keeps parallel links: its top tier has fewer than h
switches, so a leaf cannot reach more than that many distinct spines; it reaches all of them. The
sizing (:mod:`twin.compiler.resolve.tree_sizing`) makes that count a divisor of h (at least m/2), so every leaf
sends the same number of links to every spine (16 spines for 24 leaves of h = 32: 2 links each, where
the fewest, 12, would give 3 links to some spines and 2 to others).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.compiler.resolve.sizing import fat_tree_tiers


@dataclass(frozen=True)
class TreeShape:
    endpoints: int
    radix: int
    tiers: int
    switches: tuple[int, ...]  # per tier, bottom-up

    @property
    def total(self) -> int:
        return sum(self.switches)


def shape(endpoints: int, radix: int, tiers: int | None = None, leaves: int | None = None, top: int | None = None) -> TreeShape:
    """Switch counts per tier; ``leaves`` overrides ceil(N/h) (rail-optimized groups whole servers),
    ``top`` the top tier's ceil(m/2) (:mod:`twin.compiler.resolve.tree_sizing` chooses it).

    >>> shape(2048, 64).switches, shape(24576, 64).switches, shape(768, 64, top=16).switches
    ((64, 32), (768, 768, 384), (24, 16))
    """
    L = tiers or fat_tree_tiers(endpoints, radix)
    if L == 1:
        return TreeShape(endpoints, radix, 1, (math.ceil(endpoints / radix),))
    m = leaves if leaves is not None else math.ceil(endpoints / (radix // 2))
    return TreeShape(endpoints, radix, L, (m,) * (L - 1) + (top if top is not None else math.ceil(m / 2),))


def boundary(ts: TreeShape, t: int) -> list[tuple[int, int]]:
    """(lower index, upper index) of every link between tier t and t+1 (1-based t), in the order of
    lower switch, then uplink number, so ports can be handed out in that order."""
    h = ts.radix // 2
    m = ts.switches[0]
    out: list[tuple[int, int]] = []
    if t + 1 < ts.tiers:
        block, step = h**t, h ** (t - 1)
        for i in range(m):
            start = (i // block) * block
            s = min(block, m - start)
            o = i - start
            out.extend((i, start + (o + u * step) % s) for u in range(h))
        return out
    step = h ** (ts.tiers - 2)
    g, size = top_classes(ts)
    for i in range(m):
        j, r = divmod(i, step)
        c, s = divmod(r, g)
        x = (j * g + s) * h
        out.extend((i, c * size + (x + u) % size) for u in range(h))
    return out


def top_classes(ts: TreeShape) -> tuple[int, int]:
    """(positions per class g, top switches per class) for the boundary into the top tier.

    A class of g pod positions owns ``g * pods / 2`` top switches; g is the smallest divisor of the
    pod size that gives a class at least h tops, so every up-port of a switch below the top reaches
    its own top switch. When pods are not whole or do not pair up, or the top tier is not exactly
    half of the tier below (a pinned or even-split count), all positions form one class over every
    top switch: consecutive up-ports on consecutive tops, so a switch's h up-ports split evenly over
    a top tier whose size divides h.

    >>> top_classes(shape(24576, 64)), top_classes(shape(65536, 64)), top_classes(shape(4096, 64))
    ((4, 48), (1, 32), (16, 32))
    """
    h = ts.radix // 2
    step = h ** (ts.tiers - 2)
    pods, rest = divmod(ts.switches[0], step)
    if rest == 0 and pods % 2 == 0 and step * pods // 2 == ts.switches[-1]:
        for g in range(1, step + 1):
            if step % g == 0 and g * pods // 2 >= h:
                return g, g * pods // 2
    return step, ts.switches[-1]


def role_names(tiers: int) -> tuple[str, ...]:
    """Switch roles bottom-up: leaf, spine, core for up to 3 tiers; super/hyper in between above."""
    names = {1: ("leaf",), 2: ("leaf", "spine"), 3: ("leaf", "spine", "core"), 4: ("leaf", "spine", "super", "core")}
    return names.get(tiers, ("leaf", "spine") + tuple(f"super{i}" for i in range(1, tiers - 2)) + ("core",))

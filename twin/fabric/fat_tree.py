"""Textbook folded-Clos (fat-tree) wiring at the index level, and its three families.

A full-bisection L-tier tree of radix k (h = k/2) has ``m = ceil(N/h)`` switches in each of the tiers
1..L-1 (h ports down, h up) and ``ceil(m/2)`` at the top (all k ports down): (2L-1)N/k switches in
all, N links per tier boundary (facts.md, Rail-only section).

Wiring (k-ary L-tree, folded at the top). Between tiers t and t+1 (t+1 < L) the switches fall into
blocks of ``B = h^t`` consecutive indices (a pod at t = 1); switch at offset o of a block of s
switches sends uplink u to offset ``(o + u * h^(t-1)) mod s`` of the same block. In a full block this
is the canonical "same position, every digit" pattern; in the last, partial block it still gives
every upper switch exactly h downlinks. Into the top tier, tier L-1 switch i = j * h^(L-2) + r (pod
j, position r) owns a class of ``pods/2`` top switches per position r and sends uplink u to top
``r * pods/2 + (j * h + u) mod (pods/2)``: every top gets exactly k links and every switch reaches
min(h, pods/2) distinct tops (all h in a full tree: the canonical core groups). When the pods do not
split evenly, uplink u goes to ``((i + u * h^(L-2)) mod m) mod ceil(m/2)`` (two h-port canonical tops
folded into one k-port switch), which keeps the port counts exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .sizing import fat_tree_tiers


@dataclass(frozen=True)
class TreeShape:
    endpoints: int
    radix: int
    tiers: int
    switches: tuple[int, ...]  # per tier, bottom-up

    @property
    def total(self) -> int:
        return sum(self.switches)


def shape(endpoints: int, radix: int, tiers: int | None = None, leaves: int | None = None) -> TreeShape:
    """Switch counts per tier; ``leaves`` overrides ceil(N/h) (rail-optimized groups whole servers).

    >>> shape(2048, 64).switches, shape(24576, 64).switches
    ((64, 32), (768, 768, 384))
    """
    L = tiers or fat_tree_tiers(endpoints, radix)
    if L == 1:
        return TreeShape(endpoints, radix, 1, (math.ceil(endpoints / radix),))
    m = leaves if leaves is not None else math.ceil(endpoints / (radix // 2))
    return TreeShape(endpoints, radix, L, (m,) * (L - 1) + (math.ceil(m / 2),))


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
    top = ts.switches[-1]
    step = h ** (ts.tiers - 2)
    pods, rest = divmod(m, step)
    if rest == 0 and pods % 2 == 0:
        # class r (position in pod) owns tops r*pods/2 ...; each pod spreads over min(h, pods/2) of them
        half = pods // 2
        for i in range(m):
            j, r = divmod(i, step)
            out.extend((i, r * half + (j * h + u) % half) for u in range(h))
        return out
    for i in range(m):
        out.extend((i, ((i + u * step) % m) % top) for u in range(h))
    return out


def role_names(tiers: int) -> tuple[str, ...]:
    """Switch roles bottom-up: leaf, spine, core for up to 3 tiers; super/hyper in between above."""
    names = {1: ("leaf",), 2: ("leaf", "spine"), 3: ("leaf", "spine", "core"), 4: ("leaf", "spine", "super", "core")}
    return names.get(tiers, ("leaf", "spine") + tuple(f"super{i}" for i in range(1, tiers - 2)) + ("core",))

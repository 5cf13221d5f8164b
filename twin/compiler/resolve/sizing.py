"""Closed-form sizing of the fabric families.

The fabric pass builds the real graph; these formulas are what validation and the feasibility check
use before a graph exists, and what the tests hold the graph to (textbook fat-tree sizing).
"""

from __future__ import annotations

import math


def fat_tree_tiers(endpoints: int, radix: int) -> int:
    """Fewest tiers of a full-bisection fat-tree of ``radix``-port switches for ``endpoints``.

    An L-tier tree serves at most 2 * (k/2)^L endpoints (k for L = 1).

    >>> fat_tree_tiers(2048, 64), fat_tree_tiers(24576, 64)
    (2, 3)
    """
    if endpoints <= radix:
        return 1
    tiers = 2
    while fat_tree_capacity(radix, tiers) < endpoints:
        tiers += 1
        if tiers > 8:
            break
    return tiers


def fat_tree_capacity(radix: int, tiers: int) -> int:
    """Endpoints an L-tier full-bisection fat-tree of radix k can serve."""
    if tiers == 1:
        return radix
    return 2 * (radix // 2) ** tiers


def fat_tree_switches(endpoints: int, radix: int, tiers: int) -> int:
    """(2L-1)N/k switches, the top tier at half size (its switches use all ports downwards)."""
    if tiers == 1:
        return math.ceil(endpoints / radix)
    half = radix // 2
    leaves = math.ceil(endpoints / half)
    return leaves * (tiers - 1) + math.ceil(leaves / 2)

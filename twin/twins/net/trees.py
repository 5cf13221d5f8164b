"""NCCL's double binary tree (Sanders et al.; NCCL 2.4): parents of every rank in the two trees.

Why two trees: in one binary tree the leaves only receive and the interior nodes carry twice the
data; NCCL runs two trees where most interior nodes of one are leaves of the other, so every node
sends and receives about the same, and each tree carries half the message.

>>> btree_parents(8).tolist()
[-1, 2, 4, 2, 0, 6, 4, 6]
"""

from __future__ import annotations

import numpy as np

from twin.twins.net.phases import Phase


def btree_parents(n: int) -> np.ndarray:
    """Parent of each rank in NCCL's binary tree (root 0, parent by the lowest set bit), -1 at root."""
    par = np.full(n, -1, np.int64)
    for r in range(1, n):
        bit = r & -r
        up = (r ^ bit) | (bit << 1)
        if up >= n:
            up = r ^ bit
        par[r] = up
    return par


def dtree_parents(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The two trees of NCCL's double binary tree: the second mirrors (even n) or shifts (odd n) the
    first, so most nodes are a leaf in one tree and interior in the other."""
    a = btree_parents(n)
    if n % 2 == 0:
        m = lambda r: n - 1 - r  # noqa: E731
    else:
        m = lambda r: (r + 1) % n  # noqa: E731
        inv = lambda r: (r - 1) % n  # noqa: E731
    b = np.full(n, -1, np.int64)
    for r in range(n):
        pr = a[m(r)]
        if pr >= 0:
            b[r] = (n - 1 - pr) if n % 2 == 0 else inv(pr)
    return a, b


def tree_depth(par: np.ndarray) -> int:
    """Longest path from a rank to the root.

    >>> tree_depth(btree_parents(16))
    4
    """
    depth = 0
    for r in range(len(par)):
        d, x = 0, r
        while par[x] >= 0:
            x = par[x]
            d += 1
        depth = max(depth, d)
    return depth


def tree_groups(S: np.ndarray, conns: int) -> Phase:
    """The double binary tree all-reduce of every group at once: ``S[k, j, c]`` is group k's c-th rank on its
    j-th server. The same transfers, in the same order, as the collectives module's tree plan made group
    by group and concatenated: per group, each tree's child-to-parent and parent-to-child hops per channel
    across servers, then each server's NVLink chain per channel, both ways."""
    G, m, C = S.shape
    ta, tb = dtree_parents(m)
    src, dst, frac = [], [], []
    for par in (ta, tb):
        child = np.flatnonzero(par >= 0)
        for c in range(C):
            a, b = S[:, child, c], S[:, par[child], c]
            src += [a, b]
            dst += [b, a]
            frac += [np.full(a.shape, 1.0 / (2 * C))] * 2
    if C > 1:
        ch = np.stack([np.roll(S, -c, axis=2) for c in range(C)], axis=2)  # (G, m, c, C): channel c's chain per server
        src.append(np.stack([ch[..., 1:], ch[..., :-1]], axis=3).reshape(G, -1))
        dst.append(np.stack([ch[..., :-1], ch[..., 1:]], axis=3).reshape(G, -1))
        frac.append(np.full(src[-1].shape, 1.0 / C))
    inter = max(tree_depth(ta), tree_depth(tb))
    intra = C - 1 if C > 1 else 0
    cat = lambda xs: np.concatenate(xs, axis=1).reshape(-1)  # noqa: E731 - group-major, as group by group
    return Phase(cat(src), cat(dst), cat(frac), 1, "double binary tree", 2 * (inter + intra), 2 * inter, conns=conns)

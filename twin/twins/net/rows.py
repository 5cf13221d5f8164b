"""Unique rows of an integer matrix, as ``np.unique(a, axis=0, ...)`` gives them, without its sort of rows.

``np.unique`` with ``axis=0`` views each row as one opaque record and sorts those: at a million GPUs the
network twin's classes (a port's tuple of leaf classes, a transfer's (leaf, destination, size, capacities))
took seconds per call that way. When the columns' spans multiply to under 2**63, each row is a number in a
mixed radix (column 0 most significant, each column less its minimum), whose order is the rows' lexicographic
order, so one sort of int64 keys gives the same unique rows in the same order, the same first index, inverse
and counts. Past that, the row sort.

>>> a = np.array([[3, 1], [2, 9], [3, 1], [2, -4]])
>>> u, first, inv, n = unique_rows(a, return_index=True, return_inverse=True, return_counts=True)
>>> u.tolist(), first.tolist(), inv.tolist(), n.tolist()
([[2, -4], [2, 9], [3, 1]], [3, 1, 0], [2, 1, 2, 0], [1, 1, 2])
"""

from __future__ import annotations

import numpy as np

_LIMIT = 1 << 63


def keys(a: np.ndarray) -> np.ndarray | None:
    """Each row of the integer matrix ``a`` as one int64 in lexicographic order, or None when its columns'
    spans multiply past 2**63."""
    if a.ndim != 2 or a.dtype.kind not in "iub" or len(a) == 0:
        return None
    lo, hi = a.min(axis=0).astype(object), a.max(axis=0).astype(object)
    spans = [int(h) - int(m) + 1 for m, h in zip(lo, hi)]
    total = 1
    for s in spans:
        total *= s
    if total >= _LIMIT:
        return None
    key = np.zeros(len(a), np.int64)
    for c, s in enumerate(spans):  # Horner's rule, column by column: no (rows x columns) int64 copy
        key *= s
        key += a[:, c].astype(np.int64) - int(lo[c])
    return key


def unique_rows(a: np.ndarray, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False):
    """``np.unique(a, axis=0, ...)`` for an integer matrix, its inverse flat: (rows, then what was asked for)
    or the rows alone when nothing else was."""
    k = keys(a)
    if k is None:
        out = np.unique(a, axis=0, return_index=return_index, return_inverse=return_inverse, return_counts=return_counts)
        if not isinstance(out, tuple):
            return out
        out = list(out)
        if return_inverse:
            i = 1 + return_index
            out[i] = np.asarray(out[i]).reshape(-1)
        return tuple(out)
    _, first, inv, count = np.unique(k, return_index=True, return_inverse=True, return_counts=True)
    out = [a[first]]
    if return_index:
        out.append(first)
    if return_inverse:
        out.append(np.asarray(inv).reshape(-1))
    if return_counts:
        out.append(count)
    return tuple(out) if len(out) > 1 else out[0]

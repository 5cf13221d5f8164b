"""routing.spray_columns, the sprayed transfers' matrix written straight into compressed arrays a slice of
columns at a time, against the matrix scipy makes of the same (row, column, value) entries: the same indptr,
row indices, values and dtypes, bit for bit, with and without NVLink hops before the network, across slices."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csc_matrix

from twin.twins.net import routing


def _reference(n_arcs, up, down, pre, pinv, p_arcs, p_frac, p_ptr):
    """The entries as (rows, cols, vals) in one COO, converted by scipy (the layout before spray_columns)."""
    K = len(up)
    n = p_ptr[pinv + 1] - p_ptr[pinv]
    rep = np.repeat(np.arange(K), n)
    offs = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    mid = p_ptr[pinv][rep] + offs
    rows = np.concatenate([up, p_arcs[mid], down])
    cols = np.concatenate([np.arange(K), rep, np.arange(K)])
    vals = np.concatenate([np.ones(K), p_frac[mid], np.ones(K)])
    if pre is not None and (pre >= 0).any():
        fr, fc = np.nonzero(pre >= 0)
        rows, cols, vals = np.concatenate([rows, pre[fr, fc]]), np.concatenate([cols, fr]), np.concatenate([vals, np.ones(len(fr))])
    return csc_matrix((vals, (rows, cols)), shape=(n_arcs, K))


def _case(seed, K, pairs=40, with_pre=True):
    rng = np.random.default_rng(seed)
    n_arcs = 5000
    lens = rng.integers(1, 30, pairs)
    p_ptr = np.r_[0, np.cumsum(lens)]
    # each pair's split: distinct switch arcs (100..3999), fractions in (0, 1]
    p_arcs = np.concatenate([rng.choice(np.arange(100, 4000), k, replace=False) for k in lens])
    p_frac = rng.random(len(p_arcs)) + 1e-3
    up, down = rng.integers(0, 50, K), rng.integers(50, 100, K)  # NIC arcs apart from the switches'
    pre = None
    if with_pre:
        pre = np.full((K, 2), -1, np.int64)
        hop = rng.random(K) < 0.3
        pre[hop, 0] = 4000 + rng.integers(0, 400, hop.sum())
        pre[hop, 1] = 4400 + rng.integers(0, 400, hop.sum())
        pre[rng.random(K) < 0.1, 0] = -1  # a hop into the relay only
    return n_arcs, up, down, pre, rng.integers(0, pairs, K), p_arcs, p_frac, p_ptr


@pytest.mark.parametrize(("seed", "K", "with_pre"), [(0, 1, False), (1, 500, True), (2, 3000, False), (3, 2500, True)])
def test_the_same_matrix_as_scipy_makes_of_the_entries(seed, K, with_pre, monkeypatch):
    monkeypatch.setattr(routing, "ENTRIES", 97)  # many slices, a ragged last one
    args = _case(seed, K, with_pre=with_pre)
    got, want = routing.spray_columns(*args), _reference(*args)
    assert got.shape == want.shape and got.has_canonical_format and want.has_canonical_format
    for a, b in ((got.indptr, want.indptr), (got.indices, want.indices), (got.data, want.data)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    # a wrong slice offset would misplace a column's split: every column holds its pair's arcs and both NIC arcs
    n_arcs, up, down, pre, pinv, p_arcs, p_frac, p_ptr = args
    k = K - 1
    col = set(got.indices[got.indptr[k]:got.indptr[k + 1]].tolist())
    assert {int(up[k]), int(down[k]), *p_arcs[p_ptr[pinv[k]]:p_ptr[pinv[k] + 1]].tolist()} <= col

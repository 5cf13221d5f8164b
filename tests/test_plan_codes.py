"""The fast stage's key factoring (twin/twins/plan/tables.py ``codes``): the same first rows and key indices as
``np.unique`` over the combined key, by lookup table where the keys span a small range and by sorting where they
do not (a float column of message sizes, a key space wider than the table)."""

from __future__ import annotations

import numpy as np

from twin.twins.plan import tables


def _by_unique(cols, names):
    code = np.zeros(len(cols[names[0]]), np.int64)
    for k in names:
        v, inv = np.unique(cols[k], return_inverse=True)
        code = code * len(v) + inv.reshape(-1)
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return first, inv.reshape(-1)


def test_codes_equal_np_unique_on_random_tables():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 3000))
        cols = {"tp": rng.integers(0, rng.integers(1, 50), n).astype(np.int32),
                "wide": rng.integers(-5, rng.integers(1, 9) * 1000, n),
                "size": np.round(rng.random(n) * rng.integers(1, 4), 1)}
        names = tuple(rng.permutation(list(cols))[: rng.integers(1, 4)])
        first, inv = tables.codes(cols, names)
        want_first, want_inv = _by_unique(cols, names)
        assert np.array_equal(first, want_first) and np.array_equal(inv, want_inv), names


def test_codes_fall_back_to_sorting_past_the_table():
    # two columns of 5,000 distinct integers each span 25 M keys, past the table (4 M, or 4 rows per key)
    rng = np.random.default_rng(4)
    cols = {"a": rng.permutation(5000), "b": rng.permutation(5000)}
    first, inv = tables.codes(cols, ("a", "b"))
    want_first, want_inv = _by_unique(cols, ("a", "b"))
    assert np.array_equal(first, want_first) and np.array_equal(inv, want_inv)
    assert len(first) == 5000 and sorted(inv.tolist()) == list(range(5000))

"""twin.twins.net.rows.unique_rows against numpy's own ``np.unique(axis=0)``: the same unique rows in the same
(lexicographic) order, the same first index, inverse and counts, whether the rows fit one int64 key (the mixed
radix) or not (the row sort)."""

from __future__ import annotations

import numpy as np
import pytest

from twin.twins.net.rows import keys, unique_rows


def _numpy(a):
    u, first, inv, n = np.unique(a, axis=0, return_index=True, return_inverse=True, return_counts=True)
    return u, first, np.asarray(inv).reshape(-1), n


@pytest.mark.parametrize("seed", range(6))
def test_same_as_numpy_on_random_matrices(seed):
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 4000)), int(rng.integers(1, 6))
    lo, hi = sorted(rng.integers(-50, 60, 2).tolist())
    a = rng.integers(lo, hi + 1, (rows, cols)).astype(rng.choice([np.int64, np.int32, np.int16]))
    got = unique_rows(a, return_index=True, return_inverse=True, return_counts=True)
    for x, y in zip(got, _numpy(a)):
        assert np.array_equal(x, y)
    assert np.array_equal(got[0][got[2]], a)  # the inverse rebuilds the matrix


def test_spans_past_63_bits_take_the_row_sort_and_agree():
    rng = np.random.default_rng(7)
    a = rng.integers(-(1 << 40), 1 << 40, (500, 3))
    a[250:] = a[:250]  # every row twice
    assert keys(a) is None  # three columns of 2**41 values: 123 bits
    got = unique_rows(a, return_index=True, return_inverse=True, return_counts=True)
    for x, y in zip(got, _numpy(a)):
        assert np.array_equal(x, y)
    assert (got[3] >= 2).all()


def test_the_key_orders_rows_lexicographically():
    # column 0 most significant: (0, 9) before (1, 0), however large the later column's values
    a = np.array([[1, 0], [0, 9], [0, -3]])
    assert np.argsort(keys(a)).tolist() == [2, 1, 0]
    assert unique_rows(a).tolist() == [[0, -3], [0, 9], [1, 0]]

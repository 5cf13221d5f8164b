"""The max-min fill's gathered reductions a run of segments at a time (fluid.gathered_reduceat) give numpy's own
``reduceat`` of the whole gather, and max-min's rates are the same to the bit whichever the run's size."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import random as sparse_random

from twin.twins.net import fluid


@pytest.mark.parametrize("gather", [1, 7, 64])
def test_the_same_as_one_reduceat_of_the_whole_gather(gather, monkeypatch):
    monkeypatch.setattr(fluid, "GATHER", gather)
    rng = np.random.default_rng(gather)
    values = rng.random(300)
    lens = rng.integers(1, 20, 90)  # segments of 1 to 19 entries, some longer than a run
    starts = np.r_[0, np.cumsum(lens)[:-1]]
    index = rng.integers(0, 300, int(lens.sum()))
    assert np.array_equal(fluid.gathered_reduceat(np.minimum, values, index, starts), np.minimum.reduceat(values[index], starts))
    flags, mask = values > 0.8, rng.random(len(index)) > 0.3
    assert np.array_equal(fluid.gathered_reduceat(np.logical_or, flags, index, starts, mask),
                          np.logical_or.reduceat(flags[index] & mask, starts))


def test_max_min_rates_do_not_depend_on_the_run(monkeypatch):
    A = sparse_random(400, 900, density=0.02, format="csc", random_state=3, data_rvs=lambda k: np.ones(k))
    A = A[:, np.flatnonzero(np.diff(A.indptr) > 0)]  # every class crosses an arc
    cap = np.random.default_rng(4).uniform(1.0, 10.0, 400)
    whole = fluid.max_min(A, cap)
    monkeypatch.setattr(fluid, "GATHER", 5)
    assert np.array_equal(fluid.max_min(A, cap), whole)
    # and the rates are max-min fair: every class is bottlenecked on a saturated arc where no class gets more
    load, rows = A @ whole, A.tocsr()
    assert (load <= cap * (1 + 1e-9)).all()
    for j in range(A.shape[1]):
        arcs = A.indices[A.indptr[j]:A.indptr[j + 1]]
        sat = arcs[np.isclose(load[arcs], cap[arcs], rtol=1e-9)]
        assert any(whole[rows.indices[rows.indptr[a]:rows.indptr[a + 1]]].max() <= whole[j] * (1 + 1e-9) for a in sat)

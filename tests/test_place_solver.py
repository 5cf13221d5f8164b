"""The placement models' array layer (twin.compiler.place.solver.Milp) and the vectorised hall distances."""

from __future__ import annotations

import numpy as np
import pytest

from twin.compiler.place.model import HallGrid
from twin.compiler.place.solver import Milp
from twin.compiler.resolve.validate import validate_file


def chvatal(integer: bool) -> tuple[Milp, np.ndarray]:
    """V. Chvátal, Linear Programming (1983), ch. 2: max 5a + 4b + 3c subject to 2a + 3b + c <= 5,
    4a + b + 2c <= 11, 3a + 4b + 2c <= 8, a, b, c >= 0; the optimum is 13 at (2, 0, 1)."""
    m = Milp()
    a, b, c = m.add_cols(3, 0, np.inf, integer=integer)
    # each row lists its columns in another order: the solution must come back by the Milp's own index
    m.add_rows([3, 3, 3], [c, a, b, b, c, a, a, c, b], [1, 2, 3, 1, 2, 4, 3, 2, 4], None, [5, 11, 8])
    m.cost([a, b, c], [5, 4, 3])
    return m, np.array([a, b, c])


@pytest.mark.parametrize("integer", [False, True])
def test_textbook_optimum(integer):
    m, abc = chvatal(integer)
    r = m.solve(10.0, maximize=True)
    assert r.status == "optimal"
    assert r.objective == pytest.approx(13.0) and r.bound == pytest.approx(13.0)
    assert np.allclose(r.x[abc], [2.0, 0.0, 1.0])


def test_unused_columns_zero_coefficients_and_infeasibility():
    m = Milp()
    x, y, spare = m.add_cols(3, [0, 0, 7], [4, 4, 9], integer=True)
    m.add_rows([2], [x, y], [1.0, 0.0], 3, None)  # x >= 3; y's zero coefficient stays out of the matrix
    m.cost([x, y], [1.0, 1.0])
    r = m.solve(10.0)
    assert r.status == "optimal" and r.x[x] == pytest.approx(3.0) and r.x[y] == pytest.approx(0.0)
    assert r.x[spare] == 7.0  # in no row and not in the objective: HiGHS never sees it; its lower bound
    m.add_rows([1], [x], 1.0, None, 2)  # and x <= 2
    r = m.solve(10.0)
    assert r.status == "infeasible" and r.x is None and r.objective is None


def test_distance_matrix_is_the_distance_bit_for_bit():
    spec, _ = validate_file("sites/meta-24k-roce.yaml")  # halls with cross-aisles
    h = spec.site.halls[0]
    grid = HallGrid(h)
    rng = np.random.default_rng(7)
    a = [(int(r), int(s)) for r, s in zip(rng.integers(1, h.rows + 1, 60), rng.integers(1, h.positions_per_row + 1, 60))]
    b = [(int(r), int(s)) for r, s in zip(rng.integers(1, h.rows + 1, 40), rng.integers(1, h.positions_per_row + 1, 40))]
    D = grid.distances(a, b)
    assert D.shape == (60, 40)
    assert all(D[i, j] == grid.distance(p, q) for i, p in enumerate(a) for j, q in enumerate(b))
    assert len({round(v, 6) for v in D.ravel()}) > 20 and (D[:, :1] > 0).any()


def test_site_distances_are_site_distance_bit_for_bit():
    """The placement figures' pair distances (one array) equal the scalar function to the last bit:
    same hall same row, same hall other rows (through a cross-aisle), and between halls (door to door)."""
    from twin.compiler.place.model import Position, site_distance, site_distances

    spec, _ = validate_file("sites/meta-24k-roce.yaml")
    grids = {h.name: HallGrid(h) for h in spec.site.halls}
    rng = np.random.default_rng(11)
    halls = [h for h in spec.site.halls[:3]]

    def positions(n):
        return [Position(h.name, int(rng.integers(1, h.rows + 1)), int(rng.integers(1, h.positions_per_row + 1)))
                for h in (halls[int(k)] for k in rng.integers(0, len(halls), n))]

    a, b = positions(50), positions(30)
    a.append(Position(b[0].hall, b[0].row, b[0].slot + (1 if b[0].slot == 1 else -1)))  # a same-row pair for sure
    ia, ib = np.repeat(np.arange(len(a)), len(b)), np.tile(np.arange(len(b)), len(a))
    d = site_distances(grids, a, ia, b, ib)
    want = [site_distance(grids, a[i], b[j]) for i, j in zip(ia.tolist(), ib.tolist())]
    assert d.tolist() == want
    kinds = {(a[i].hall == b[j].hall, a[i].row == b[j].row) for i, j in zip(ia.tolist(), ib.tolist())}
    assert {(True, True), (True, False), (False, False)} <= kinds

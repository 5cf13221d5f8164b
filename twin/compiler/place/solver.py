"""HiGHS through Pyomo's persistent interface, configured once for every placement model.

Single-threaded with a fixed seed, so the same model gives the same solution (byte-identical builds).
"""

from __future__ import annotations

MIP_GAP = 1e-4


def highs(time_limit: float):
    """A pyomo.contrib.appsi Highs solver (Pyomo is imported here, not with the module: a CLI start
    that places nothing, `twin validate`, needs none of it)."""
    from pyomo.contrib.appsi.solvers import Highs

    s = Highs()
    s.config.load_solution = False
    s.config.stream_solver = False
    s.config.time_limit = time_limit
    s.highs_options.update({"threads": 1, "random_seed": 0, "mip_rel_gap": MIP_GAP, "presolve": "on"})
    return s

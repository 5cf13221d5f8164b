"""Placement stage 2 solves each distinct hall MILP once (:func:`twin.compiler.place.hall_milp.solve_halls`):
a hall that poses the same model as a hall before it takes that hall's answer for its own zones. The
answer must be exactly what a fresh solve of the hall gives, and halls that differ in anything the model
reads must not be merged."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from twin.compiler import pipeline
from twin.compiler.place.assign import assign
from twin.compiler.place.hall_milp import problem_key, solve_hall, solve_halls
from twin.compiler.place.optimize import hall_problems, uplink_reach

# Three halls of one floor plan, one AI zone each; h1 also holds the ATSW racks (a different model), h2
# and h3 stand elsewhere on the site (origins that are not exact in binary) and hold zones 2 and 3.
SITE = textwrap.dedent("""\
    name: t-three-halls
    power: {utility_capacity: 2 MW, pue: 1.3}
    hall_types:
      small:
        rows: 2
        positions_per_row: 8
        slot_width: 0.6 m
        rack_depth: 1.2 m
        row_pitch: 3.6 m
        cross_aisle_every: 4
        cross_aisle_width: 1.2 m
        tray_height: 2.8 m
        reserved:
          - {rows: 1-2, positions: 1-2, purpose: network}
        power: {utility: 500 kW, busway_rating: 250 kW, redundancy: 2N, derating: 0.8}
        cooling: {medium: air, capacity_per_row: 180 kW}
    halls:
      - {name: h1, type: small}
      - {name: h2, type: small, origin: [20.3 m, 0 m]}
      - {name: h3, type: small, origin: [0 m, 17.7 m]}
    rack_types:
      gt-rack: {chassis: grand-teton-h100, servers: 2, rtsw: minipack2, other_power: 300 W}
    fabric:
      technology: roce
      family: ai-zone-clos
      rack_type: gt-rack
      zones: 3
      racks_per_zone: 4
      zones_per_hall: 1
      rtsw: {uplinks: 16}
      ctsw: {model: minipack2, count: 4}
      atsw: {model: minipack2, count: 2, oversubscription: "2:1"}
    """)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    path = tmp_path_factory.mktemp("reuse") / "site.yaml"
    path.write_text(SITE)
    spec = pipeline.check(path).spec
    _types, problems = hall_problems(spec, assign(spec), uplink_reach(spec)[1])
    return path, spec, problems


def test_a_reused_hall_gets_what_a_fresh_solve_gives(site):
    path, spec, problems = site
    names = [h.name for h in spec.site.halls]
    results, rows = solve_halls(problems, names)
    assert [r.get("same_model_as") for r in rows] == [None, None, "h2"]  # h1 holds the ATSWs: a model of its own
    assert [z for z, _n in problems[1][2]] == [1] and [z for z, _n in problems[2][2]] == [2]
    for i in (1, 2):
        fresh = solve_hall(*problems[i])
        got = results[i]
        assert got.gpu == fresh.gpu and got.net == fresh.net  # zone 3's positions, under zone 3's label
        assert (got.status, got.objective, got.bound, got.variables) == (fresh.status, fresh.objective, fresh.bound, fresh.variables)
    assert set(results[2].gpu) == {2} and len(results[2].gpu[2]) == 4
    # the pass reports each hall's figures; the reused one says whose solve it took
    solver = pipeline.compile_design(path, until="placement").placement.figures["solver"]
    assert [r["hall"] for r in solver["halls"]] == names and solver["halls"][2]["same_model_as"] == "h2"
    assert solver["halls"][2]["objective_m"] == solver["halls"][1]["objective_m"] == results[1].objective


def test_the_model_does_not_depend_on_where_the_hall_stands(site):
    _path, _spec, problems = site
    h = problems[1][0]
    for origin in ((0.0, 0.0), (123.4, 5.6)):
        moved = (h.model_copy(update={"origin": origin}),) + problems[1][1:]
        assert problem_key(*moved) == problem_key(*problems[1])
        res, fresh = solve_hall(*moved), solve_hall(*problems[1])
        assert (res.gpu, res.net, res.objective, res.bound) == (fresh.gpu, fresh.net, fresh.objective, fresh.bound)


def _changed(value):
    return value + 1 if isinstance(value, int) else value * 1.5


def test_halls_that_differ_in_one_field_are_not_merged(site):
    _path, _spec, problems = site
    base = problems[1]
    h = base[0]
    variants = {}
    # every scalar field of the hall (its name and origin are all the model does not read)
    for name, value in h:
        if name not in ("name", "origin") and isinstance(value, (int, float)) and not isinstance(value, bool):
            variants[f"hall.{name}"] = (h.model_copy(update={name: _changed(value)}),) + base[1:]
    variants["hall.reserved"] = (h.model_copy(update={"reserved": h.reserved[:0]}),) + base[1:]
    variants["hall.power.busway_rating"] = (h.model_copy(update={"power": h.power.model_copy(update={"busway_rating": 200e3})}),) + base[1:]
    variants["hall.cooling.capacity_per_row"] = (h.model_copy(update={"cooling": h.cooling.model_copy(update={"capacity_per_row": 150e3})}),) + base[1:]
    (_, pue, groups, types, gpu_power, w_gpu, w_net, ext, reach, limit, share, span) = base
    variants["pue"] = (h, pue + 0.1) + base[2:]
    variants["group size"] = base[:2] + ([(z, n - 1) for z, n in groups],) + base[3:]
    variants["net type count"] = base[:3] + ([replace(types[0], count=types[0].count + 1)] + types[1:],) + base[4:]
    variants["gpu power"] = base[:4] + (gpu_power * 0.9,) + base[5:]
    variants["w_gpu"] = base[:5] + ({k: v * 2 for k, v in w_gpu.items()},) + base[6:]
    variants["ext"] = base[:7] + ({k: v + 1 for k, v in ext.items()},) + base[8:]
    variants["reach"] = base[:8] + (reach / 2,) + base[9:]
    variants["time limit"] = base[:9] + (limit + 1,) + base[10:]
    variants["liquid share"] = base[:10] + (0.5,) + base[11:]
    variants["span"] = base[:11] + (2,)
    assert {"hall.rows", "hall.positions_per_row", "hall.slot_width", "hall.row_pitch", "hall.tray_height"} <= set(variants)
    key = problem_key(*base)
    for what, p in variants.items():
        assert problem_key(*p) != key, what
    # solved apart: the second hall, one field away, is solved, not handed the first one's answer
    _results, rows = solve_halls({0: base, 1: variants["hall.power.busway_rating"]}, ["a", "b"])
    assert "same_model_as" not in rows[1]

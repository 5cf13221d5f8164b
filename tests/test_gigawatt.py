"""The gigawatt campus (issue 40): sites/gigawatt-campus.yaml's counts in closed form, on two planes.

The site itself (995,328 GPUs) takes minutes to build and is measured by hand (bench/bench_gigawatt.py);
here its spec resolves to the closed-form shape, and a scaled-down copy (the same halls, racks, switches
and ratios in 2 buildings of 1 zone) compiles to a graph and a cabling plan whose every count, plane by
plane, is the closed form of the spec (A = 4 ATSWs per building and plane in the copy, so one hall's 27
network positions hold its building's 2 x 9 CTSWs and 2 x 4 ATSWs).

Each GB200's 400G NIC is 2 x 200G ports, one on each of P = 2 planes, and each plane is the one-plane
fabric of the same NICs at 200G (docs/howto/multi-plane.md; twin/compiler/resolve/shape.py ``_ai_zone``,
campus_shape.py): on a campus every plane has its own RTSWs, CTSWs, ATSW layer per building and campus
mesh. Per plane (B buildings, Z zones each, R racks per zone, C CTSWs per zone, A ATSWs per building):

- GPUs B Z R 72 (each with one port on the plane), RTSWs B Z R (one per rack), CTSWs B Z C, ATSWs B A;
- an RTSW's 72 NIC ports down at 200G and 36 uplinks at 400G (1:1), 4 to each of the 9 CTSWs (36 / 9): a
  CTSW has 4 R down, and ceil(4 R / 3) up at the asked 1:3;
- an ATSW takes D = Z C up / A links from its building's zones, and meets ATSW k of each other building
  of its plane with ceil(D / (2.8 (B - 1))) links (the mesh's 1:2.8, [meta-ncclx]);
- cables per tier: NIC-RTSW = GPUs, RTSW-CTSW = RTSWs x 36, CTSW-ATSW = CTSWs x up, ATSW-ATSW = A x
  B (B - 1) / 2 x the pair's links.

The site has P times each: every switch and cable count of a plane, doubled, and no cable joins two
planes. Per GPU that is 2 x 200G, the bandwidth of one 400G plane.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest
import yaml
from conftest import SITES

from twin.compiler import pipeline
from twin.compiler.fabric.synthesis import mismatches

GIGAWATT = SITES / "gigawatt-campus.yaml"
P, R, C, A = 2, 72, 9, 54  # planes; per plane: racks per zone, CTSWs per zone, ATSWs per building
PORTS_PER_RTSW, UP_PER_RTSW, RTSW_PER_RACK, GPUS_PER_RACK = 72, 36, 1, 72  # per plane: one RTSW a rack, a port of each NIC
COPY_A = 4  # ATSWs per building and plane in the 2-building copy: 2 x (9 + 4) of a hall's 27 network positions
ROLES = ("rtsw", "ctsw", "atsw")


def closed_form(b: int, z: int, a: int = A) -> dict:
    """One plane's counts (``plane``, ``plane_cables``) and the site's (``switches``, ``cables``: P times)."""
    ctsw_down = R * RTSW_PER_RACK * UP_PER_RTSW // C
    ctsw_up = math.ceil(ctsw_down / 3)
    d = z * C * ctsw_up // a
    pair = math.ceil(d / (2.8 * (b - 1)))
    plane = {"rtsw": b * z * R * RTSW_PER_RACK, "ctsw": b * z * C, "atsw": b * a}
    cables = {"nic-rtsw": b * z * R * RTSW_PER_RACK * PORTS_PER_RTSW, "rtsw-ctsw": b * z * R * RTSW_PER_RACK * UP_PER_RTSW,
              "ctsw-atsw": b * z * C * ctsw_up, "atsw-atsw": a * b * (b - 1) // 2 * pair}
    return {"gpus": b * z * R * GPUS_PER_RACK, "ctsw_down": ctsw_down, "ctsw_up": ctsw_up, "atsw_down": d, "pair": pair,
            "plane": plane, "plane_cables": cables,
            "switches": {k: P * v for k, v in plane.items()}, "cables": {k: P * v for k, v in cables.items()}}


def scaled(tmp_path: Path, buildings: int = 2, halls: int = 1, atsws: int = COPY_A) -> Path:
    """gigawatt-campus with its first ``buildings`` buildings of ``halls`` halls (one zone each) and ``atsws``
    ATSWs per building and plane (a hall's 27 network positions hold its 2 x 9 CTSWs and 8 more)."""
    doc = yaml.safe_load(GIGAWATT.read_text(encoding="utf-8"))
    doc["buildings"] = [{**b, "halls": b["halls"][:halls]} for b in doc["buildings"][:buildings]]
    doc["fabric"]["zones"] = buildings * halls
    doc["fabric"]["gpus"] = buildings * halls * R * GPUS_PER_RACK
    doc["fabric"]["atsw"]["count"] = atsws
    for w in doc.get("workloads", []):  # every GPU of the copy, the same micro-batches per rank
        per = doc["fabric"]["gpus"] // (w.get("tp", 1) * w.get("cp", 1) * w.get("pp", 1))
        w["global_batch"], w["dp"] = w["global_batch"] * per // w["dp"], per
    p = tmp_path / "gigawatt-scaled.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return p


def test_the_gigawatt_spec_resolves_to_its_closed_form():
    """8 buildings x 24 zones on 2 planes. Per plane: 13,824 RTSWs, 1,728 CTSWs, 432 ATSWs; an ATSW 384 down
    + 7 x 20 to the campus = 524 of its 576 ports; 30,240 links between buildings. The site: 27,648 RTSWs,
    3,456 CTSWs, 864 ATSWs; 1,990,656 NIC-RTSW, 995,328 RTSW-CTSW, 331,776 CTSW-ATSW cables, 60,480 links
    between buildings."""
    spec = pipeline.check(GIGAWATT).spec
    want, shape = closed_form(8, 24), spec.shape
    assert (spec.gpus, spec.racks) == (want["gpus"], want["gpus"] // GPUS_PER_RACK) == (995_328, 13_824)
    assert shape.planes == spec.fabric.planes == spec.chassis.nic_ports == P
    assert want["plane"] == {"rtsw": 13_824, "ctsw": 1_728, "atsw": 432}
    assert want["plane_cables"] == {"nic-rtsw": 995_328, "rtsw-ctsw": 497_664, "ctsw-atsw": 165_888, "atsw-atsw": 30_240}
    assert {t.role: t.count for t in shape.tiers} == want["switches"] == {"rtsw": 27_648, "ctsw": 3_456, "atsw": 864}
    assert {b: shape.links(b) for b in want["cables"]} == want["cables"]
    assert want["cables"] == {"nic-rtsw": 1_990_656, "rtsw-ctsw": 995_328, "ctsw-atsw": 331_776, "atsw-atsw": 60_480}
    # one plane's ports: an RTSW's 72 NIC ports at 200G and 36 uplinks at 400G; 2 x 200G per GPU = one 400G plane
    rtsw = shape.tier("rtsw")
    assert (rtsw.down, rtsw.up, shape.rack_uplinks) == (PORTS_PER_RTSW, UP_PER_RTSW, UP_PER_RTSW * RTSW_PER_RACK)
    assert shape.boundary("nic-rtsw").speed == 200e9 and P * shape.boundary("nic-rtsw").speed == spec.nic_speed == 400e9
    assert {shape.boundary(b).speed for b in ("rtsw-ctsw", "ctsw-atsw", "atsw-atsw")} == {400e9}
    assert shape.ctsw_down == (want["ctsw_down"],) * C and shape.ctsw_up == (want["ctsw_up"],) * C
    assert (want["ctsw_down"], want["ctsw_up"]) == (288, 96)
    cs = shape.campus
    assert cs.atsw_per_building == A and len(cs.atsw_down) == 8 and all(len(per) == A for per in cs.atsw_down)
    assert {d for per in cs.atsw_down for d in per} == {want["atsw_down"]} == {384}
    assert set(cs.pair_links.values()) == {want["pair"]} == {20} and len(cs.pair_links) == 28
    assert set(cs.atsw_up) == {7 * 20} and 384 + 140 <= shape.tier("atsw").radix


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return pipeline.compile_design(scaled(tmp_path_factory.mktemp("gw")), until="cabling", placement_method="naive")


def test_a_scaled_copy_compiles_to_the_closed_form(small):
    """2 buildings of 1 zone and 4 ATSWs per plane: 10,368 GPUs; on each plane an ATSW takes 216 links from
    its zone (9 CTSWs x 96 / 4) and 78 to the other building (ceil(216 / 2.8))."""
    want, d = closed_form(2, 1, COPY_A), small
    assert mismatches(d.spec.shape, d.fabric) == []
    assert d.spec.gpus == want["gpus"] == 10_368
    assert want["atsw_down"] == 216 and want["pair"] == 78
    assert want["plane"] == {"rtsw": 144, "ctsw": 18, "atsw": 8}
    assert want["plane_cables"] == {"nic-rtsw": 10_368, "rtsw-ctsw": 5_184, "ctsw-atsw": 1_728, "atsw-atsw": 312}
    g = d.fabric.graph
    roles = Counter((g.nodes[n]["role"], g.nodes[n]["plane"]) for n in d.fabric.switches())
    assert roles == {(r, k): want["plane"][r] for r in ROLES for k in range(P)}
    # every cable on one plane (its switch end's; both ends' between switches), each plane's count the closed form
    per_tier = Counter()
    for lk in d.fabric.cables():
        k = g.nodes[lk.b]["plane"]
        assert lk.tier == "nic-rtsw" or g.nodes[lk.a]["plane"] == k, lk
        per_tier[lk.tier, k] += 1
    assert per_tier == {(t, k): n for t, n in want["plane_cables"].items() for k in range(P)}
    assert {t: sum(n for (x, _), n in per_tier.items() if x == t) for t in want["cables"]} == want["cables"]
    # every GPU's NIC: port j at 200G to plane j's RTSW of its own rack
    nic = [lk for lk in d.fabric.cables() if lk.tier == "nic-rtsw"]
    ports = Counter(lk.a for lk in nic)
    assert len(ports) == want["gpus"] and set(ports.values()) == {P}
    assert {(lk.a_port, g.nodes[lk.b]["plane"], lk.speed) for lk in nic} == {(f"port{k + 1}", k, 200e9) for k in range(P)}
    assert all(g.nodes[lk.a]["rack"] == g.nodes[lk.b]["rack"] for lk in nic)
    # every building's ATSWs stand in its own halls; links between buildings are the only ones that leave one
    assert {g.nodes[n]["building"] for n in d.fabric.nodes("atsw")} == {0, 1}
    assert all((g.nodes[lk.a]["building"] != g.nodes[lk.b]["building"]) == (lk.tier == "atsw-atsw") for lk in d.fabric.cables())
    # a hall's network positions (rows 1-9, positions 1-3: 27) hold its building's 9 CTSWs and 4 ATSWs of each plane
    net = Counter((r.position.hall, r.role) for r in d.placement.racks if r.kind == "network")
    assert net == {(h, r): n for h in ("b1-dh01", "b2-dh01") for r, n in (("ctsw", P * C), ("atsw", P * COPY_A))}
    assert P * (C + COPY_A) <= 27 < P * (C + COPY_A + 1)


# The reliability twin's known answers (issue 40) on the scaled copy, through the path the campus takes
# (`twin simulate` of a campaign alone: the footprint read off the fabric graph, no paths compiled):
# with only the catalog's per-GPU classes failing (Llama 3 Table 5's GPU causes, [llama3] s3.3.4), the
# job's interruptions are a Poisson process of rate N r, so its mean time to interruption is 1 / (N r),
# held within 4 standard errors of the 1,000-run mean; the swept interval that maximises ETTR is Young's
# sqrt(2 w / (N r)) within 10% when the write w is small beside the MTTI ([young74], [daly06]).
CAMPAIGN = """name: gigawatt-campaign
campaign:
  days: {days}
  runs: 1000
  seed: 1
  gpus: {gpus}
  step_time: 1 s
  checkpoint: {{interval: auto, size: 16 TB, write_time: {w} s, restore_time: 30 s}}
  sweep: {{enabled: false, runs: 1000}}
  rates:
{rates}"""


def campaign(design, gpus: int, days: float, w: float) -> tuple[dict, float]:
    """The campaign's figures with every class but the per-GPU ones at zero, and the per-GPU rate r (1/s)."""
    from twin.lang.scenario.models import parse_scenario
    from twin.twins.run import simulate

    classes = design.spec.catalog.reliability
    r = sum(c.rate for c in classes.values() if c.per == "gpu")
    zero = "".join(f"    {k}: 0 / year\n" for k, c in sorted(classes.items()) if c.per != "gpu")
    scn, src = parse_scenario(CAMPAIGN.format(days=days, gpus=gpus, w=w, rates=zero))
    return simulate(design, scn, src).data["campaign"], r


def test_the_campaign_mtti_and_best_interval_are_their_closed_forms(small):
    """10,368 GPUs for 30 days: r = 0.111 per GPU-year, MTTI = 1 / (N r) = 7.6 h (~94 interruptions a
    run); a 30 s write: Young's interval 21 minutes."""
    n, days, w = 10_368, 30, 30.0
    c, r = campaign(small, n, days, w)
    mtti = 1 / (n * r)
    assert c["job"]["gpus"] == n and c["expected_mtti_h"] * 3600 == pytest.approx(mtti, rel=1e-9)
    assert 6 < mtti / 3600 < 9
    se = mtti / math.sqrt(n * r * days * 86400 * c["runs"])  # a Poisson count's relative error, 1,000 runs
    assert abs(c["mtti_h"] * 3600 - mtti) <= 4 * se
    young = math.sqrt(2 * w / (n * r))
    assert c["checkpoint"]["young_daly_s"] == pytest.approx(young, rel=1e-9)
    assert c["checkpoint"]["interval_source"] == "auto: best swept interval"
    assert c["checkpoint"]["interval_s"] == pytest.approx(young, rel=0.10)

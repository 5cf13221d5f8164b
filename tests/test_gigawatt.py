"""The gigawatt campus (issue 40): sites/gigawatt-campus.yaml's counts in closed form.

The site itself (995,328 GPUs) takes minutes to build and is measured by hand (bench/bench_gigawatt.py);
here its spec resolves to the closed-form shape, and a scaled-down copy (the same halls, racks, switches
and ratios in 2 buildings of 1 zone) compiles to a graph and a cabling plan whose every count is the
closed form of the spec (A = 9 ATSWs per building in the copy, so one hall holds them):

- GPUs B Z R 72, RTSWs B Z R 2, CTSWs B Z C, ATSWs B A (B buildings, Z zones each, R racks per zone,
  C CTSWs per zone, A ATSWs per building);
- an RTSW's 36 NICs down and 36 uplinks, 2 to each of the 18 CTSWs (36 / 18): a CTSW has 4 R down, and
  ceil(4 R / 3) up at the asked 1:3;
- an ATSW takes D = Z C up / A links from its building's zones (its CTSW plane's share), and meets ATSW k
  of each other building with ceil(D / (2.8 (B - 1))) links (the mesh's 1:2.8, [meta-ncclx]);
- cables per tier: NIC-RTSW = GPUs, RTSW-CTSW = RTSWs x 36, CTSW-ATSW = CTSWs x up, ATSW-ATSW = A x
  B (B - 1) / 2 x the pair's links.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from conftest import SITES

from twin.compiler import pipeline
from twin.compiler.fabric.synthesis import mismatches

GIGAWATT = SITES / "gigawatt-campus.yaml"
R, C, A, UP_PER_RTSW, RTSW_PER_RACK, GPUS_PER_RACK = 72, 18, 108, 36, 2, 72


def closed_form(b: int, z: int, a: int = A) -> dict:
    ctsw_up = math.ceil(R * RTSW_PER_RACK * UP_PER_RTSW / C / 3)
    d = z * C * ctsw_up // a
    pair = math.ceil(d / (2.8 * (b - 1)))
    return {"gpus": b * z * R * GPUS_PER_RACK, "rtsw": b * z * R * RTSW_PER_RACK, "ctsw": b * z * C, "atsw": b * a,
            "ctsw_down": R * RTSW_PER_RACK * UP_PER_RTSW // C, "ctsw_up": ctsw_up, "atsw_down": d, "pair": pair,
            "cables": {"nic-rtsw": b * z * R * GPUS_PER_RACK, "rtsw-ctsw": b * z * R * RTSW_PER_RACK * UP_PER_RTSW,
                       "ctsw-atsw": b * z * C * ctsw_up, "atsw-atsw": a * b * (b - 1) // 2 * pair}}


def scaled(tmp_path: Path, buildings: int = 2, halls: int = 1, atsws: int = 9) -> Path:
    """gigawatt-campus with its first ``buildings`` buildings of ``halls`` halls (one zone each) and ``atsws``
    ATSWs per building (a hall's 27 network positions hold its 18 CTSWs and 9 more)."""
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
    """8 buildings x 24 zones: 995,328 GPUs, 27,648 RTSWs, 3,456 CTSWs, 864 ATSWs; an ATSW 384 down + 7 x 20
    to the campus = 524 of its 576 ports; 60,480 links between buildings."""
    spec = pipeline.check(GIGAWATT).spec
    want, shape = closed_form(8, 24), spec.shape
    assert (spec.gpus, spec.racks) == (want["gpus"], want["gpus"] // GPUS_PER_RACK) == (995_328, 13_824)
    assert {t.role: t.count for t in shape.tiers} == {"rtsw": want["rtsw"], "ctsw": want["ctsw"], "atsw": want["atsw"]}
    assert set(shape.ctsw_down) == {want["ctsw_down"]} == {288} and set(shape.ctsw_up) == {want["ctsw_up"]} == {96}
    cs = shape.campus
    assert {d for per in cs.atsw_down for d in per} == {want["atsw_down"]} == {384}
    assert set(cs.pair_links.values()) == {want["pair"]} == {20} and len(cs.pair_links) == 28
    assert set(cs.atsw_up) == {7 * 20} and 384 + 140 <= shape.tier("atsw").radix
    assert {b: shape.links(b) for b in want["cables"]} == want["cables"]
    assert want["cables"]["atsw-atsw"] == 60_480


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return pipeline.compile_design(scaled(tmp_path_factory.mktemp("gw")), until="cabling", placement_method="naive")


def test_a_scaled_copy_compiles_to_the_closed_form(small):
    """2 buildings of 1 zone and 9 ATSWs: 10,368 GPUs; an ATSW takes 192 links from its zone (2 CTSW planes)
    and 69 to the other building."""
    want, d = closed_form(2, 1, 9), small
    assert mismatches(d.spec.shape, d.fabric) == []
    assert d.spec.gpus == want["gpus"] == 10_368
    roles = {r: len(d.fabric.nodes(r)) for r in ("rtsw", "ctsw", "atsw")}
    assert roles == {"rtsw": want["rtsw"], "ctsw": want["ctsw"], "atsw": want["atsw"]}
    per_tier: dict[str, int] = {}
    for lk in d.fabric.cables():
        per_tier[lk.tier] = per_tier.get(lk.tier, 0) + 1
    assert per_tier == want["cables"] and want["atsw_down"] == 192 and want["pair"] == 69
    # every building's ATSWs stand in its own halls; links between buildings are the only ones that leave one
    g = d.fabric.graph
    assert {g.nodes[n]["building"] for n in d.fabric.nodes("atsw")} == {0, 1}
    assert all((g.nodes[lk.a]["building"] != g.nodes[lk.b]["building"]) == (lk.tier == "atsw-atsw") for lk in d.fabric.cables())


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

"""The physics of distance on a campus: propagation from real lengths in the twin, PFC headroom against
buffers with a verdict per link and the distance where lossless stops fitting (closed forms), latency
by distance, and the latency share of collectives and jobs across buildings."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import SITES, compiled

import twin
from twin.analysis import headroom as distance
from twin.lang.catalog import builtin
from twin.physics import FIBER_DELAY_S_PER_M, lossless_reach, pfc_xoff
from twin.twins.net import collectives as coll
from twin.twins.net import routing, topology

LAB = (SITES / "lab-campus.yaml").read_text()
MTU = 9216


def test_pfc_xoff_closed_form():
    """IEEE 802.1Qbb headroom: line rate x (round trip + response) + 2 MTU. 400G over 12 km:
    50e9 B/s x (2 x 12,000 m x 4.9 ns/m + 1.5 us) + 18,432 B = 5,973,432 B."""
    assert pfc_xoff(400e9, 12_000, MTU) == 50e9 * (2 * 12_000 * 4.9e-9 + 1.5e-6) + 2 * MTU == 5_973_432
    assert lossless_reach(400e9, pfc_xoff(400e9, 5_000, MTU), MTU) == pytest.approx(5_000)


def test_headroom_verdict_per_route():
    """Minipack2 ATSWs (64 MiB buffer, a 16 MiB shared headroom pool) with 8 ports to their CTSWs at 10 m
    (98,332 B each) and 4 to each other building. b3's ATSWs reserve 8 x 98,332 + 4 x 857,832 (1,560 m
    to b1) + 4 x 6,002,832 (12,060 m to b2) = 28.2 MB: more than the pool, so no route into b3 holds
    lossless; b2's (25.8 MB) neither, so even the 310 m b1-b2 route fails at its b2 end; b1's 5.2 MB
    fits. The b2-b3 route's room at b3-atsw-01 is (2^24 - 786,656 - 3,431,328) / 4 = 3,139,808 B per
    port, which lossless fills at ((3,139,808 - 18,432) / 50e9 - 1.5 us) / 9.8 ns/m = 6,217 m."""
    d = compiled("lab-campus")
    h = distance.headroom(d)
    pairs = {(p.a, p.b): p for p in h["pairs"]}
    need = dict(zip(h["names"], h["need"].tolist()))
    assert need["b1-atsw-01"] == 8 * 98_332 + 4 * pfc_xoff(400e9, 310, MTU) + 4 * pfc_xoff(400e9, 1560, MTU) < 2**24
    assert need["b3-atsw-01"] == 8 * 98_332 + 4 * 857_832 + 4 * 6_002_832 > need["b2-atsw-01"] > 2**24
    for p in pairs.values():
        assert p.xoff_bytes == pfc_xoff(400e9, p.length_m, MTU) and not p.fits
    far = pairs["b2", "b3"]
    assert (far.switch, far.room_bytes) == ("b3-atsw-01", 3_139_808)
    assert round(far.reach_m) == round(((3_139_808 - 2 * MTU) / 50e9 - 1.5e-6) / (2 * 4.9e-9)) == 6217
    assert pairs["b1", "b2"].switch == "b2-atsw-01" and pairs["b1", "b2"].room_bytes < 0 and pairs["b1", "b2"].reach_m == 0
    # a cable holds lossless where both its end switches' pools hold every port's xoff
    ok = ~(h["need"] > h["pool"])
    assert ok.tolist() == [not n.startswith(("b2-atsw", "b3-atsw")) for n in h["names"]]


def test_verdict_headroom_is_what_the_sonic_profile_reserves():
    """Issue 23's known answer: for every link between buildings, the xoff the verdict counts at each end
    is the xoff of the lossless profile that end's generated config_db.json gives the port, the pool the
    verdict weighs is the one the config caps its shared headroom at, and the switch's need is the sum
    over its ports' profiles (one model: twin/compiler/config/buffers.py)."""
    import json

    from twin.emit import configs

    d = compiled("lab-campus")
    h = distance.headroom(d)
    dbs = {p.split("/")[2]: json.loads(b) for p, b in configs.emit(d).items() if p.startswith("configs/sonic/")}
    prio = d.spec.fabric.qos.pfc_priority
    cables = d.fabric.cables()
    row = {link: i for i, link in enumerate(d.cabling.ids)}
    longest = {(p.a, p.b): p.xoff_bytes for p in h["pairs"]}
    names = [b.name for b in d.spec.campus.buildings]
    for i in d.cabling.campus.index.tolist():
        c = cables[i]
        for switch, port in ((c.a, c.a_port), (c.b, c.b_port)):
            db = dbs[switch]
            profile = db["BUFFER_PROFILE"][db["BUFFER_PG"][f"{port}|{prio}"]["profile"]]
            assert int(profile["xoff"]) == h["xoff"][row[c.id]] == pfc_xoff(400e9, np.ceil(d.cabling.stock[i]), MTU)
    for p, x in zip(d.cabling.campus.pair, h["xoff"][d.cabling.campus.index]):
        assert x <= longest[names[p[0]], names[p[1]]]
    for k, name in enumerate(h["names"]):
        db = dbs[name]
        reserved = sum(int(db["BUFFER_PROFILE"][v["profile"]]["xoff"]) for key, v in db["BUFFER_PG"].items() if key.endswith(f"|{prio}"))
        assert reserved == h["need"][k]
        assert int(db["BUFFER_POOL"]["ingress_lossless_pool"]["xoff"]) == min(h["pool"][k], h["need"][k])


def test_a_deeper_buffer_moves_the_lossless_reach(tmp_path):
    """16x the buffer, a 256 MiB pool: every ATSW holds its ports' xoff, every route fits, and the b2-b3
    room at b3's ATSW is (2^28 - 8 x 98,332 - 4 x 857,832) / 4 per port."""
    p = tmp_path / "deep.yaml"
    p.write_text(LAB.replace("rack_types:", "catalog:\n  switches:\n    minipack2:\n" + _minipack2_with(buffer="1 GiB") + "\nrack_types:"))
    d = twin.load(p)
    pairs = {(x.a, x.b): x for x in distance.headroom(d)["pairs"]}
    assert all(x.fits for x in pairs.values())
    room = (2**28 - 8 * 98_332 - 4 * 857_832) / 4
    assert pairs["b2", "b3"].room_bytes == room
    assert pairs["b2", "b3"].reach_m == pytest.approx(((room - 2 * MTU) / 50e9 - 1.5e-6) / 9.8e-9)


def _minipack2_with(buffer: str) -> str:
    """The built-in Minipack2 as a site catalog entry with another buffer."""
    m = builtin().switches["minipack2"].model_dump(mode="json") | {"buffer": buffer}
    return "\n".join("      " + line for line in yaml.safe_dump(m, sort_keys=True).splitlines())


def test_twin_propagation_is_the_cable_length():
    """The simulator's arc latency of a link between buildings is its ordered length at 4.9 ns/m plus
    the forwarding latency of the switch it enters (Minipack2: 700 ns, catalog)."""
    d = compiled("lab-campus")
    net = topology.from_design(d)
    cc = d.cabling.campus
    arcs = {link: i for i, link in enumerate(net.arc_link[: net.n_link_arcs])}
    for k in cc.index[:: max(1, len(cc.index) // 6)]:
        link = d.cabling.ids[k]
        assert net.arc_latency[arcs[link]] == pytest.approx(d.cabling.stock[k] * FIBER_DELAY_S_PER_M + 700e-9)


def test_latency_ladder():
    """From rack 1 of b1: a rack of the zone crosses RTSW, CTSW, RTSW (3 x 0.7 us); another building adds
    two ATSWs and a CTSW on each side (6 x 0.7 us) and at least the trunk at 4.9 us/km."""
    d = compiled("lab-campus")
    rows = {r["to"]: r for r in distance.latency_ladder(d)}
    assert rows["another rack of the zone"]["forwarding_us"] == pytest.approx(2.1)
    for b, km in (("b2", 0.3), ("b3", 1.5)):
        r = rows[f"building {b}"]
        assert r["forwarding_us"] == pytest.approx(4.2)
        assert km * 4.9 < r["propagation_us"] < km * 4.9 + 0.5  # the trunk plus a few tens of metres inside
        assert r["one_way_us"] == pytest.approx(r["propagation_us"] + r["forwarding_us"])


def test_latency_share_of_a_ring_across_buildings():
    """A ring over 2 racks of each building crosses every route between buildings (b1-b2 0.3 km, b1-b3
    1.5 km, b2-b3 12 km: 13.8 km of trunk, 67.6 us at 4.9 ns/m) once per pass, and an AllReduce makes two
    passes (reduce-scatter, all-gather): its latency floor (8 B, LL, nothing to pipeline) is above
    2 x 67.6 us. At 1 GiB the chunked ring hides most of it, yet its share stays far above one building's."""
    d = compiled("lab-campus")
    rings = {r["ring"]: r for r in distance.cross_building_rings(d)}
    one, every = rings["one building"], rings["every building"]
    assert every["latency_us"] > 12_000 * 4.9e-3 > one["latency_us"]
    net = topology.from_design(d, within=distance.campus_nodes(d.fabric.graph))
    tm = coll.time_collective(net, "allreduce", "ring", np.arange(net.n_gpus), routing.Scheme("e", "e-ecmp", 16))
    assert tm.protocol(8) == "LL" and tm.latency(8) > 2 * 13_800 * 4.9e-9
    for s in every["sizes"]:
        assert s["latency_share"] == pytest.approx(tm.latency(s["bytes"]) / tm.time(s["bytes"]))
    assert every["sizes"][-1]["latency_share"] > 4 * one["sizes"][-1]["latency_share"]


def test_jobs_report_their_latency_share():
    from twin.lang.scenario.models import parse_scenario
    from twin.twins.run import simulate

    scn, src = parse_scenario("name: t\nrouting: [{name: e, scheme: e-ecmp, qps: 16}]\njobs: [{workload: lab-llama-8b}]\n")
    out = simulate(compiled("lab-2zone"), scn, src).data["cases"][0]["jobs"][0]["schemes"][0]
    comm = out["tp_s"] + out["cp_s"] + out["pp_exposed_s"] + out["dp_s"]
    assert 0 < out["comm_latency_s"] < comm and out["latency_share"] == pytest.approx(out["comm_latency_s"] / comm)

"""model/fabric.graphml and model/fabric.json: they load back into the same graph, byte-stably."""

from __future__ import annotations

import io
import json

import networkx as nx
import pytest
from fabric_helpers import SITES, compile_naive, variant

from twin.compiler.fabric.graph import Fabric
from twin.emit import model_export

NODE_SAMPLE = ("role", "level", "zone", "rack", "hall", "model", "u", "server", "gpu", "rail", "gpus")
EDGE_SAMPLE = ("kind", "tier", "speed", "a", "a_port", "b", "b_port")


@pytest.fixture(scope="module")
def lab():
    return compile_naive(SITES / "lab-2zone.yaml")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A 3-tier fat-tree (4,096 NICs on 64-port switches) and a second compile of the same spec."""
    p = variant(tmp_path_factory.mktemp("tree"), "meta-24k-ib", "tree-4k", gpus=4096)
    return compile_naive(p), compile_naive(p)


def _read(files: dict[str, bytes]) -> nx.MultiGraph:
    return nx.read_graphml(io.BytesIO(files["model/fabric.graphml"]), force_multigraph=True)


def _sample(items: list, n: int = 400) -> list:
    step = max(1, len(items) // n)
    return items[::step] + items[-3:]


def _check_graphml(design) -> None:
    fabric = design.fabric
    g = fabric.graph
    h = _read(model_export.emit(design))
    assert h.number_of_nodes() == g.number_of_nodes()
    assert h.number_of_edges() == g.number_of_edges()
    assert list(h.nodes) == list(g.nodes)
    assert h.graph["site"] == design.name and h.graph["family"] == fabric.family
    for n in _sample(list(g.nodes)):
        want = {k: v for k, v in g.nodes[n].items() if k in NODE_SAMPLE and v is not None}
        got = {k: v for k, v in h.nodes[n].items() if k in NODE_SAMPLE}
        assert got == want, n
        assert all(type(got[k]) is type(want[k]) for k in want), n  # ints stay ints
        assert "zone" in h.nodes[n] or g.nodes[n].get("zone") is None
    for lk in _sample(list(fabric.links)):
        got = h.edges[lk.a, lk.b, lk.id]
        assert {k: got[k] for k in EDGE_SAMPLE} == {k: getattr(lk, k) for k in EDGE_SAMPLE}, lk.id


def test_graphml_reads_back_lab(lab):
    _check_graphml(lab)
    h = _read(model_export.emit(lab))
    assert "zone" not in h.nodes["atsw-01"]  # None is left out, not written as "None"
    assert h.nodes["z1-ctsw-01"]["zone"] == 0


def test_graphml_reads_back_fat_tree(tree):
    d, _ = tree
    assert d.fabric.roles == ("leaf", "spine", "core")
    _check_graphml(d)


def test_json_round_trips_the_link_set(lab, tree):
    for d in (lab, tree[0]):
        fabric = d.fabric
        doc = json.loads(model_export.emit(d)["model/fabric.json"])
        assert doc["format"] == "twin-fabric/1" and doc["site"] == d.name
        assert doc["tiers"] == list(fabric.tiers) and doc["roles"] == list(fabric.roles)
        fields = doc["link_fields"]
        links = {tuple(row[fields.index(f)] for f in ("id", "a", "a_port", "b", "b_port", "speed", "tier", "kind")) for row in doc["links"]}
        assert links == set(fabric.links) and len(doc["links"]) == len(fabric.links)
        nf = doc["node_fields"]
        assert [r[0] for r in doc["nodes"]] == list(fabric.graph.nodes)
        for row in _sample(doc["nodes"]):
            attrs = fabric.graph.nodes[row[0]]
            assert {f: v for f, v in zip(nf[1:], row[1:]) if v is not None} == {k: v for k, v in attrs.items() if v is not None}


def test_exports_are_byte_identical_across_builds(tree):
    a, b = tree
    assert a is not b and a.fabric is not b.fabric
    fa, fb = model_export.emit(a), model_export.emit(b)
    assert fa.keys() == {"model/fabric.graphml", "model/fabric.json"}
    assert fa == fb


def test_lab_exports_are_byte_identical_across_builds(lab):
    again = compile_naive(SITES / "lab-2zone.yaml")
    assert model_export.emit(lab) == model_export.emit(again)


def _tiny(**node_attrs) -> Fabric:
    from twin.compiler.fabric.graph import Builder

    b = Builder()
    b.node("n&1", role="nic", level=0, **node_attrs)
    b.node("sw<1>", role="leaf", level=1, model='q"m', flag=True, weight=2)
    b.link("n&1", "port 'a'", "sw<1>", "1/1", 400e9, "nic-leaf")
    return b.build("fat-tree", "infiniband", ("nic-leaf",), ("leaf",))


def test_graphml_escapes_and_types():
    """Markup in names and values survives, extra attributes get typed keys, and they read back."""
    f = _tiny(note="a < b & c")
    text = model_export.graphml(f, "x").decode()
    assert 'attr.name="flag" attr.type="boolean"' in text and 'attr.name="weight" attr.type="long"' in text
    assert 'attr.name="speed" attr.type="double"' in text
    h = nx.read_graphml(io.StringIO(text), force_multigraph=True)
    assert h.nodes["n&1"]["note"] == "a < b & c"
    assert h.nodes["sw<1>"] == {"role": "leaf", "level": 1, "model": 'q"m', "flag": True, "weight": 2}
    assert h.edges["n&1", "sw<1>", "L000001"]["a_port"] == "port 'a'"


def test_graphml_refuses_what_xml_cannot_hold():
    with pytest.raises(ValueError, match="XML 1.0"):
        model_export.graphml(_tiny(note="bell\x07"), "x")
    with pytest.raises(TypeError, match="mixes"):
        model_export.graphml(_tiny(weight="heavy"), "x")


@pytest.mark.parametrize("attrs", [{}, {"note": "a < b & \"c\" é"}, {"weight": 1e16}, {"weight": 1e-05}, {"weight": 2**70}])
def test_fabric_json_is_the_standard_librarys_bytes(attrs):
    # orjson writes it where the two agree; a quote (escaped), 1e16 / 1e-05 (orjson: 1e16, 0.00001) and an
    # integer beyond 64 bits (orjson refuses) go to the standard library: the same bytes either way
    f = _tiny(**attrs)
    model = model_export.Model(f, "x")
    doc = {"nodes": model.nodes, "links": model.links}
    want = (json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n").encode()
    assert model_export.compact_json(doc, model) == want


def test_fabric_json_refuses_nan_as_the_standard_library_does():
    model = model_export.Model(_tiny(weight=float("nan")), "x")
    with pytest.raises(ValueError, match="JSON compliant"):
        model_export.compact_json({"nodes": model.nodes}, model)

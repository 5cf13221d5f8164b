"""Helpers shared by the fabric, BOM and cabling tests: spec variants and graph invariants."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import networkx as nx
import yaml

SITES = Path(__file__).resolve().parents[1] / "sites"


def variant(tmp_path: Path, base: str, name: str, rack_fields: dict | None = None, **fabric) -> Path:
    """A copy of sites/<base>.yaml with fields of ``fabric`` (and of the fabric's rack type, from
    ``rack_fields``) replaced, None deleting a field; the workloads are dropped since they are sized
    for the original GPU count."""
    doc = yaml.safe_load((SITES / f"{base}.yaml").read_text())
    doc = copy.deepcopy(doc)
    doc["name"] = name
    doc.pop("workloads", None)
    for section, fields in ((doc["fabric"], fabric), (doc["rack_types"][doc["fabric"]["rack_type"]], rack_fields or {})):
        for k, v in fields.items():
            if v is None:
                section.pop(k, None)
            else:
                section[k] = v
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def port_uses(g: nx.MultiGraph) -> Counter:
    """How often each (device, port) appears as a link end."""
    c: Counter = Counter()
    for _, _, d in g.edges(data=True):
        c[(d["a"], d["a_port"])] += 1
        c[(d["b"], d["b_port"])] += 1
    return c


def link_subgraph(g: nx.MultiGraph) -> nx.MultiGraph:
    return g.edge_subgraph((u, v, k) for u, v, k, kind in g.edges(keys=True, data="kind") if kind == "link")


def role_nodes(g: nx.MultiGraph, role: str) -> list[str]:
    return [n for n, r in g.nodes(data="role") if r == role]


def compile_naive(path):
    """Compile a spec through placement (the naive fill), fabric, cabling and BOM only.

    The fabric and cabling read whatever placement they are given; pinning the naive fill keeps these
    tests about the fabric, independent of the placement optimiser's run time and choices.
    """
    from twin.compiler import pipeline

    return pipeline.compile_design(path, until="bom", placement_method="naive")

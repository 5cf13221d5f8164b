"""Cable lengths for the network twin (twin/twins/net/lengths.py): a subfabric looks its cables' lengths up by
id (a 288-GPU report twin on the gigawatt site reads ~600 of 3.4M cables) and gets what the table of every
cable gives, on a plan whose ids follow the pattern and on one whose ids do not."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from twin.compiler.pipeline import compile_design
from twin.twins.net import subfabric, topology
from twin.twins.net.lengths import PlanLengths, cable_lengths

ROOT = Path(__file__).resolve().parents[1]


def test_looked_up_is_the_table():
    ids = ("L000001", "L000002", "x-7", "L000009", "L000004")  # the 4th and 5th off their places, one off the pattern
    m = np.array([1.5, np.nan, 3.0, 9.0, 4.0])
    lazy = PlanLengths(ids, m)
    assert [lazy[k] for k in ids] == [1.5, 0.0, 3.0, 9.0, 4.0]  # NaN: no propagation delay
    assert dict(lazy.items()) == {"L000001": 1.5, "L000002": 0.0, "x-7": 3.0, "L000009": 9.0, "L000004": 4.0}
    for missing in ("L000003", "L000006", "L0", "", "L-1", "nope"):
        assert missing not in lazy
        with pytest.raises(KeyError):
            lazy[missing]
    assert lazy.get("L000005", math.pi) == math.pi


def test_a_subfabric_compiles_the_same_with_either(tmp_path):
    d = compile_design(ROOT / "sites" / "lab-2zone-2plane.yaml", until="cabling")
    table, lazy = cable_lengths(d), cable_lengths(d, few=True)
    assert isinstance(table, dict) and isinstance(lazy, PlanLengths) and len(table) == len(lazy) == 448
    within = subfabric.first_gpus(d.fabric.graph, 32)
    a = topology.compile_graph(d.fabric.graph, None, None, table, within)
    b = topology.compile_graph(d.fabric.graph, None, None, lazy, within)
    assert np.array_equal(a.arc_latency, b.arc_latency) and a.arc_latency.max() > 0
    c = topology.compile_graph(d.fabric.graph, None, None, {}, within)  # no lengths: the tiers' defaults, a different answer
    assert not np.array_equal(a.arc_latency, c.arc_latency)

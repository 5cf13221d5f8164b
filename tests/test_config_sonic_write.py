"""The SONiC writer (twin/compiler/config/sonic_write.py) against the dictionaries it stands for: every
switch's config_db.json byte for byte ``config_db_json(config_db(...))`` of twin/compiler/config/sonic.py,
on example sites and on intents edited where a wrong writer would differ (a peer name that needs JSON
escapes or is not ASCII, switches of one model cabled differently, a switch with no cabled port)."""

from __future__ import annotations

import dataclasses
import json
from functools import cache

import pytest
from conftest import SITES

import twin
from twin.compiler.config import sonic
from twin.compiler.config.sonic_write import Row, Writer
from twin.compiler.resolve.targets import target_of


@cache
def design(name: str):
    return twin.load(SITES / f"{name}.yaml")


def sonic_switches(d):
    return [(sw, d.spec.switch(sw.model)) for sw in d.intent.switches.values() if target_of(d.spec.switch(sw.model)).name == "sonic"]


def reference(sw, site, model) -> bytes:
    return sonic.config_db_json(sonic.config_db(sw, site, model, sonic.shared_tables(site)))


@pytest.mark.parametrize("site", ["lab-2zone", "lab-campus", "lab-2plane"])
def test_writer_writes_the_dictionaries_bytes(site):
    d = design(site)
    switches = sonic_switches(d)
    assert len(switches) >= 4
    writer = Writer(d.intent.site)
    for sw, model in switches:
        assert writer.config_db_json(sw, model) == reference(sw, d.intent.site, model), sw.name


def test_writer_on_edited_intents():
    d = design("lab-2zone")
    site = d.intent.site
    (a, model), (b, _) = sonic_switches(d)[:2]
    odd = a.neighbors[0]._replace(peer='sw"\\é-1', peer_port="Eth\t0")  # escapes, a non-ASCII letter
    edited = [
        dataclasses.replace(a, neighbors=(odd,) + a.neighbors[1:]),
        dataclasses.replace(b, neighbors=b.neighbors[1:]),  # the same model, one port fewer
        dataclasses.replace(b, neighbors=(), server_ports=(), host=None),  # nothing cabled
        a,  # after the edits, the unedited switch: no cached row holds an edited value
    ]
    writer = Writer(site)
    for sw in edited:
        got = writer.config_db_json(sw, model)
        assert got == reference(sw, site, model)
    doc = json.loads(writer.config_db_json(edited[0], model))
    assert doc["DEVICE_NEIGHBOR"][odd.port] == {"name": 'sw"\\é-1', "port": "Eth\t0"}
    assert doc["PORT"][odd.port]["description"] == 'sw"\\é-1:Eth\t0'
    assert set(json.loads(writer.config_db_json(edited[2], model))["PORT"]) == {n for n, _ in sonic.platform_ports(model)}


def test_row_cut_at_its_slots():
    row = Row("T", "k", {"b": Row.slot(1), "a": Row.slot(0), "c": "x"})
    assert row.parts == ['  "k": {\n   "a": ', ',\n   "b": ', ',\n   "c": "x"\n  }']

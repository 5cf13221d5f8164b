"""InfiniBand verify of the rack-scale examples (issue 28): the GB200 NVL72 site on QM9700 and the same racks
as GB300 NVL72 on 144-port Quantum-X800 Q3400 switches route every HCA pair in ibsim + OpenSM.

The XDR fabric once showed 403,920 of 1,325,952 pairs unrouted. OpenSM's own LFT dump was complete; the
gap was in reading it back: ``dump_fts`` (infiniband-diags 44) leaves out entries whose out port is above
127 unless given ``-a``, so every route a leaf sends up through ports 128-144 (17 of its 72 uplinks)
looked missing. ``twin verify`` now reads ``dump_fts -a -n`` and judges each port itself."""

from __future__ import annotations

import pytest
from conftest import SITES
from test_rack_scale import _gb300_xdr_site

from twin.build import build
from twin.verify import ib, ib_tables

WHY = ib.missing_binaries()
needs_ib = pytest.mark.skipif(WHY is not None, reason=WHY or "")


def test_lft_entries_above_port_127_and_unset_entries_are_parsed():
    # `dump_fts -a -n` of a Q3400 leaf: an up-port above 127, and an entry no SM wrote (255)
    head = ("Unicast lids [0x1-0x4] of switch DR path slid 0; dlid 0; 0,1,73,109 guid 0x0002c90300000007 (leaf-0007):\n"
            "  Lid  Out   Destination\n       Port     Info\n")
    fts = head + "".join(f"{lid} {port} \n" for lid, port in
                         (("0x0001", "073"), ("0x0002", "255"), ("0x0003", "136"), ("0x0004", "000"))) + "4 lids dumped\n"
    assert ib_tables.parse_dump_fts(fts) == {"S-0002c90300000007": {1: 73, 3: 136, 4: 0}}


@needs_ib
@pytest.mark.slow
@pytest.mark.parametrize("variant,switches", [("gb200-nvl72-qm9700", 68), ("gb300-nvl72-q3400", 24)])
def test_rack_scale_fabric_routes_every_pair(tmp_path, variant, switches):
    """2 scalable units, 1,152 HCAs: all 1,152 x 1,151 ordered pairs routed leaf-spine-leaf (3 switch hops).
    Q3400: 16 leaves + 8 spines of 144 ports ([dgx-b300-xdr-ra] Table 3, 2 SUs), each leaf 72 down, 72 up."""
    site = SITES / "gb200-nvl72.yaml"
    if variant.endswith("q3400"):
        site = tmp_path / "xdr2.yaml"
        site.write_text(_gb300_xdr_site(2))
    out = tmp_path / "out"
    build(site, out)
    net = out / "model" / "topology.net"
    if variant.endswith("q3400"):
        assert "Switch\t144 " in net.read_text()
    r = ib.route_fabric(out / "configs" / "opensm", net)
    assert r.ok, r.problems
    assert r.engine == "ftree" and r.engine_in_use
    assert (r.hcas, r.switches, r.pairs_checked) == (1152, switches, 1152 * 1151)
    assert (r.unrouted, r.loops, r.max_hops) == (0, 0, 3)

"""report.md section "Routing and switch configs": what a reviewer checks before configs ship.

ASN plan per tier, how full each address pool is (a pool near its limit is tomorrow's expansion
blocker), the ECMP width every role is configured for, QoS and hashing; for InfiniBand the OpenSM
engine, LMC and partitions.
"""

from __future__ import annotations

from collections import defaultdict

from twin.compiler.design import Design
from twin.emit.markdown import table


def section(d: Design) -> str | None:
    fabric = d.fabric
    if fabric is None:
        return None
    f = d.spec.fabric
    if f.technology.value == "infiniband":
        ib = f.infiniband
        rows = [["routing engine", ib.routing_engine], ["LMC", str(ib.lmc)], ["SM priority", str(ib.sm_priority)],
                ["partitions", ", ".join(f"{p.name} (0x{p.pkey:04x})" for p in ib.partitions)]]
        return ("## Subnet manager (OpenSM)\n\n" + table(["", ""], rows, "ll")
                + "\nFiles: `configs/opensm/` (opensm.conf, root_guids.conf, partitions.conf), `model/topology.net`.\n"
                "`twin verify` routes the fabric in ibsim with OpenSM and checks every HCA pair.")
    a = d.addressing
    if a is None or d.intent is None:
        return None
    g = fabric.graph
    by_role: dict[str, dict] = defaultdict(lambda: {"n": 0, "asns": set(), "width": set()})
    for n, asn in a.asn.items():
        r = by_role[g.nodes[n]["role"]]
        r["n"] += 1
        r["asns"].add(asn)
        r["width"].add(d.intent.switches[n].maximum_paths)  # as configured (the intent owns the width)
    rows = [
        [role, f"{v['n']:,}", f"{len(v['asns']):,} ({min(v['asns'])}-{max(v['asns'])})", ", ".join(map(str, sorted(v["width"])))]
        for role, v in sorted(by_role.items(), key=lambda kv: g.nodes[next(n for n in a.asn if g.nodes[n]['role'] == kv[0])]["level"])
    ]
    top = "one for the aggregation tier"
    if d.spec.campus is not None:
        top = "one per building's aggregation (ATSW) layer" + (", one for the campus spine" if d.spec.campus.topology == "spine" else "")
    out = f"## Routing and switch configs\n\neBGP in RFC 7938 style: one ASN per rack switch, one per zone's spine tier, {top}.\n\n"
    out += table(["role", "switches", "ASNs", "maximum-paths"], rows, "lrrr")
    pools = []
    for name, (used, size) in a.pool_use().items():
        pools.append([f"routing.{name}", a.pools[name], f"{used:,} of {size:,} ({100 * used / size:.1f}%)"])
    out += "\n" + table(["pool", "prefix", "addresses used"], pools, "llr")
    q = f.qos
    out += (f"\nPoint-to-point: {'BGP unnumbered (IPv6 link-local)' if a.unnumbered else f'{len(a.p2p):,} /31 links'}; "
            f"IPv6 {'on' if a.ipv6 else 'off'}; BFD {'on' if f.routing.bfd else 'off'}; ECMP hash: {', '.join(f.routing.hash_fields)}.\n"
            f"QoS: DSCP {', '.join(map(str, q.lossless_dscp))} lossless on priority {q.pfc_priority} (PFC), "
            f"ECN {'off' if q.ecn is None else f'{q.ecn.min_threshold / 1e3:g}-{q.ecn.max_threshold / 1e3:g} kB at {q.ecn.max_probability:.0%}'}, "
            f"DCQCN {'on' if q.dcqcn else 'off'}, PFC watchdog {'off' if q.pfc_watchdog is None else f'{q.pfc_watchdog * 1e3:g} ms'}, MTU {q.mtu}.\n"
            "Files: `configs/frr/` (one frr.conf per switch + topology.json for `twin verify`), `configs/sonic/<switch>/config_db.json`, `configs/eos/`.\n")
    return out

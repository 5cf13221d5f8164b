"""Neighbour tables a built cluster would print, made from its plan and a wiring (which ports a cable
really joins), with faults injected at random: the known answers of ``twin as-built``.

The documents have the shapes the real programs print (checked against real lldpd in
tests/test_asbuilt_lab.py): lldpd's ``{"lldp": {"interface": ...}}`` with an object for one neighbour
and a list for several, SONiC switches sending their port alias as a ``local`` port id with the port's
description, Linux hosts their MAC with the interface name in ``descr``; EOS's ``lldpNeighbors`` after
Arista's JSON model for ``show lldp neighbors detail``; InfiniBand in ibnetdiscover's format.
"""

from __future__ import annotations

import json
import random
import zlib

from twin.asbuilt.plan import End, Plan

SWITCH_DESCR = "SONiC Software Version: SONiC.202405 - HwSku: Minipack2-O64 - Distribution: Debian 12.5 - Kernel: 6.1.0-11-2-amd64"
HOST_DESCR = "Debian GNU/Linux 12 (bookworm) Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 x86_64"


def planned_wiring(plan: Plan) -> dict[End, End]:
    w: dict[End, End] = {}
    for a, b in zip(plan.a, plan.b):
        w[a], w[b] = b, a
    return w


def mac(name: str) -> str:
    h = zlib.crc32(name.encode()) << 8 | len(name)
    return "02:" + ":".join(f"{(h >> s) & 0xFF:02x}" for s in (32, 24, 16, 8, 0))


def reporters(plan: Plan) -> list[str]:
    """Every device that runs LLDP: switches and servers (a server answers for its NICs)."""
    return sorted(set(plan.nics) | {d for d, dev in plan.devices.items() if dev.role not in ("nic", "endpoint")})


def _far(plan: Plan, end: End, servers: dict[str, tuple[str, str]], eos: set[str]) -> tuple[str, dict]:
    """(system name, lldpd port object) the device at ``end`` sends."""
    dev, port = end
    if end in servers:  # a NIC port: its host and the interface it gives it
        server, iface = servers[end]
        return server, {"id": {"type": "mac", "value": mac(dev if port == "port1" else f"{dev}/{port}")}, "descr": iface, "ttl": "120"}
    model = plan.devices[dev].model if dev in plan.devices else None
    alias = {v: k for k, v in plan.port_alias.get(model or "", {}).items() if k != v}
    if dev not in eos and port in alias:  # SONiC: the alias as a locally assigned id, the description beside it
        return dev, {"id": {"type": "local", "value": alias[port]}, "descr": f"to-peer:{port}", "ttl": "120"}
    return dev, {"id": {"type": "ifname", "value": port}, "descr": port, "ttl": "120"}


def lldpd_doc(plan: Plan, dev: str, wiring: dict[End, End], servers: dict, eos: set[str]) -> dict:
    ports = [(servers[(n, f"port{j}")][1], (n, f"port{j}")) for n in plan.nics[dev] for j in range(1, 9) if (n, f"port{j}") in servers] \
        if dev in plan.nics else \
        [(p, (dev, p)) for p in plan.port_names.get(plan.devices[dev].model or "", ())]
    items = []
    for local, end in ports:
        far = wiring.get(end)
        if far is None:
            continue
        name, port = _far(plan, far, servers, eos)
        items.append({local: {"via": "LLDP", "rid": "1", "age": "0 day, 00:10:00", "chassis": {name: {
            "id": {"type": "mac", "value": mac(name)}, "descr": HOST_DESCR if far in servers else SWITCH_DESCR,
            "mgmt-ip": "10.0.0.1", "capability": [{"type": "Bridge", "enabled": far not in servers}, {"type": "Router", "enabled": far not in servers}]}},
            "port": port}})
    if not items:
        return {"lldp": {}}
    return {"lldp": {"interface": items[0] if len(items) == 1 else items}}


def eos_doc(plan: Plan, dev: str, wiring: dict[End, End], servers: dict, eos: set[str]) -> dict:
    """After Arista's JSON model of ``show lldp neighbors detail`` (EOS eAPI): per port a
    ``lldpNeighborInfo`` list, each with ``systemName`` and ``neighborInterfaceInfo``."""
    table = {}
    for p in plan.port_names.get(plan.devices[dev].model or "", ()):
        far = wiring.get((dev, p))
        info = []
        if far is not None:
            name, port = _far(plan, far, servers, eos)
            host = port["id"]["type"] == "mac"
            info.append({"chassisIdType": "macAddress", "chassisId": mac(name).replace(":", "")[:12], "systemName": name,
                         "systemDescription": HOST_DESCR if host else SWITCH_DESCR, "ttl": 120,
                         "neighborInterfaceInfo": {"interfaceIdType": "macAddress" if host else "interfaceName",
                                                   "interfaceId": port["id"]["value"] if host else f'"{port["id"]["value"]}"',
                                                   "interfaceId_v2": port["id"]["value"], "interfaceDescription": port["descr"],
                                                   "maxFrameSize": 9236}})
        table[p] = {"lldpNeighborInfo": info}
    return {"lldpNeighbors": table}


def collection(plan: Plan, wiring: dict[End, End], eos: set[str] = frozenset(), only: set[str] | None = None) -> dict[str, bytes]:
    """One file per reporting device (``<device>.json``), pretty-printed as lldpcli prints it."""
    servers = plan.host_name  # NIC port -> (server, interface)
    out = {}
    for dev in reporters(plan):
        if only is not None and dev not in only:
            continue
        doc = eos_doc(plan, dev, wiring, servers, eos) if dev in eos else lldpd_doc(plan, dev, wiring, servers, eos)
        out[f"{dev}.json"] = json.dumps(doc, indent=2).encode()
    return out


def free_ports(plan: Plan, wiring: dict[End, End]) -> list[End]:
    """Switch ports no planned or placed cable uses, in plan order."""
    out = []
    for dev, d in plan.devices.items():
        if d.role in ("nic", "endpoint"):
            continue
        out += [(dev, p) for p in plan.port_names.get(d.model or "", ()) if (dev, p) not in plan.at and (dev, p) not in wiring]
    return out


def inject(plan: Plan, seed: int, moved: int, swaps: int, missing: int, unexpected: int) -> tuple[dict[End, End], set]:
    """A wiring with these faults on distinct cables and ports, and the findings they must give:
    (kind, cable ids) and, for an unexpected cable, (kind, its two labels)."""
    rng = random.Random(seed)
    w = planned_wiring(plan)
    order = rng.sample(range(len(plan.ids)), moved + 2 * swaps + missing)
    free = free_ports(plan, w)
    rng.shuffle(free)
    want: set = set()
    it = iter(order)
    for _ in range(missing):
        i = next(it)
        del w[plan.a[i]], w[plan.b[i]]
        want.add(("missing", (plan.ids[i],)))
    for _ in range(swaps):
        i, j = next(it), next(it)
        a1, b1, a2, b2 = plan.a[i], plan.b[i], plan.a[j], plan.b[j]
        w[a1], w[b2], w[a2], w[b1] = b2, a1, b1, a2
        want.add(("swapped", tuple(sorted((plan.ids[i], plan.ids[j])))))
    for _ in range(moved):
        i = next(it)
        a, b = plan.a[i], plan.b[i]
        f = next(p for p in free if p[0] == b[0]) if any(p[0] == b[0] for p in free) else free[0]
        free.remove(f)
        del w[b]
        w[a], w[f] = f, a
        want.add(("miscabled", (plan.ids[i],)))
    for _ in range(unexpected):
        x = free.pop()
        y = next(p for p in reversed(free) if p[0] != x[0])
        free.remove(y)
        w[x], w[y] = y, x
        want.add(("unexpected", frozenset((plan.label(x), plan.label(y)))))
    return w, want


def got(findings) -> set:
    """Findings in the form :func:`inject` states its faults."""
    return {(f.kind, frozenset(f.ends[0])) if f.kind == "unexpected" else (f.kind, tuple(f.cables)) for f in findings}


def number(plan: Plan, end: End) -> int:
    """InfiniBand port number of a plan end (a switch port's place in its model's names)."""
    dev, port = end
    if port.startswith("port") and port[4:].isdigit():
        return int(port[4:])
    return plan.port_names[plan.devices[dev].model].index(port) + 1


def topology(plan: Plan, planned: str, wiring: dict[End, End], rates: dict[frozenset, str] | None = None) -> str:
    """The build's ``model/topology.net`` with its port lines rewritten for ``wiring`` (each link at the
    planned rate unless ``rates`` gives one, e.g. ``2xNDR``): what ibsim loads and what
    ibnetdiscover prints back."""
    ref = {dev: ("S" if plan.roles[dev] not in ("nic", "endpoint") else "H") + f"-{g:016x}" for g, dev in plan.guid.items()}
    out = []
    for line in planned.splitlines():
        if line.startswith("["):
            continue
        out.append(line)
        if line.startswith(("Switch\t", "Hca\t")):
            dev = line.split('# "')[1].split('"')[0]
            ports = sorted((number(plan, x), x, y) for x, y in wiring.items() if x[0] == dev)
            for p, x, y in ports:
                w, sp = plan.rate.get(x) or plan.rate.get(y) or (4, "NDR")
                rate = (rates or {}).get(frozenset((x, y)), f"{w}x{sp}")
                out.append(f'[{p}]\t"{ref[y[0]]}"[{number(plan, y)}]\t\t# "{y[0]}" lid 0 {rate}')
    return "\n".join(out) + "\n"

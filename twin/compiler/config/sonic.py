"""SONiC ``config_db.json`` per switch, built as dictionaries and written as the standard library's
``json.dumps(indent=1, sort_keys=True)`` would (:func:`twin.jsonfmt.dumps`, orjson).

What a SONiC switch loads at boot: its ports as the platform lays them out (every front-panel port of
the model's port map with its lanes, alias and index, the used ones up at their link's speed, the rest
down), ``DEVICE_METADATA`` (hostname, HWSKU, platform, role, ASN, router id), addresses, the rack's
VLAN, the expected neighbours, QoS (DSCP to traffic class, PFC on the lossless priority, PFC watchdog,
ECN/WRED, schedulers), buffers and the ECMP hash fields. BGP itself runs from the FRR config twin
writes beside it (``docker_routing_config_mode: split``), so ``BGP_NEIGHBOR`` only names the peers.

Every table and field is one SONiC's YANG models define (``tests/test_config_sonic.py`` validates every
file against them). The buffer plan is the traditional Broadcom layout, one ingress pool holding the
lossless headroom and two egress pools, sized from the model's ``buffer``:

======================  ======  =========  ==============================================================
pool                    type    mode       size
======================  ======  =========  ==============================================================
ingress_lossless_pool   ingress dynamic    buffer - shared headroom; ``xoff`` = shared headroom
egress_lossless_pool    egress  static     buffer (lossless queues are held back by PFC, never dropped)
egress_lossy_pool       egress  dynamic    buffer - shared headroom
======================  ======  =========  ==============================================================

Each used port's lossless priority group gets the profile of its link's speed and cable length in whole
metres (``pg_lossless_400000_3m_profile`` for a 3 m DAC, ``pg_lossless_400000_12060m_profile`` for a
route between buildings), whose ``xoff`` is what arrives after a PAUSE is sent over that cable; the shared
headroom is the sum of every used port's xoff, at most a quarter of the buffer. Both come from
:mod:`twin.compiler.config.buffers` through the intent, the model the distance verdict reads too.
"""

from __future__ import annotations

from functools import lru_cache

from twin.compiler.config.buffers import pool_cap
from twin.compiler.config.intent import Neighbor, ServerPort, SwitchIntent
from twin.compiler.fabric.ports import cage_of, port_names, width
from twin.compiler.resolve.cage_modes import platform_mode
from twin.jsonfmt import dumps as json_dumps
from twin.lang.site.catalog_models import SwitchModel

DEVICE_TYPE = {1: "ToRRouter", 2: "LeafRouter"}  # level 3 and above: SpineRouter
HASH_FIELD = {"src-ip": "SRC_IP", "dst-ip": "DST_IP", "protocol": "IP_PROTOCOL", "src-port": "L4_SRC_PORT",
              "dst-port": "L4_DST_PORT", "flow-label": "IPV6_FLOW_LABEL"}  # roce-dst-qp: no SONiC hash field
QUEUES = 8
MAP = "TWIN"
LOSSLESS_WRED = "TWIN_LOSSLESS"


def queue_ranges(lossless: int) -> list[str]:
    """The lossy queues around the lossless one, as SONiC ranges.

    >>> queue_ranges(3), queue_ranges(0), queue_ranges(7)
    (['0-2', '4-7'], ['1-7'], ['0-6'])
    """
    spans = [(0, lossless - 1), (lossless + 1, QUEUES - 1)]
    return [f"{a}-{b}" if a != b else str(a) for a, b in spans if a <= b]


@lru_cache(maxsize=32)
def platform_ports(model: SwitchModel) -> tuple[tuple[str, dict[str, str]], ...]:
    """Every front-panel port of a model as SONiC's port_config.ini gives it: name, lanes, alias, index,
    and the speed of its breakout mode (computed once per model; rows are copied before a change).

    >>> from twin.lang.catalog import builtin
    >>> rows = platform_ports(builtin().switches["minipack2"])
    >>> rows[1]
    ('Ethernet8', {'alias': 'etp2', 'index': '2', 'lanes': '9,10,11,12,13,14,15,16', 'speed': '400000'})
    """
    pm = model.port_map
    out = []
    for n0, name in enumerate(port_names(model)):
        first = pm.first_lane + n0 * pm.lanes_per_port
        lanes = ",".join(str(first + i) for i in range(pm.lanes_per_port))
        index = str(n0 // pm.cage_ports + 1)  # the front-panel cage: both ports of a 2x400G cage share it
        out.append((name, {"alias": pm.render_alias(n0), "index": index, "lanes": lanes, "speed": mbps(model.port_speed)}))
    return tuple(out)


def mbps(speed: float) -> str:
    """SONiC writes port speeds in Mbit/s: ``mbps(400e9) == '400000'``."""
    return str(round(speed / 1e6))


def shared_tables(site: dict) -> dict:
    """The QoS tables every SONiC switch of the site shares (built once per build)."""
    p, ctrl = site["pfc_priority"], site["control_priority"]
    dscp = {str(d): str(p if d in site["lossless_dscp"] else (ctrl if d == site["control_dscp"] else 0)) for d in range(64)}
    identity = {str(i): str(i) for i in range(QUEUES)}
    tables = {
        "DSCP_TO_TC_MAP": {MAP: dscp},
        "MAP_PFC_PRIORITY_TO_QUEUE": {MAP: identity},
        "SCHEDULER": {
            "scheduler.control": {"type": "STRICT"},
            "scheduler.default": {"type": "DWRR", "weight": "50"},
            "scheduler.lossless": {"type": "DWRR", "weight": "50"},
        },
        "SWITCH_HASH": {"GLOBAL": {"ecmp_hash": [HASH_FIELD[f] for f in site["hash_fields"] if f in HASH_FIELD]}},
        "TC_TO_PRIORITY_GROUP_MAP": {MAP: identity},
        "TC_TO_QUEUE_MAP": {MAP: identity},
    }
    ecn = site["ecn"]
    if ecn is not None:
        wred = {"ecn": "ecn_all"}
        for colour in ("green", "yellow", "red"):
            wred.update({
                f"{colour}_drop_probability": str(ecn["probability"]), f"{colour}_max_threshold": str(ecn["max_bytes"]),
                f"{colour}_min_threshold": str(ecn["min_bytes"]), f"wred_{colour}_enable": "true",
            })
        tables["WRED_PROFILE"] = {LOSSLESS_WRED: wred}
    return tables


def buffer_tables(model: SwitchModel, ports: dict[str, Neighbor | ServerPort], site: dict) -> dict:
    """BUFFER_POOL/PROFILE/PG/QUEUE for the used ports (``ports``: port -> its intent entry, with the link's
    ``speed``, ``cable_m`` and ``xoff`` from :mod:`twin.compiler.config.buffers`)."""
    total, mtu, p = int(model.buffer), site["mtu"], site["pfc_priority"]
    shared = min(pool_cap(total), sum(lk.xoff for lk in ports.values()))
    profiles = {
        "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "static_th": str(total)},
        "egress_lossy_profile": {"dynamic_th": "3", "pool": "egress_lossy_pool", "size": "1518"},
        "ingress_lossy_profile": {"dynamic_th": "3", "pool": "ingress_lossless_pool", "size": "0"},
    }
    buffer_pg, buffer_queue = {}, {}
    lossy = queue_ranges(p)
    for port, lk in ports.items():
        name = lossless_profile(lk.speed, lk.cable_m)
        profiles[name] = {
            "dynamic_th": "0", "pool": "ingress_lossless_pool", "size": str(2 * mtu), "xoff": str(lk.xoff), "xon": str(2 * mtu),
        }
        buffer_pg[f"{port}|0"] = {"profile": "ingress_lossy_profile"}
        buffer_pg[f"{port}|{p}"] = {"profile": name}
        buffer_queue[f"{port}|{p}"] = {"profile": "egress_lossless_profile"}
        for q in lossy:
            buffer_queue[f"{port}|{q}"] = {"profile": "egress_lossy_profile"}
    return {
        "BUFFER_PG": buffer_pg,
        "BUFFER_POOL": {
            "egress_lossless_pool": {"mode": "static", "size": str(total), "type": "egress"},
            "egress_lossy_pool": {"mode": "dynamic", "size": str(total - shared), "type": "egress"},
            "ingress_lossless_pool": {"mode": "dynamic", "size": str(total - shared), "type": "ingress", "xoff": str(shared)},
        },
        "BUFFER_PROFILE": profiles,
        "BUFFER_QUEUE": buffer_queue,
    }


def lossless_profile(speed: float, metres: int) -> str:
    """A lossless priority group's profile, named as SONiC names them by port speed and cable length.

    >>> lossless_profile(400e9, 12060)
    'pg_lossless_400000_12060m_profile'
    """
    return f"pg_lossless_{mbps(speed)}_{metres}m_profile"


def used_ports(sw: SwitchIntent, model: SwitchModel) -> dict[str, Neighbor | ServerPort]:
    """The cabled ports of a switch in the platform's port order: port -> its intent entry."""
    links: dict[str, Neighbor | ServerPort] = {nb.port: nb for nb in sw.neighbors}
    links.update({sp.port: sp for sp in sw.server_ports})
    return {name: links[name] for name, _ in platform_ports(model) if name in links}


def port_tables(model: SwitchModel, links: dict[str, Neighbor | ServerPort], site: dict) -> dict:
    """PORT for every front-panel port, DEVICE_NEIGHBOR for the cabled ones (``links``:
    :func:`used_ports`); the speed of each used port is its link's speed in the fabric graph."""
    port, neighbor = {}, {}
    fec, mtu = model.port_map.fec, str(site["mtu"])
    gone = taken(model, links)
    for name, base in platform_ports(model):
        if name in gone:
            continue
        lk = links.get(name)
        row = dict(base, admin_status="down" if lk is None else "up", fec=fec, mtu=mtu)
        if lk is not None:
            row["speed"] = mbps(lk.speed)
            row["lanes"] = lanes_at(model, name, lk.speed) or row["lanes"]
            row["alias"] = alias_at(model, name, lk.speed) or row["alias"]
            row["description"] = f"{lk.peer}:{lk.peer_port}"
            neighbor[name] = {"name": lk.peer, "port": lk.peer_port}
        port[name] = row
    return {"DEVICE_NEIGHBOR": neighbor, "PORT": port}


def breakout_table(model: SwitchModel, links: dict[str, Neighbor | ServerPort] | None = None) -> dict:
    """One BREAKOUT_CFG entry per cage, under its first port's name, in the model's first breakout mode, or
    in the wider mode of a used port that takes the cage's first port (``fabric.cages``)."""
    mode = {"brkout_mode": model.port_map.breakouts[0]}
    cage = model.port_map.cage_ports
    wide = {name: {"brkout_mode": platform_mode(model, width(model, lk.speed))}
            for name, lk in (links or {}).items() if lk.speed > model.port_speed}
    return {name: wide.get(name, mode) for i, (name, _) in enumerate(platform_ports(model)) if i % cage == 0}


def taken(model: SwitchModel, links: dict[str, Neighbor | ServerPort]) -> set[str]:
    """The platform ports that are part of a wider used port (``fabric.cages``: an 800G port on a cage split
    2 x 400G takes its second port), which SONiC then has no row for."""
    out: set[str] = set()
    if all(lk.speed <= model.port_speed for lk in links.values()):
        return out
    names = [name for name, _ in platform_ports(model)]
    for name, lk in links.items():
        if lk.speed > model.port_speed:
            i = names.index(name)
            out.update(names[i + 1:i + width(model, lk.speed)])
    return out


def alias_at(model: SwitchModel, name: str, speed: float) -> str | None:
    """The alias of a used port that runs its whole cage (``fabric.cages``: no sub-port letter), or None."""
    if width(model, speed) < model.ports_per_cage or model.ports_per_cage == 1:
        return None
    return model.port_map.render_alias(port_names(model).index(name), whole=True)


def lanes_at(model: SwitchModel, name: str, speed: float) -> str | None:
    """The lanes of a used port of a wider mode (its cage's logical ports' lanes together), or None."""
    if speed <= model.port_speed:
        return None
    _, _, (first, last) = cage_of(model, name, speed)
    return ",".join(str(x) for x in range(first, last + 1))


def routing_tables(sw: SwitchIntent, site: dict) -> dict:
    """Addresses of the routed ports, the loopback, the rack VLAN and the BGP peers' names."""
    interface, bgp = {}, {}
    for nb in sw.neighbors:
        port = nb.port
        if site["unnumbered"]:
            interface[port] = {"ipv6_use_link_local_only": "enable"}
            continue
        interface[port] = {}
        interface[f"{port}|{nb.address}"] = {}
        peer = {"admin_status": "up", "asn": str(nb.peer_asn), "holdtime": "9", "keepalive": "3", "name": nb.peer}
        bgp[nb.peer_ip] = dict(peer, local_addr=nb.address.split("/")[0])
        if nb.address6:
            interface[f"{port}|{nb.address6}"] = {}
            bgp[nb.peer_ip6] = dict(peer, local_addr=nb.address6.split("/")[0])
    loopback = {"Loopback0": {}, f"Loopback0|{sw.loopback}": {}}
    if sw.loopback6:
        loopback[f"Loopback0|{sw.loopback6}"] = {}
    tables = {"INTERFACE": interface, "LOOPBACK_INTERFACE": loopback}
    if bgp:
        tables["BGP_NEIGHBOR"] = bgp
    host = sw.host
    if host:
        vlan = host.ifname
        svi = {vlan: {}, f"{vlan}|{host.gateway}": {}}
        if host.gateway6:
            svi[f"{vlan}|{host.gateway6}"] = {}
        tables["VLAN"] = {vlan: {"vlanid": str(host.vlan)}}
        tables["VLAN_INTERFACE"] = svi
        tables["VLAN_MEMBER"] = {f"{vlan}|{p}": {"tagging_mode": "untagged"} for p in host.ports}
    return tables


def qos_port_tables(ports: list[str], site: dict) -> dict:
    """Per used port: the QoS maps, PFC on the lossless priority, its watchdog and the queue schedulers."""
    p, ctrl, wd = str(site["pfc_priority"]), site["control_priority"], site["pfc_watchdog_ms"]
    qos_map = {"dscp_to_tc_map": MAP, "pfc_enable": p, "pfc_to_queue_map": MAP, "tc_to_pg_map": MAP, "tc_to_queue_map": MAP}
    if wd:
        qos_map["pfcwd_sw_enable"] = p
    lossless = {"scheduler": "scheduler.lossless"}
    if site["ecn"] is not None:
        lossless["wred_profile"] = LOSSLESS_WRED
    queue = {}
    for port in ports:
        queue[f"{port}|0"] = {"scheduler": "scheduler.default"}
        queue[f"{port}|{p}"] = lossless
        queue[f"{port}|{ctrl}"] = {"scheduler": "scheduler.control"}
    tables = {"PORT_QOS_MAP": {port: qos_map for port in ports}, "QUEUE": queue}
    if wd:
        watchdog = {"action": "drop", "detection_time": str(wd), "restoration_time": str(wd)}
        tables["PFC_WD"] = {port: watchdog for port in ports}
    return tables


def metadata_table(sw: SwitchIntent, model: SwitchModel, site: dict) -> dict:
    """DEVICE_METADATA: hostname, HWSKU, platform, role, ASN, router id."""
    pm = model.port_map
    return {"localhost": {
        "bgp_asn": str(sw.asn), "bgp_router_id": sw.router_id, "buffer_model": "traditional",
        "default_bgp_status": "up", "default_pfcwd_status": "enable" if site["pfc_watchdog_ms"] else "disable",
        "docker_routing_config_mode": "split", "hostname": sw.name, "hwsku": pm.hwsku, "platform": pm.platform,
        "synchronous_mode": "enable", "type": DEVICE_TYPE.get(sw.level, "SpineRouter"),
    }}


def switch_tables(sw: SwitchIntent, model: SwitchModel, site: dict, links: dict[str, Neighbor | ServerPort]) -> dict:
    """The tables that name this switch or its peers: ports, neighbours, metadata, addresses, BGP peers, VLAN."""
    tables = port_tables(model, links, site) | routing_tables(sw, site)
    tables["DEVICE_METADATA"] = metadata_table(sw, model, site)
    return tables


def pattern_tables(model: SwitchModel, links: dict[str, Neighbor | ServerPort], site: dict) -> dict:
    """QoS and buffers of the used ports: the same for every switch of a model cabled alike."""
    return qos_port_tables(list(links), site) | buffer_tables(model, links, site)


def config_db(sw: SwitchIntent, site: dict, model: SwitchModel, shared: dict) -> dict:
    """The whole config_db of one switch (``sw``: its intent; ``shared``: :func:`shared_tables`)."""
    links = used_ports(sw, model)
    tables = switch_tables(sw, model, site, links) | pattern_tables(model, links, site)
    tables["BREAKOUT_CFG"] = breakout_table(model, links)
    return tables | shared


def config_db_json(db: dict) -> bytes:
    """Sorted keys and one-space indent, newline-terminated (every value is a string)."""
    return json_dumps(db)

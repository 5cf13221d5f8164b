"""Switch configurations: FRR per switch, each switch's config target, and the verify topology.

Every routed switch gets an FRR config (the routing stack of SONiC and the model that ``twin verify``
runs); then the target its model names in the catalog (the registry
:mod:`twin.lang.site.config_targets`): a template target is rendered from its folder of ``templates/``
(EOS), a built target by its builder in ``BUILDERS`` (SONiC's config_db.json, dictionaries from
:mod:`twin.compiler.config.sonic`); a subnet target (OpenSM) is written once for the fabric by
:mod:`twin.emit.configs_ib`. ``configs/frr/topology.json`` lists the links, host attachments and the
design's predictions' inputs (ASNs, ECMP width) so that ``twin verify`` needs nothing but the
generated folder.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from typing import NamedTuple

from twin.compiler.config.intent import Intent, SwitchIntent, linux_ifname
from twin.compiler.config.render import render
from twin.compiler.config.sonic_write import Writer
from twin.compiler.design import Design
from twin.compiler.resolve.targets import target_of
from twin.heap import collector_paused
from twin.lang.site.catalog_models import SwitchModel
from twin.lang.site.config_targets import ConfigTarget

FRR_TEMPLATE = {r: f"frr/{r}.conf.j2" for r in ("rtsw", "ctsw", "atsw", "cssw")}


def _host_ip(gateway: str) -> str:
    ip, prefixlen = gateway.split("/")
    return f"{ipaddress.ip_address(ip) + 1}/{int(prefixlen)}"


def topology(intent: Intent) -> dict:
    """The lab a verify run builds: one entry per switch, link and rack (sorted, deterministic)."""
    switches, links, hosts = [], [], []
    for name, sw in sorted(intent.switches.items()):
        switches.append({
            "name": name, "role": sw.role, "level": sw.level, "zone": sw.zone, "asn": sw.asn,
            "maximum_paths": sw.maximum_paths, "originate": sw.originate, "originate6": sw.originate6,
            "loopback": sw.loopback,
            "config": f"{name}.conf",
        } | ({"building": sw.building} if sw.building is not None else {}))
        for nb in sw.neighbors:
            if name < nb.peer or (name == nb.peer and nb.port < nb.peer_port):
                # the peer's end of the link is its port nb.peer_port, named for Linux as every end is
                links.append({"id": nb.link, "a": name, "a_if": nb.ifname, "b": nb.peer, "b_if": linux_ifname(nb.peer_port)})
        if sw.host:
            h = sw.host
            hosts.append({
                "switch": name, "ifname": h.ifname, "subnet": h.subnet, "gateway": h.gateway.split("/")[0],
                "host_ip": _host_ip(h.gateway),
                "subnet6": h.subnet6, "gateway6": h.gateway6.split("/")[0] if h.gateway6 else None,
                "host_ip6": _host_ip(h.gateway6) if h.gateway6 else None,
            })
    links.sort(key=lambda lk: lk["id"])
    return {"site": intent.site["name"], "unnumbered": intent.site["unnumbered"], "ipv6": intent.site["ipv6"],
            "bfd": intent.site["bfd"], "switches": switches, "links": links, "hosts": hosts}


_SORTED = json.JSONEncoder(sort_keys=True)


def _encoder() -> Callable[[object], str]:
    """``json.dumps(v, sort_keys=True)``: the standard library's C encoder, made once (``dumps`` makes
    one per call: most of the time for 31K small entries)."""
    e = json.encoder
    if e.c_make_encoder is None:
        return _SORTED.encode
    enc = e.c_make_encoder(None, _SORTED.default, e.encode_basestring_ascii, None, ": ", ", ", True, False, True)
    return lambda v: "".join(enc(v, 0))


def topology_json(topo: dict) -> str:
    """One JSON object per line: readable and diffable, and written by the C encoder (indent=
    would switch json to its pure-Python encoder, seconds for a 24K-GPU site)."""
    parts, encode = [], _encoder()
    for key in sorted(topo):
        value = topo[key]
        if isinstance(value, list):
            body = "[\n" + ",\n".join("  " + encode(v) for v in value) + "\n ]" if value else "[]"
        else:
            body = encode(value)
        parts.append(f" {json.dumps(key)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def emit(design: Design) -> dict[str, bytes]:
    """Every switch config: :func:`emit_frr`'s and :func:`emit_targets`'."""
    return {**emit_frr(design), **emit_targets(design)}


def emit_frr(design: Design) -> dict[str, bytes]:
    """FRR per routed switch and the verify topology (``configs/frr/``). The build renders this and
    :func:`emit_targets` as two emitters, so its two processes share a big site's ~3,400 files (most
    of their cost on a big site is the file system creating them, not rendering)."""
    return _paused(_frr, design)


def emit_targets(design: Design) -> dict[str, bytes]:
    """Each switch's config target (SONiC's config_db.json, EOS, ...): :func:`emit_targets_first`'s
    and :func:`emit_targets_second`'s."""
    return {**emit_targets_first(design), **emit_targets_second(design)}


def emit_targets_first(design: Design) -> dict[str, bytes]:
    """The config targets of the first half of the switches (in the intent's order). The build takes
    the two halves as two emitters: a SONiC switch is a folder of its own, and creating thousands of
    folders is the largest single cost of a big site's output, which both processes then share."""
    return _paused(lambda d: _targets(d, 0), design)


def emit_targets_second(design: Design) -> dict[str, bytes]:
    """The config targets of the other half of the switches."""
    return _paused(lambda d: _targets(d, 1), design)


def _paused(part: Callable[[Design], dict[str, bytes]], design: Design) -> dict[str, bytes]:
    if design.addressing is None:
        return {}
    with collector_paused():  # ~100K small dicts, none cyclic: collections would only rescan them
        return part(design)


class Builder(NamedTuple):
    """How a built target is written."""

    shared: Callable[[dict], object]  # what every switch shares, built once per build from the site context (SONiC: its Writer)
    switch: Callable[[SwitchIntent, dict, SwitchModel, object], dict[str, bytes]]  # one switch's files


def _sonic(sw: SwitchIntent, site: dict, model: SwitchModel, writer: Writer) -> dict[str, bytes]:
    return {f"configs/sonic/{sw.name}/config_db.json": writer.config_db_json(sw, model)}


BUILDERS = {"sonic": Builder(Writer, _sonic)}


def _template(t: ConfigTarget, sw: SwitchIntent, site: dict, shared: dict) -> dict[str, bytes]:
    text = render(f"{t.folder}/{sw.role}.{t.template}.j2", sw=sw, site=site, **shared)
    return {f"configs/{t.folder}/{sw.name}.{t.template}": text.encode()}


def _frr(design: Design) -> dict[str, bytes]:
    intent = design.intent
    site = intent.site
    files = {f"configs/frr/{name}.conf": render(FRR_TEMPLATE[sw.role], sw=sw, site=site).encode()
             for name, sw in intent.switches.items()}
    files["configs/frr/topology.json"] = topology_json(topology(intent)).encode()
    return files


def _targets(design: Design, half: int) -> dict[str, bytes]:
    intent = design.intent
    switches = list(intent.switches.values())
    cut = len(switches) // 2
    switches = switches[:cut] if half == 0 else switches[cut:]
    site = intent.site
    files: dict[str, bytes] = {}
    shared: dict[str, object] = {}  # what every switch of a target shares, built once per build

    def shared_of(t: ConfigTarget):
        if t.name not in shared:
            if t.template is not None:
                shared[t.name] = {s: render(f"{t.folder}/{s}.j2", site=site).rstrip("\n") for s in t.shared}
            elif t.name in BUILDERS:
                shared[t.name] = BUILDERS[t.name].shared(site)
        return shared.get(t.name)

    for sw in switches:
        model = design.spec.switch(sw.model)
        t = target_of(model)
        if t.template is not None:
            files.update(_template(t, sw, site, shared_of(t)))
        elif t.name in BUILDERS and all(getattr(model, n.field) is not None for n in t.needs):
            files.update(BUILDERS[t.name].switch(sw, site, model, shared_of(t)))  # a model without (a warning) gets none
    return files

"""The design as one JSON document: the resolved, unit-normalised site with every default filled in
(written as design.json; read by the sweep figures as ``design:`` paths).

Quantities are written as strings in their canonical unit (``"22200 W"``) so the file is readable,
re-loadable by the same models, and byte-stable.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from twin.compiler.design import Design
from twin.version import __version__


def dumps(obj) -> bytes:
    """The one JSON encoding of every artifact: sorted keys, fixed indent, trailing newline."""
    return (json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def document(design: Design) -> dict:
    spec = design.spec
    site = spec.site.model_dump(mode="json")
    if site["fabric"].get("planes") == 1:  # a single-plane fabric: as before planes existed (byte-identical)
        site["fabric"].pop("planes")
    used = {
        "chassis": {spec.rack_type.chassis: _chassis(spec.chassis)},
        "switches": {
            name: spec.catalog.switches[name].model_dump(mode="json") for name in sorted(_switches_used(spec))
        },
        "media": {k: _medium(v) for k, v in sorted(spec.catalog.media.items())},
        "facility": {m: spec.catalog.facility[m].model_dump(mode="json")
                     for m in sorted({h.cooling.medium for h in spec.site.halls}) if m in spec.catalog.facility},
    }
    site["catalog"] = used
    b = design.budget
    return {
        "twin_version": __version__,
        "spec_sha256": spec.source_sha256,
        "site": site,
        "derived": {
            "gpus": spec.gpus,
            "racks": spec.racks,
            "zones": spec.zones,
            "racks_per_zone": spec.racks_per_zone,
            "nic_speed": f"{spec.nic_speed:g} bit/s",
            "rack": {k: (f"{v:g} W" if k.endswith("power") or k == "gpu_power_cap" else v) for k, v in asdict(spec.rack).items() if k != "weight"}
            | {"weight": f"{spec.rack.weight:g} kg"},
            "gpu_positions": dict(sorted(spec.positions.items())),
            "power": {
                "it": f"{b.it_power:g} W",
                "facility": f"{b.facility_power:g} W",
                "network": f"{b.network_power:g} W",
                "network_rack_switches": f"{b.rack_switch_power:g} W",
                "network_optics": f"{b.optics_power:g} W",
                "network_total": f"{b.network_total:g} W",
                "utility": f"{b.utility:g} W",
                "network_switches": b.network_switches,
            },
        },
        "warnings": [d.to_json() | {"file": Path(spec.source_path).name} for d in design.warnings],
    } | _campus(spec)


def _campus(spec) -> dict:
    """A campus's resolved buildings and routes (nothing for a site of one building)."""
    cp = spec.campus
    if cp is None:
        return {}
    return {"campus": {
        "buildings": {b.name: {"halls": list(b.halls), "zones": [z + 1 for z in b.zones], "utility": f"{b.utility:g} W", "pue": b.pue}
                      for b in cp.buildings},
        "routes": [{"between": [cp.buildings[r.a].name, cp.buildings[r.b].name], "length": f"{r.length:g} m", "how": r.how}
                   for _, r in sorted(cp.routes.items())],
        "tier": cp.tier, "oversubscription": cp.ratio,
    }}


def _switches_used(spec) -> set[str]:
    f = spec.fabric
    names = {t.model for t in (f.rtsw, f.ctsw, f.atsw) if t is not None and t.model}
    if spec.rack_type.rtsw:
        names.add(spec.rack_type.rtsw)
    if f.switch:
        names.add(f.switch)
    return names


def _chassis(ch) -> dict:
    """The chassis as written; ``rack_scale`` only where there is one, ``nic_ports`` only above one (older
    designs stay byte-identical)."""
    out = ch.model_dump(mode="json")
    if out.get("rack_scale") is None:
        out.pop("rack_scale", None)
    if out.get("nic_ports") == 1:
        out.pop("nic_ports", None)
    return out


def _medium(m) -> dict:
    """A medium as written; the twin-port fields only on a module that serves several links."""
    out = m.model_dump(mode="json")
    if m.module_ports == 1:
        out.pop("module_ports", None)
        out.pop("far_end", None)
    return out

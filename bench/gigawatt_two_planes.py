"""gigawatt-campus on two planes, as a spec of its own (issue 40: "multi-plane fabrics per building").

Each GB200's 400G NIC runs as 2 x 200G ports, one per plane (the layout of [gb300-nvl72-ra] at half the
speed, the same bandwidth per GPU); each plane has one RTSW per rack, 9 CTSWs per zone and half the ATSWs
of the one-plane site. Switch counts per tier stay those of the one-plane site; the cables at the RTSW
tiers double. The site itself stays on one plane (docs/howto/gigawatt.md, "Not done"); this is the copy
the measurements there were taken on.

    python bench/gigawatt_two_planes.py /tmp/gigawatt-2plane.yaml
    twin build /tmp/gigawatt-2plane.yaml -o /tmp/gigawatt-2plane
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def two_planes(doc: dict, catalog: dict) -> dict:
    """The spec ``doc`` (gigawatt-campus or a cut of it) on two planes; ``catalog``: twin's builtin catalog."""
    out = copy.deepcopy(doc)
    chassis = copy.deepcopy(catalog["chassis"]["gb200-nvl72"])
    chassis["nic_ports"] = 2
    chassis["description"] = "GB200 NVL72 whose ConnectX-7 400G NICs run as 2 x 200G ports, one per plane"
    out.setdefault("catalog", {}).setdefault("chassis", {})["gb200-nvl72-2port"] = chassis
    out["name"] = f"{doc['name']}-2plane"
    out["rack_types"]["nvl72"]["chassis"] = "gb200-nvl72-2port"
    out["rack_types"]["nvl72"]["rtsw_count"] = 1
    out["fabric"]["planes"] = 2
    out["fabric"]["ctsw"]["count"] = doc["fabric"]["ctsw"]["count"] // 2
    out["fabric"]["atsw"]["count"] = doc["fabric"]["atsw"]["count"] // 2
    out["fabric"]["routing"]["rack_pool"] = "10.0.0.0/10"  # twice the racks' subnets
    return out


def main(path: str) -> None:
    doc = yaml.safe_load((ROOT / "sites" / "gigawatt-campus.yaml").read_text(encoding="utf-8"))
    catalog = yaml.safe_load((ROOT / "twin" / "lang" / "catalog" / "builtin.yaml").read_text(encoding="utf-8"))
    Path(path).write_text(yaml.safe_dump(two_planes(doc, catalog), sort_keys=False), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gigawatt-campus-2plane.yaml")

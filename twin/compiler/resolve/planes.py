"""Multi-plane fabrics: a NIC's ports spread over ``fabric.planes`` separate fabrics.

A NIC with ``nic_ports`` ports (the chassis in the catalog) at ``nic_speed / nic_ports`` each puts
``nic_ports / planes`` of them on every plane. Each plane is a whole tree of its own, or on the AI-zone
Clos a whole zone fabric (its own switches, cabling, addressing, configs), sized like the single-plane
fabric of the same NICs at the port speed:
the way DeepSeek's multi-plane fat tree [deepseek-v3-isca] and NVIDIA's two-plane B300 and GB300
designs [gb300-nvl72-ra] count them (one leaf per GPU position *per plane*). On a campus each plane also
has, in every building, its own ATSW layer, and its own campus tier (:mod:`twin.compiler.fabric.campus`):
a flow never leaves its plane, between buildings as within one. This module owns the two numbers every
pass reads (:func:`plane_ports`, :func:`port_speed`) and the checks of the input.

>>> plane_ports(nic_ports=2, planes=2), plane_ports(nic_ports=4, planes=2), port_speed(800e9, 2)
(1, 2, 400000000000.0)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from twin.lang.diagnostics import Severity
from twin.lang.site.catalog_models import Catalog
from twin.lang.site.models import Site, Technology

if TYPE_CHECKING:
    from twin.compiler.resolve.spec import Spec

PLANE_COUNTS = (1, 2, 4, 8)


def plane_ports(nic_ports: int, planes: int) -> int:
    """Ports of one NIC on each plane."""
    return max(1, nic_ports // max(1, planes))


def port_speed(nic_speed: float, nic_ports: int) -> float:
    """Speed of one NIC port (bit/s): the NIC's speed shared by its ports."""
    return nic_speed / max(1, nic_ports)


def spec_plane_ports(spec: Spec) -> int:
    return plane_ports(spec.chassis.nic_ports, spec.fabric.planes)


def spec_port_speed(spec: Spec) -> float:
    return port_speed(spec.nic_speed, spec.chassis.nic_ports)


def plane_prefix(plane: int, planes: int) -> str:
    """The name prefix of plane ``plane`` (0-based) of ``planes``: none on a single-plane fabric.

    >>> plane_prefix(0, 1), plane_prefix(1, 2)
    ('', 'plane2-')
    """
    return f"plane{plane + 1}-" if planes > 1 else ""


def plane_attr(plane: int, planes: int) -> dict:
    """The ``plane`` node attribute of a multi-plane fabric's switches (0-based; none on a single-plane fabric).

    >>> plane_attr(0, 1), plane_attr(1, 2)
    ({}, {'plane': 1})
    """
    return {"plane": plane} if planes > 1 else {}


def findings(site: Site, catalog: Catalog) -> Iterator[tuple[Severity, tuple, str, str]]:
    """The planes of ``site``: not on InfiniBand (one subnet), and a count that divides the NIC's ports."""
    f = site.fabric
    rt = site.rack_types.get(f.rack_type)
    chassis = catalog.chassis.get(rt.chassis) if rt is not None else None
    if chassis is None:
        return  # the reference checks name the missing rack type or chassis
    if f.technology == Technology.INFINIBAND and (f.planes > 1 or chassis.nic_ports > 1):
        what = f"{f.planes} planes" if f.planes > 1 else f"'{rt.chassis}' NICs of {chassis.nic_ports} ports"
        yield (Severity.ERROR, ("fabric", "planes") if f.planes > 1 else ("fabric", "technology"),
               f"{what} on InfiniBand: each plane would be a subnet with its own subnet manager; twin builds one subnet",
               "technology: roce, or planes: 1 with single-port NICs")
        return
    if chassis.nic_ports % f.planes:
        yield (Severity.ERROR, ("fabric", "planes"),
               f"{f.planes} planes do not divide the {chassis.nic_ports} port(s) of a '{rt.chassis}' NIC",
               "a divisor of nic_ports (" + ", ".join(str(p) for p in PLANE_COUNTS if chassis.nic_ports % p == 0)
               + "), or a chassis whose NICs have more ports")

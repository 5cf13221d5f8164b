"""Port names and port bookkeeping for switches.

Port names come from the catalog's ``port_name`` template, which is user text: it is rendered by plain
string replacement of the known placeholders, never ``str.format`` (a stray brace or attribute
lookup in a site's catalog must not execute anything). A QM9700 has 32 OSFP cages of two ports each,
so logical port 5 (0-based 4) is cage 3, lane 1: ``"3/1"``. SONiC numbers a port by its place in lane
order: with 8 lanes per port (``port_map.name_step`` 8) port 5 is ``Ethernet32`` (``{n0_step}``).
"""

from __future__ import annotations

from functools import lru_cache

from twin.lang.site.catalog_models import SwitchModel, render_port_name


def render(template: str, n0: int, ports_per_cage: int, name_step: int = 1) -> str:
    """Name of logical port ``n0`` (0-based).

    >>> render("{cage}/{sub}", 4, 2), render("Ethernet{n}", 4, 1), render("swp{n0}", 4, 1)
    ('3/1', 'Ethernet5', 'swp4')
    >>> render("Ethernet{n0_step}", 4, 1, 8)
    'Ethernet32'
    """
    return render_port_name(template, n0, ports_per_cage, name_step)


@lru_cache(maxsize=64)
def _names(template: str, ports: int, ports_per_cage: int, name_step: int) -> tuple[str, ...]:
    names = tuple(render(template, i, ports_per_cage, name_step) for i in range(ports))
    if len(set(names)) != len(names):
        raise ValueError(f"port_name '{template}' gives the same name to two ports; use {{n}} or {{cage}}/{{sub}}")
    return names


def port_names(model: SwitchModel) -> tuple[str, ...]:
    """All logical port names of a model, in port order (computed once per model)."""
    step = model.port_map.name_step if model.port_map is not None else 1
    return _names(model.port_name, model.ports, model.ports_per_cage, step)


class PortBook:
    """Hands out the ports of one switch in order and refuses to give one out twice.

    Downlinks are taken first from port 1 upwards, so a port number says which tier it faces; the
    book raises as soon as a switch runs out of ports, naming the switch, instead of wrapping around.
    """

    __slots__ = ("device", "names", "used")

    def __init__(self, device: str, model: SwitchModel):
        self.device = device
        self.names = port_names(model)
        self.used = 0

    def take(self) -> str:
        if self.used >= len(self.names):
            raise PortsExhausted(f"{self.device}: all {len(self.names)} ports are in use")
        name = self.names[self.used]
        self.used += 1
        return name


class PortsExhausted(Exception):
    """A switch was asked for more ports than its model has (the spec checks should prevent it)."""

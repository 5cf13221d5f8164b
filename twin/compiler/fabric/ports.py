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


@lru_cache(maxsize=64)
def _index(model: SwitchModel) -> dict[str, int]:
    return {n: i for i, n in enumerate(port_names(model))}


def cage_of(model: SwitchModel, port: str) -> tuple[int, int, tuple[int, int]]:
    """(1-based cage, 1-based port in the cage, (first, last) 0-based lane of the cage's lanes it takes) of
    a logical port: on a cage split two ways (ports_per_cage 2, 8 lanes) port 2 of cage 1 takes lanes 4-7.
    Lanes count from the port map's first lane, or per cage from 0 without a port map: the cage's lanes by its
    type (``cage_lanes``: an OSFP cage's 8, a QSFP cage's 4, the default) shared by its ports.

    >>> from twin.lang.catalog import builtin
    >>> cage_of(builtin().switches["sn5600-2x400g"], "Ethernet4"), cage_of(builtin().switches["qm9700"], "3/2")
    ((1, 2, (4, 7)), (3, 2, (4, 7)))
    """
    n0 = _index(model)[port]
    cage, sub = divmod(n0, model.ports_per_cage)
    pm = model.port_map
    if pm is not None:
        first = pm.first_lane + n0 * pm.lanes_per_port
        return cage + 1, sub + 1, (first, first + pm.lanes_per_port - 1)
    lanes = model.cage_lanes or 4  # assumed without cage_lanes: a 4x-wide (QSFP) cage split evenly
    per = max(1, lanes // model.ports_per_cage)
    return cage + 1, sub + 1, (sub * per, sub * per + per - 1)


def cage_mode(model: SwitchModel) -> str:
    """The breakout mode a model's cages run in: the port map's, or ``<ports per cage>x<speed>G``."""
    if model.port_map is not None:
        return model.port_map.breakouts[0]
    return f"{model.ports_per_cage}x{model.port_speed / 1e9:g}G"


def cage_text(model: SwitchModel, port: str) -> str | None:
    """Where a logical port sits when its cage is split (None for a port that is a whole cage).

    >>> from twin.lang.catalog import builtin
    >>> cage_text(builtin().switches["sn5600-2x400g"], "Ethernet4")
    'cage 1 port 2 of 2, lanes 4-7, 2x400G[200G,100G,50G,40G,25G,10G]'
    """
    if model.ports_per_cage == 1:
        return None
    cage, sub, (first, last) = cage_of(model, port)
    return f"cage {cage} port {sub} of {model.ports_per_cage}, lanes {first}-{last}, {cage_mode(model)}"


class PortBook:
    """Hands out the ports of one switch in order and refuses to give one out twice.

    Downlinks are taken first from port 1 upwards, so a port number says which tier it faces; the
    book raises as soon as a switch runs out of ports, naming the switch, instead of wrapping around.
    """

    __slots__ = ("device", "names", "_next")

    def __init__(self, device: str, model: SwitchModel):
        self.device = device
        self.names = port_names(model)
        self._next = iter(self.names).__next__  # the names in order, one C call each (380K ports at 100K GPUs)

    def take(self) -> str:
        try:
            return self._next()
        except StopIteration:
            raise PortsExhausted(f"{self.device}: all {len(self.names)} ports are in use") from None


class PortsExhausted(Exception):
    """A switch was asked for more ports than its model has (the spec checks should prevent it)."""

"""Port names and port bookkeeping for switches.

Port names come from the catalog's ``port_name`` template, which is user text: it is rendered by plain
string replacement of the known placeholders, never ``str.format`` (a stray brace or attribute
lookup in a site's catalog must not execute anything). A QM9700 has 32 OSFP cages of two ports each,
so logical port 5 (0-based 4) is cage 3, lane 1: ``"3/1"``. SONiC numbers a port by its place in lane
order: with 8 lanes per port (``port_map.name_step`` 8) port 5 is ``Ethernet32`` (``{n0_step}``).
"""

from __future__ import annotations

from functools import lru_cache

from twin.compiler.resolve.cage_modes import platform_mode
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


def width(model: SwitchModel, speed: float | None) -> int:
    """Logical ports a port of a link at ``speed`` takes: 1, or ``r`` on a tier whose cages run a wider
    mode (``fabric.cages``: an 800G link on a cage split 2 x 400G takes both).

    >>> from twin.lang.catalog import builtin
    >>> width(builtin().switches["sn5600-2x400g"], 800e9), width(builtin().switches["sn5600-2x400g"], 400e9)
    (2, 1)
    """
    if speed is None or speed <= model.port_speed:
        return 1
    return max(1, min(model.ports_per_cage, round(speed / model.port_speed)))


def cage_of(model: SwitchModel, port: str, speed: float | None = None) -> tuple[int, int, tuple[int, int]]:
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
    r = width(model, speed)  # a port of a wider mode: its cage's logical ports sub .. sub + r - 1
    pm = model.port_map
    if pm is not None:
        first = pm.first_lane + n0 * pm.lanes_per_port
        return cage + 1, sub // r + 1, (first, first + r * pm.lanes_per_port - 1)
    lanes = model.cage_lanes or 4  # assumed without cage_lanes: a 4x-wide (QSFP) cage split evenly
    per = max(1, lanes // model.ports_per_cage)
    return cage + 1, sub // r + 1, (sub * per, sub * per + r * per - 1)


def cage_mode(model: SwitchModel, speed: float | None = None) -> str:
    """The breakout mode a model's cages run in: the port map's, or ``<ports per cage>x<speed>G``; for a
    link at ``speed`` on a tier in a wider mode (``fabric.cages``), that mode."""
    r = width(model, speed)
    if model.port_map is not None:
        return model.port_map.breakouts[0] if r == 1 else platform_mode(model, r)
    return f"{model.ports_per_cage // r}x{r * model.port_speed / 1e9:g}G"


def cage_text(model: SwitchModel, port: str, speed: float | None = None) -> str | None:
    """Where a logical port sits when its cage is split (None for a port that is a whole cage); with its
    link's ``speed``, a port of a tier in a wider mode (``fabric.cages``) says so.

    >>> from twin.lang.catalog import builtin
    >>> sn = builtin().switches["sn5600-2x400g"]
    >>> cage_text(sn, "Ethernet4"), cage_text(sn, "Ethernet8", 800e9)
    ('cage 1 port 2 of 2, lanes 4-7, 2x400G[200G,100G,50G,40G,25G,10G]', 'cage 2 whole, lanes 8-15, 1x800G[400G,200G,100G,50G,40G,25G,10G]')
    """
    if model.ports_per_cage == 1:
        return None
    r = width(model, speed)
    cage, sub, (first, last) = cage_of(model, port, speed)
    where = "whole" if r == model.ports_per_cage else f"port {sub} of {model.ports_per_cage // r}"
    return f"cage {cage} {where}, lanes {first}-{last}, {cage_mode(model, speed)}"


class PortBook:
    """Hands out the ports of one switch in order and refuses to give one out twice.

    Downlinks are taken first from port 1 upwards, so a port number says which tier it faces; the
    book raises as soon as a switch runs out of ports, naming the switch, instead of wrapping around.
    """

    __slots__ = ("device", "names", "_next")

    def __init__(self, device: str, model: SwitchModel):
        self.device = device
        self.names = port_names(model)
        self._next = enumerate(self.names).__next__  # (place, name) in order, one C call each (380K ports at 100K GPUs)

    def take(self) -> str:
        try:
            return self._next()[1]
        except StopIteration:
            raise PortsExhausted(f"{self.device}: all {len(self.names)} ports are in use") from None

    def take_whole(self, r: int) -> str:
        """The next ``r`` logical ports as one port of a cage run in a wider mode (``fabric.cages``), named
        by its first: the run starts on a multiple of ``r`` (a logical port left before it stays unused)."""
        try:
            i, name = self._next()
            while i % r:
                i, name = self._next()
            for _ in range(r - 1):
                self._next()
        except StopIteration:
            raise PortsExhausted(f"{self.device}: all {len(self.names)} ports are in use") from None
        return name


class PortsExhausted(Exception):
    """A switch was asked for more ports than its model has (the spec checks should prevent it)."""

"""What the config targets need from a design: the target of a switch model, and InfiniBand link rates.

A switch model names its target in the catalog (``config``); the targets are the registry
:mod:`twin.lang.site.config_targets`. The OpenSM target's topology and the spec checks share the rates.
"""

from __future__ import annotations

from collections.abc import Iterator

from twin.lang.diagnostics import Severity
from twin.lang.site.catalog_models import SwitchModel, render_port_name
from twin.lang.site.config_targets import ConfigTarget, config_target

IFNAMSIZ = 16  # Linux interface names: at most 15 bytes and the NUL (include/uapi/linux/if.h)
MAX_HOSTNAME = 63  # one DNS label (RFC 1123); FRR and EOS take a switch's name as its hostname
HALL_SUFFIX = len("-z1024-r100000-rtsw8")  # the most a hall's name grows into a switch name: zone, rack, switch
BUILDING_SUFFIX = len("-atsw-1024")  # a building's ATSWs
IB_LANES = 4  # an InfiniBand port is 4x: 4 lanes (NDR: 4 x 100G, NVIDIA Quantum-2 QM9700 datasheet)
LANE_NAME = {2.5e9: "SDR", 5e9: "DDR", 10e9: "QDR", 14e9: "FDR", 25e9: "EDR", 50e9: "HDR", 100e9: "NDR", 200e9: "XDR"}


def target_of(model: SwitchModel) -> ConfigTarget:
    """The config target a switch model names in the catalog.

    >>> from twin.lang.catalog import builtin
    >>> [target_of(builtin().switches[m]).name for m in ("minipack2", "arista-7800r3", "qm9700")]
    ['sonic', 'eos', 'opensm']
    """
    return config_target(model.config)


def port_name_problem(model: SwitchModel) -> str | None:
    """What a model's port names break on its targets, or None. SONiC ports are Linux interfaces
    (``Ethernet0``): at most 15 bytes, no '/'. An EOS switch also gets an FRR config, where FRR on Linux
    names ``Ethernet3/1`` as ``Ethernet3_1`` (:func:`twin.compiler.config.intent.linux_ifname`): at
    most 15 bytes after that. OpenSM reads port numbers, not names.

    >>> from twin.lang.catalog import builtin
    >>> [port_name_problem(builtin().switches[m]) for m in ("minipack2", "arista-7800r3", "qm9700")]
    [None, None, None]
    """
    target = target_of(model)
    if target.subnet:  # configured through the subnet manager: port numbers, not names
        return None
    step = model.port_map.name_step if model.port_map is not None else 1
    last = render_port_name(model.port_name, model.ports - 1, model.ports_per_cage, step)  # every placeholder at its largest
    if target.name == "sonic" and "/" in model.port_name:
        return f"'{last}' is not a Linux interface name (SONiC ports are): no '/'"
    linux = last.replace("/", "_")
    if len(linux.encode()) >= IFNAMSIZ:
        return f"port {model.ports} is '{linux}', {len(linux.encode())} bytes; Linux interface names (FRR, SONiC) hold at most {IFNAMSIZ - 1}"
    return None


def hostname_findings(site) -> Iterator[tuple]:
    """Hall and building names short enough that every switch named after them is a hostname."""
    for key, items, suffix in (("halls", site.halls, HALL_SUFFIX), ("buildings", site.buildings, BUILDING_SUFFIX)):
        for i, x in enumerate(items):
            if len(x.name) + suffix > MAX_HOSTNAME:
                yield (Severity.ERROR, (key, i, "name"), f"'{x.name}' is {len(x.name)} characters; its switches' names (hostnames) "
                       f"would pass {MAX_HOSTNAME}", f"at most {MAX_HOSTNAME - suffix} characters")


def ib_rate(speed: float, port_speed: float) -> str:
    """A link's rate as ibnetdiscover prints it: lanes x signalling, lanes from the port's 4x width.

    >>> ib_rate(400e9, 400e9), ib_rate(200e9, 400e9), ib_rate(200e9, 200e9)
    ('4xNDR', '2xNDR', '4xHDR')
    """
    lane = port_speed / IB_LANES
    width = speed / lane
    if lane not in LANE_NAME or width != int(width) or not 1 <= width <= IB_LANES:
        raise ValueError(f"{speed / 1e9:g}G on a {port_speed / 1e9:g}G port is not an InfiniBand rate")
    return f"{int(width)}x{LANE_NAME[lane]}"

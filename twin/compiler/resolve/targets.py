"""What the config targets need from a design: the target of a switch model, and InfiniBand link rates.

A switch model names its target in the catalog (``config``); the targets are the registry
:mod:`twin.lang.site.config_targets`. The OpenSM target's topology and the spec checks share the rates.
"""

from __future__ import annotations

from twin.lang.site.catalog_models import SwitchModel
from twin.lang.site.config_targets import ConfigTarget, config_target

IB_LANES = 4  # an InfiniBand port is 4x: 4 lanes (NDR: 4 x 100G, NVIDIA Quantum-2 QM9700 datasheet)
LANE_NAME = {2.5e9: "SDR", 5e9: "DDR", 10e9: "QDR", 14e9: "FDR", 25e9: "EDR", 50e9: "HDR", 100e9: "NDR", 200e9: "XDR"}


def target_of(model: SwitchModel) -> ConfigTarget:
    """The config target a switch model names in the catalog.

    >>> from twin.lang.catalog import builtin
    >>> [target_of(builtin().switches[m]).name for m in ("minipack2", "arista-7800r3", "qm9700")]
    ['sonic', 'eos', 'opensm']
    """
    return config_target(model.config)


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

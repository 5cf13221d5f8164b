"""Which configuration target a switch model gets: one owner for the choice the checks and emitters share.

Every routed Ethernet switch also gets an FRR config (the routing stack SONiC runs, and what ``twin
verify`` brings up); on top of that an Arista model gets an EOS running-config and every other
Ethernet model a SONiC ``config_db.json``. InfiniBand switches are configured by the subnet manager.
"""

from __future__ import annotations

from twin.lang.site.catalog_models import SwitchModel

SONIC, EOS, OPENSM = "sonic", "eos", "opensm"
IB_LANES = 4  # an InfiniBand port is 4x: 4 lanes (NDR: 4 x 100G, NVIDIA Quantum-2 QM9700 datasheet)
LANE_NAME = {2.5e9: "SDR", 5e9: "DDR", 10e9: "QDR", 14e9: "FDR", 25e9: "EDR", 50e9: "HDR", 100e9: "NDR", 200e9: "XDR"}


def config_target(model: SwitchModel) -> str:
    """The switch OS a model's configuration is written for.

    >>> from twin.lang.catalog import builtin
    >>> [config_target(builtin().switches[m]) for m in ("minipack2", "arista-7800r3", "qm9700")]
    ['sonic', 'eos', 'opensm']
    """
    if model.technology == "infiniband":
        return OPENSM
    return EOS if model.vendor.lower().startswith("arista") else SONIC


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

"""A switch model's port map: how a SONiC platform lays out its front-panel ports.

Kept beside :mod:`twin.lang.site.models` (which uses it in ``SwitchModel.port_map``) so the input language
stays one model per concept. Breakout modes are written as SONiC's ``platform.json`` writes them:
``1x400G[200G,100G]`` is one port of 400G that may also run at 200G or 100G on the same lanes.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, model_validator

from twin.lang.base import Model, Text, pattern

BREAKOUT_RE = pattern(r"^(\d+)x(\d+)G(?:\[(\d+G(?:,\d+G)*)\])?$", "a breakout mode such as '1x400G', '2x200G' or '1x400G[200G,100G]'")


class PortMap(Model):
    """How a SONiC platform lays out a switch's front-panel ports: what its ``port_config.ini`` (names,
    lanes, alias, index) and ``platform.json`` (breakout modes) say. Required for the SONiC target.

    Port ``n`` (1-based) carries lanes ``first_lane + (n-1) * lanes_per_port`` onwards and is named by
    the model's ``port_name`` (``Ethernet{n0_step}`` = ``Ethernet`` + (n-1) * ``name_step``).
    """


    platform: Text = Field(min_length=1, description="SONiC platform string (DEVICE_METADATA.platform)")
    hwsku: Text = Field(min_length=1, description="SONiC HWSKU (DEVICE_METADATA.hwsku)")
    lanes_per_port: int = Field(ge=1, le=16, description="SerDes lanes per logical port")
    first_lane: int = Field(0, ge=0, description="number of port 1's first lane (platforms count from 0 or 1)")
    name_step: int = Field(1, ge=1, le=16, description="step between port numbers in SONiC names (Ethernet0, Ethernet8: 8)")
    alias: Text = Field("etp{n}", description="front-panel alias; placeholders {n} (1-based port), {n0}, {cage} (1-based cage) "
                        "and {sub} (the port's letter in its cage: a, b, ...)")
    fec: Literal["rs", "fc", "none", "auto"] = "rs"
    breakouts: tuple[Annotated[str, Field(pattern=BREAKOUT_RE)], ...] = Field(
        min_length=1,
        description="platform.json breakout modes of one cage, e.g. '1x400G[200G,100G]'; the first is the mode the cages run "
        "in: '2x400G' splits each cage into two logical ports (the switch model's ports_per_cage) of lanes_per_port lanes",
    )
    source: Text = Field(min_length=1, description="the platform's port_config.ini it follows, or 'assumed'")

    @property
    def speeds(self) -> tuple[float, ...]:
        """Port speeds (bit/s) the configured (first) breakout mode allows, its own speed first.

        >>> PortMap(platform="p", hwsku="h", lanes_per_port=8, breakouts=["1x400G[200G,100G]"], source="s").speeds
        (400000000000.0, 200000000000.0, 100000000000.0)
        """
        m = re.fullmatch(BREAKOUT_RE, self.breakouts[0])
        extra = m.group(3).split(",") if m.group(3) else []
        return tuple(float(x.rstrip("G")) * 1e9 for x in [m.group(2) + "G", *extra])

    @property
    def cage_ports(self) -> int:
        """Logical ports per cage in the configured (first) breakout mode: ``2x400G`` -> 2."""
        return int(re.fullmatch(BREAKOUT_RE, self.breakouts[0]).group(1))

    def render_alias(self, n0: int, whole: bool = False) -> str:
        """The front-panel alias of logical port ``n0`` (0-based); ``whole``: of its cage run as one port
        (``fabric.cages``), which has no sub-port letter (``etp33`` where its split ports are ``etp33a``, ``etp33b``)."""
        cage, sub = divmod(n0, self.cage_ports)
        return (self.alias.replace("{n0}", str(n0)).replace("{n}", str(n0 + 1))
                .replace("{cage}", str(cage + 1)).replace("{sub}", "" if whole else "abcdefgh"[sub]))

    @model_validator(mode="after")
    def _modes_fit_the_lanes(self) -> PortMap:
        cage_lanes = self.lanes_per_port * self.cage_ports
        for mode in self.breakouts:
            count = int(re.fullmatch(BREAKOUT_RE, mode).group(1))
            if count == 0 or cage_lanes % count:
                raise ValueError(f"breakout mode '{mode}' does not split a cage's {cage_lanes} lanes evenly")
        if self.cage_ports > 8:
            raise ValueError(f"the first breakout mode ('{self.breakouts[0]}') splits a cage into more than 8 ports")
        bad = set(re.findall(r"\{([^}]*)\}", self.alias)) - {"n", "n0", "cage", "sub"}
        if bad:
            raise ValueError(f"alias: unknown placeholder(s) {sorted(bad)}; allowed: n, n0, cage, sub")
        return self

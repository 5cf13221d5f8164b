"""Fabric attachments: non-GPU endpoints (subnet managers, storage, gateways) cabled into a switch tier.

A site lists them under ``fabric.attachments``; the fabric shape (:mod:`twin.compiler.resolve.shape`) counts their
ports on the tier's switches, and the passes place, cable, bill and configure them like any device.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from twin.lang.base import Model, Text, pattern
from twin.lang.units import DataRate, Mass, Power


class Attachment(Model):
    """Non-GPU endpoints cabled into the fabric: subnet managers (UFM), storage, gateways."""

    name: str = Field(pattern=pattern(r"^[a-z][a-z0-9]{0,15}$", "letters and digits, starting with a letter, at most 16, such as 'ufm'"), description="letters and digits; devices are <name>-01, ..., links tier <name>-<role>")
    kind: Literal["subnet-manager", "storage", "gateway", "other"]
    tier: str = Field(description="role of the switch tier it attaches to: rtsw, ctsw, atsw or leaf, spine, super, core")
    count: int = Field(ge=1, le=10_000, description="endpoints")
    ports: int = Field(1, ge=1, le=64, description="fabric ports per endpoint, spread over the tier's switches")
    speed: DataRate = Field(description="speed of each port (at most the switch port speed)")
    power: Power = Field(description="power of one endpoint (placement, budget, BOM)")
    height_u: int = Field(1, ge=1, le=48)
    weight: Mass = Field(20.0, description="one endpoint (assumed default: a 1U server)")
    node_slot: bool = Field(False, exclude_if=lambda v: not v, description=(
        "leaf tier: each port takes a free node slot's down-port (the port a GPU node would have used on a leaf of a "
        "part-filled group, as NVIDIA's H100 SuperPOD puts its UFM appliance) instead of a spare port"))
    description: Text = ""
    source: Text = Field("assumed", min_length=1)

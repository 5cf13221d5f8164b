"""Liquid cooling of a hall as a system: coolant distribution units (CDUs) and the facility water.

A liquid-cooled rack gives part of its heat to the coolant of its cold plates (``rack_types.X.liquid_share``)
and the rest to the room air. The coolant loop of the racks (the technology cooling system) is pumped
by CDUs, in the row (``in-row``: ``count`` per row, serving that row) or in the rack (``in-rack``:
``count`` per GPU rack); each CDU passes the heat through its heat exchanger to the facility water.
:mod:`twin.compiler.resolve.liquid` turns these figures into capacities, checked per row and per hall
in normal operation and after the loss of one CDU or one pump.

>>> c = Cdus.model_validate({"kind": "in-row", "count": 3, "capacity": "1.2 MW", "supply_temperature": "35 degC"})
>>> c.count, c.capacity, c.supply_temperature, c.approach, c.redundancy
(3, 1200000.0, 35.0, 3.0, 'N+1')
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from twin.lang.base import Model
from twin.lang.units import Power, Temperature, TemperatureDifference, VolumeFlow


class Cdus(Model):
    """The CDUs of a hall: every row (in-row) or every GPU rack (in-rack) has ``count`` of them."""

    kind: Literal["in-row", "in-rack"] = Field(description="in-row: count CDUs per row serve the row; in-rack: count CDUs per GPU rack")
    count: Annotated[int, Field(ge=1, le=64)] | Literal["auto"] = Field(description=(
        "CDUs per row (in-row) or per GPU rack (in-rack); auto: the fewest that carry a full row (or a rack) "
        "of GPU racks at the spec's GPU power cap, plus one with N+1"))
    redundancy: Literal["N+1", "N"] = Field(
        "N+1", description="N+1: the row (or rack) must carry its liquid heat after the loss of any one CDU or pump; N: normal operation only")
    capacity: Power = Field(gt=0, description="heat one CDU moves to the facility water at its rated approach")
    supply_temperature: Temperature = Field(description="coolant supply to the racks' cold plates (the CDU's set point)")
    approach: TemperatureDifference = Field(3.0, ge=0, description="coolant supply above facility water supply at the CDU's heat exchanger (assumed 3 K)")
    flow: VolumeFlow | None = Field(None, gt=0, description="coolant flow one CDU pumps with all its pumps (default: not limiting)")
    pumps: int = Field(1, ge=1, le=8, description="pumps of one CDU; each gives pump_flow")
    pump_flow: VolumeFlow | None = Field(None, gt=0, description="flow of one pump (default: flow / pumps, so losing one pump costs its share)")
    delta_t: TemperatureDifference = Field(10.0, gt=0, description="coolant rise across the racks at design (assumed 10 K)")

    @model_validator(mode="after")
    def _pumps(self) -> "Cdus":
        if self.pump_flow is not None and self.flow is None:
            raise ValueError("pump_flow needs flow (the CDU's rated coolant flow)")
        return self


class FacilityWater(Model):
    """The facility water loop feeding a hall's CDUs."""

    supply_temperature: Temperature = Field(description="facility water supply temperature at design (warm-water cooling: 25-45 degC)")
    flow: VolumeFlow = Field(gt=0, description="facility water flow available to the hall")
    delta_t: TemperatureDifference = Field(10.0, gt=0, description="return above supply at design (assumed 10 K)")

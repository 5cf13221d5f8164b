"""The cost parts of the site language: facility prices in the catalog and the site's energy price.

Hardware carries its own ``price`` in the catalog (a chassis, a switch; a medium's transceiver or
cable assembly and its ``price_per_metre``). What a megawatt of data hall costs to build (power
distribution, cooling, building) is a catalog entry per cooling medium under ``facility:``, priced per
watt of critical IT load; the site's ``power.energy_price`` prices the energy it draws. Money is written
like any quantity, in USD: ``"270000 USD"``, ``"$270,000"``, ``"11.7 MUSD/MW"``, ``"$0.0892/kWh"``.

>>> FacilityCost(price="11.7 MUSD/MW", source="assumed").price   # canonical: USD per watt
11.7

This module imports nothing from :mod:`twin.lang.site.models` (which imports it), so it keeps its own base.
"""

from __future__ import annotations

from pydantic import Field

from twin.lang.base import Model, Text
from twin.lang.units import EnergyPrice, PricePerPower

# [eia-epa-2023]: U.S. EIA, Electric Power Annual with data for 2023, average revenue per kWh by state:
# Virginia (the largest data-center market) industrial 8.92 cents/kWh. The default of power.energy_price.
DEFAULT_ENERGY_PRICE = 0.0892  # USD/kWh




class FacilityCost(Model):
    """What one watt of critical IT load costs to build: power distribution, cooling and the building."""

    description: Text = ""
    price: PricePerPower = Field(description="capital cost per watt of critical IT load, e.g. '11.7 MUSD/MW'")
    source: Text = Field(min_length=1, description="where the figure comes from, or 'assumed'")


EnergyPriceField = Field(DEFAULT_ENERGY_PRICE, description="price of the energy the site draws from the utility "
                         "(default: [eia-epa-2023], Virginia industrial 2023, 8.92 cents/kWh)")

__all__ = ["DEFAULT_ENERGY_PRICE", "EnergyPrice", "EnergyPriceField", "FacilityCost"]

"""What a design costs: capital expenditure by category and the energy bill, from the catalog's prices.

Capex is counted from the compiled design, not from formulas: GPU servers are the server nodes of the
fabric graph (``Fabric.server_count``) at their chassis ``price``; switches, transceivers and cables are the priced lines of the
bill of materials (:mod:`twin.compiler.fabric.bom`); the facility (power distribution, cooling, building) is each
hall's critical IT load at the catalog's ``facility`` price for the hall's cooling medium. Energy per
year is a draw (the budgeted full-load facility power, IT x PUE, unless a twin simulated another) over
365.25 days at the site's ``power.energy_price``. A catalog item without a price counts zero and is
named in ``unpriced``, so a missing price never passes for a cheap design.

>>> from twin.compiler.pipeline import compile_design
>>> c = cost(compile_design("sites/lab-2zone.yaml", until="bom", placement_method="naive"))
>>> c.server_count, round(c.servers), round(c.network), round(100 * c.network_share, 1)
(16, 4320000, 818160, 11.1)
>>> round(c.energy_per_year() / 1e3)   # kUSD per year at the budgeted draw and 8.92 cents/kWh
197
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.compiler.fabric.bom import network_price, unpriced

HOURS_PER_YEAR = 365.25 * 24  # a Julian year, 8,766 h: every energy figure (cost report, review, sweeps) prices it
CATEGORIES = ("servers", "switches", "transceivers", "cables", "facility")


@dataclass(frozen=True)
class Cost:
    servers: float  # USD, every GPU server
    switches: float  # USD, every switch (rack switches included)
    transceivers: float
    cables: float
    facility: float  # USD, power and cooling infrastructure and the building, per MW of critical IT load
    gpus: int
    server_count: int
    critical_it_w: float  # W, the IT load the facility is built for (GPU racks at their cap + network)
    facility_w: float  # W, IT x PUE at full load: the budgeted draw from the utility
    energy_price: float  # USD per kWh
    unpriced: tuple[str, ...] = ()  # catalog items (and "facility:<medium>") without a price

    @property
    def network(self) -> float:
        return self.switches + self.transceivers + self.cables

    @property
    def total(self) -> float:
        return self.servers + self.network + self.facility

    @property
    def per_gpu(self) -> float:
        return self.total / self.gpus if self.gpus else 0.0

    @property
    def network_share(self) -> float:
        """The network's share of the whole capex (servers, network and facility)."""
        return self.network / self.total if self.total else 0.0

    def by_category(self) -> dict[str, float]:
        return {c: getattr(self, c) for c in CATEGORIES}

    def energy_per_year(self, draw_w: float | None = None) -> float:
        """USD per year at ``draw_w`` watts from the utility (default: the budgeted full-load draw)."""
        w = self.facility_w if draw_w is None else draw_w
        return w / 1e3 * HOURS_PER_YEAR * self.energy_price


def cost(design) -> Cost:
    """Capex by category and the budgeted draw of a design compiled at least through its BOM."""
    spec, budget = design.spec, design.budget
    missing: set[str] = set()
    servers = design.fabric.server_count()
    if spec.chassis.price is None:
        missing.add(spec.rack_type.chassis)
    net = network_price(design.bom)
    missing.update(unpriced(design.bom))
    facility, counted = 0.0, 0.0
    for hall, hb in zip(spec.site.halls, budget.halls):
        entry = spec.catalog.facility.get(hall.cooling.medium)
        counted += hb.it_power
        if entry is None:
            missing.add(f"facility:{hall.cooling.medium}")
        else:
            facility += hb.it_power * entry.price
    rest = max(0.0, budget.it_power - counted)  # IT load no hall carries (none in today's budget)
    if rest and spec.site.halls:
        entry = spec.catalog.facility.get(spec.site.halls[0].cooling.medium)
        facility += rest * (entry.price if entry else 0.0)
    return Cost(
        servers=servers * (spec.chassis.price or 0.0),
        switches=net["switch"], transceivers=net["transceiver"], cables=net["cable"], facility=facility,
        gpus=spec.gpus, server_count=servers, critical_it_w=budget.it_power, facility_w=budget.facility_power,
        energy_price=spec.site.power.energy_price, unpriced=tuple(sorted(missing)),
    )


def as_dict(c: Cost) -> dict:
    """Every figure of ``c`` as plain JSON-ready numbers (USD, W)."""
    return {**c.by_category(), "network": c.network, "total": c.total, "per_gpu": c.per_gpu,
            "network_share": c.network_share, "gpus": c.gpus, "server_count": c.server_count,
            "critical_it_w": c.critical_it_w, "facility_w": c.facility_w, "energy_price_usd_per_kwh": c.energy_price,
            "energy_per_year": c.energy_per_year(), "unpriced": list(c.unpriced)}

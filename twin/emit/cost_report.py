"""report.md's Cost section: capex by category, cost per GPU, the network's share, energy per year."""

from __future__ import annotations

from twin.compiler.cost import HOURS_PER_YEAR, cost
from twin.compiler.design import Design
from twin.emit.markdown import pct, table
from twin.lang.units import kw


def usd(x: float) -> str:
    """Money for reports: ``$1.23 B``, ``$45.6 M``, ``$789 K`` or ``$12,345``.

    >>> usd(1.234e9), usd(45.6e6), usd(789_000), usd(12_345.4)
    ('$1.23 B', '$45.6 M', '$789 K', '$12,345')
    """
    for floor, div, tag, digits in ((1e9, 1e9, "B", 2), (1e6, 1e6, "M", 1), (1e5, 1e3, "K", 0)):
        if abs(x) >= floor:
            return f"${x / div:,.{digits}f} {tag}"
    return f"${x:,.0f}"


LABELS = {
    "servers": "GPU servers (chassis price)",
    "switches": "switches (bill of materials)",
    "transceivers": "transceivers (bill of materials)",
    "cables": "cables (bill of materials)",
    "facility": "facility: power, cooling, building (per MW of critical IT load)",
}


def section(d: Design) -> str | None:
    if d.cabling is None:
        return None
    c = cost(d)
    rows = [[LABELS[k], usd(v), pct(v / c.total) if c.total else "-"] for k, v in c.by_category().items()]
    rows.append(["**total capex**", f"**{usd(c.total)}**", "100%"])
    facts = [
        ["capex per GPU", f"{usd(c.per_gpu)} ({c.gpus:,} GPUs in {c.server_count:,} servers)"],
        ["network share of capex", f"{pct(c.network_share)} ({usd(c.network)})"],
        ["critical IT load (facility sized for it)", kw(c.critical_it_w)],
        ["energy per year at the budgeted draw", f"{usd(c.energy_per_year())} ({kw(c.facility_w)} x {HOURS_PER_YEAR:,.0f} h at ${c.energy_price:g}/kWh)"],
    ]
    text = ("## Cost\n\nCapital cost from the catalog's prices (each with its source in `bom.csv` and the catalog; most network "
            "prices are assumed: override them in the site's `catalog:`). The budgeted draw is full load (IT x PUE); "
            "`twin sweep` prices the power twin's simulated draw where it ran.\n\n")
    text += table(["category", "capex", "share"], rows, "lrr") + "\n\n" + table(["figure", "value"], facts, "ll")
    if c.unpriced:
        text += "\n\nWithout a price (counted as zero): " + ", ".join(f"`{u}`" for u in c.unpriced) + "."
    return text

"""bom.csv: switches, transceivers and cables with quantities, power, price and the catalog source."""

from __future__ import annotations

import csv
import io

from twin.compiler.design import Design
from twin.compiler.fabric.bom import cable_mass, network_power, network_price, port_counts
from twin.emit.markdown import table
from twin.lang.units import kw

COLUMNS = ["category", "item", "description", "length_m", "quantity", "unit_power_w", "total_power_w", "total_mass_kg", "unit_price_usd", "total_price_usd", "source"]


def _num(v: float) -> str:
    """Plain decimal (no exponent), at most 3 decimals: spreadsheets read it as a number."""
    return f"{v:.3f}".rstrip("0").rstrip(".")


def emit(design: Design) -> dict[str, bytes]:
    if design.cabling is None:
        return {}
    lines = design.bom
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for ln in lines:
        price = ["", ""] if ln.unit_price is None else [_num(ln.unit_price), _num(ln.total_price)]
        w.writerow([ln.category, ln.item, ln.description, "" if ln.length_m is None else _num(ln.length_m), ln.quantity, _num(ln.unit_power_w), _num(ln.total_power_w), _num(ln.total_mass_kg), *price, ln.source])
    p = network_power(lines)
    what = "switches + powered cable ends" + (" + fabric attachments" if p["endpoint"] else "")
    w.writerow(["total", "network power", what, "", "", "", _num(p["total"]), "", "", "", ""])
    if design.spec.site.fabric_only:  # no lengths: no tray load, and the fiber and copper priced per metre unknown
        w.writerow(["total", "cable mass", "not counted: a fabric-only study's cables have no length", "", "", "", "", "", "", "", ""])
        w.writerow(["total", "network capex", "switches + transceivers + cables priced per item (cables priced per metre have no "
                    "length: not counted)", "", "", "", "", "", "", _num(network_price(lines)["total"]), ""])
    else:
        w.writerow(["total", "cable mass", "every cable at its stock length (tray load)", "", "", "", "", _num(cable_mass(lines)), "", "", ""])
        w.writerow(["total", "network capex", "switches + transceivers + cables (unpriced items count zero)", "", "", "", "", "", "",
                    _num(network_price(lines)["total"]), ""])
    for c in port_counts(design.spec, design.fabric, design.cabling):  # only where a twin-port module carries two links
        why = "a twin-port module's links are one cable of its" if c.per_port != c.links else "one cable per link, each on its own"
        w.writerow(["vendor count", f"{c.tier} cables per {c.port_speed / 1e9:g}G port", (
            f"NVIDIA's unit: {why} {c.port_speed / 1e9:g}G port ({c.links:,} links)"),
            "", c.per_port, "", "", "", "", "", "derived from the cable plan"])
    return {"bom.csv": buf.getvalue().encode("utf-8")}


CONVENTION = (
    "Counting convention: every switch of the fabric graph (rack switches included) is one unit of its "
    "model. A link on pluggable optics counts **two transceivers** (one per end) and one fiber cable of "
    "its stock length; DAC, AEC and AOC are **cable assemblies** with built-in ends (one item per link, "
    "no transceivers). Server-to-NIC connections are inside the server and not counted. Network power "
    "is the catalog's typical switch power plus every powered cable end (optics, AEC, AOC); rack "
    "switch power is also part of the rack power in the budget above. Full list: `bom.csv`."
)


def section(design: Design) -> str | None:
    if design.cabling is None:
        return None
    lines = design.bom
    rows = []
    for ln in lines:
        if ln.category == "cable":
            continue
        rows.append([ln.category, ln.item, f"{ln.quantity:,}", kw(ln.total_power_w), ln.source])
    cables: dict[str, list[int]] = {}
    for ln in lines:
        if ln.category == "cable":
            c = cables.setdefault(ln.item, [0, 0])
            c[0] += ln.quantity
            c[1] += int(ln.total_power_w)
    for item, (q, watts) in sorted(cables.items()):
        rows.append(["cable", item, f"{q:,}", kw(watts), "see bom.csv for stock lengths"])
    p = network_power(lines)
    parts = f"switches {kw(p['switch'])}, " + (f"attachments {kw(p['endpoint'])}, " if p["endpoint"] else "")
    rows.append(["**total**", "network power", "", f"**{kw(p['total'])}**", parts + f"optics {kw(p['transceiver'])}, active cables {kw(p['cable'])}"])
    rows.append(["**total**", "cable mass", "", "", f"{cable_mass(lines):,.0f} kg of cable on the trays (catalog weight_per_metre)"])
    out = "## Bill of materials\n\n" + CONVENTION + "\n\n" + table(["category", "item", "quantity", "power", "source"], rows, "llrrl")
    vendor = port_table(design)
    return out + ("\n\n" + vendor if vendor else "")


def port_table(design: Design) -> str | None:
    """Cables per link beside cables per twin-port module's port (the vendor's unit), where they differ."""
    counts = port_counts(design.spec, design.fabric, design.cabling) if design.cabling is not None else []
    if not counts:
        return None
    rows = [[c.tier, f"{c.links:,}", f"{c.per_port:,}" + (f" ({c.port_speed / 1e9:g}G)" if c.per_port != c.links else "")] for c in counts]
    return ("Cables counted two ways: per link (twin's unit, every count above) and per port of a twin-port module (the "
            "unit of NVIDIA's SuperPOD tables: a module's links leave one port as one cable):\n\n"
            + table(["link tier", "cables per link", "cables per module port"], rows, "lrr"))

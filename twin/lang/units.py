"""Physical quantities at the spec boundary.

Users write quantities with units in YAML (``700 W``, ``1.2 m``, ``400 Gbit/s``). We parse them with
pint once, check the dimension, and keep a plain float in one canonical SI unit per kind from then on:
the passes and the twin do arithmetic on floats (fast, hashable, deterministic), and the canonical unit
of every field is recorded in its JSON Schema and restored when the design is written out.

Why not keep pint objects inside the models: they are slow in hot loops, not hashable, and their repr
is not stable enough to put in byte-identical artifacts.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

# What pint.compat probes for and twin does not hand it: dask (so that quantities can wrap dask arrays;
# it brings jinja2, toolz and more, a third of twin's start-up), numpy and scipy (arrays and constants:
# ~0.13 s, most of pint's import, where `twin validate --fast` needs no numpy at all).
_PINT_OPTIONAL = ("dask", "numpy", "scipy")


def _import_pint():
    """pint, imported without its optional support for the packages of :data:`_PINT_OPTIONAL`: twin hands
    pint strings and Python floats only, and pint converts a float with the same operations either way
    (tests/test_units.py holds the figures to a pint that has numpy). A ``None`` in ``sys.modules`` makes
    the import system report a package as absent while pint loads; one already loaded (numpy in a
    command that imported it first, dask in a sweep worker) stays as it is."""
    hidden = [name for name in _PINT_OPTIONAL if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None
    try:
        import pint
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
    return pint


pint = _import_pint()

_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")
# "$25,000", "$0.09/kWh", "$11,700,000/MW": a dollar sign, digits with optional thousands commas, an
# optional "/unit" tail. The same amounts are "25000 USD", "0.09 USD/kWh", "11.7 MUSD/MW".
_DOLLAR = re.compile(r"^\s*\$\s*(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s*(/\s*\S.*?)?\s*$")


DEFINITIONS = Path(__file__).with_name("units.txt")  # the units an input may write (pint's own definitions)


@lru_cache(maxsize=1)
def registry() -> pint.UnitRegistry:
    """The one unit registry of the process: pint's definitions of the units an input may write
    (:data:`DEFINITIONS`; pint's full registry of ~1,000 units takes 10x as long to build)."""
    ureg = pint.UnitRegistry(str(DEFINITIONS), autoconvert_offset_to_baseunit=True)
    # Money is a dimension of its own, so "11.7 MUSD/MW" or "0.09 USD/kWh" convert like any other
    # quantity and a price where a power belongs is refused by its dimension. One currency only:
    # twin keeps no exchange rates, so a figure in another currency is converted by the user.
    ureg.define("USD = [currency]")
    return ureg


@dataclass(frozen=True)
class Kind:
    """A physical kind: its pint dimensionality, canonical unit and an example for messages."""

    name: str
    canonical: str
    example: str
    dimensionality: str  # a unit whose dimensionality is the expected one
    must_mention: tuple[str, ...] = ()  # pint treats bit as dimensionless: insist the unit names bit/byte
    must_not_mention: tuple[str, ...] = ()  # a frequency is not a data rate ("400 Gbit/s" is 1/s to pint)


POWER = Kind("power", "W", "700 W", "W")
LENGTH = Kind("length", "m", "1.2 m", "m")
MASS = Kind("mass", "kg", "35 kg", "kg")
AREAL_LOAD = Kind("floor load", "kg/m^2", "1500 kg/m^2", "kg/m^2")
DATA_RATE = Kind("data rate", "bit/s", "400 Gbit/s", "1/s", ("bit", "byte"))
DATA_SIZE = Kind("data size", "byte", "64 MiB", "dimensionless", ("bit", "byte"))
TIME = Kind("time", "s", "22 us", "s")
TEMPERATURE = Kind("temperature", "degC", "27 degC", "K")
ENERGY = Kind("energy", "J", "1 kWh", "J")
# a difference of temperatures in kelvin; degC and delta_degC are refused so that "10 degC" is never read as 283 K
TEMPERATURE_DIFFERENCE = Kind("temperature difference", "K", "10 K", "K", (), ("degree_Celsius", "degree_Fahrenheit"))
VOLUME_FLOW = Kind("volume flow", "m^3/s", "1800 L/min", "m^3/s")
POWER_RATE = Kind("power ramp rate", "W/s", "5 MW/s", "W/s")
FREQUENCY = Kind("frequency", "Hz", "0.1 Hz", "1/s", (), ("bit", "byte"))
PRICE = Kind("price", "USD", "25000 USD", "USD")
PRICE_PER_LENGTH = Kind("price per length", "USD/m", "1.5 USD/m", "USD/m")
PRICE_PER_POWER = Kind("price per power", "USD/W", "11.7 MUSD/MW", "USD/W")
ENERGY_PRICE = Kind("energy price", "USD/kWh", "0.09 USD/kWh", "USD/J")


class QuantityError(ValueError):
    """A value that is not a quantity of the expected kind; the message says what was expected."""


def parse(value: Any, kind: Kind) -> float:
    """Parse ``value`` (``"700 W"``) as a quantity of ``kind`` and return it in the canonical unit.

    >>> parse("30 kW", POWER)
    30000.0
    >>> parse("400 Gbit/s", DATA_RATE)
    400000000000.0
    """
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"expected a {kind.name} with a unit, e.g. '{kind.example}'")
    if isinstance(value, (int, float)):
        if value == 0:
            return 0.0
        raise QuantityError(
            f"a bare number {value!r} has no unit; expected a {kind.name} such as '{kind.example}'"
        )
    if not isinstance(value, str):
        raise QuantityError(f"expected a {kind.name} such as '{kind.example}', got {type(value).__name__}")
    written = value
    if value.lstrip().startswith("$"):
        value = dollars(value)
    m = _NUMBER.match(value)
    if not m or not m.group(2):
        raise QuantityError(f"'{written}' is not a number with a unit; expected a {kind.name} such as '{kind.example}'")
    number, unit = float(m.group(1)), m.group(2)
    if len(unit) > 40:
        raise QuantityError(f"unit '{unit[:40]}...' is too long")
    factor = _factor(unit, kind) if kind.dimensionality != "K" else None
    out = number * factor if factor is not None else _convert(number, unit, kind, written)
    if not math.isfinite(out):
        raise QuantityError(f"'{written}' is not finite")
    return out


@lru_cache(maxsize=1024)
def _factor(unit: str, kind: Kind) -> float | None:
    """One ``unit`` of ``kind`` in its canonical unit, or None when ``unit`` is not one of the kind's
    (:func:`_convert` then says why, naming the value as written). pint converts a plain (not offset)
    unit as ``magnitude * factor`` with this factor, so ``number * _factor(unit, kind)`` is bit for bit
    its conversion; the ~500 quantities of a site and the built-in catalog, in ~20 units, pay for pint's
    parse and checks once per unit instead of once per value. Temperatures (offset units: degC, degF)
    are not a multiple of their canonical unit and go through pint every time."""
    try:
        return _convert(1.0, unit, kind, unit)
    except QuantityError:
        return None


def _convert(number: float, unit: str, kind: Kind, written: str) -> float:
    """``number`` ``unit`` in ``kind``'s canonical unit, through pint, after checking the unit is one of
    ``kind``'s; a QuantityError names ``written`` and what was expected."""
    ureg = registry()
    try:
        q = ureg.Quantity(number, ureg.parse_units(unit))
    except Exception:  # pint raises several unrelated types for bad units
        money = " (twin counts money in USD only)" if "USD" in kind.canonical else ""
        raise QuantityError(f"unknown unit '{unit}'; expected a {kind.name} such as '{kind.example}'{money}") from None
    expected = ureg.parse_units(kind.dimensionality).dimensionality
    if q.dimensionality != expected:
        raise QuantityError(
            f"'{written}' is {_a(_describe(q))}, expected a {kind.name} such as '{kind.example}'"
        )
    if kind.must_mention:
        if not any(w in str(q.units) for w in kind.must_mention):
            raise QuantityError(f"'{written}' is not a {kind.name}; expected e.g. '{kind.example}'")
    if any(w in str(q.units) for w in kind.must_not_mention):
        raise QuantityError(f"'{written}' is not a {kind.name}; expected e.g. '{kind.example}'")
    return float(q.to(kind.canonical).magnitude)


def dollars(value: str) -> str:
    """The ``$`` shorthand as a quantity in USD; anything else after a ``$`` is refused.

    >>> dollars("$25,000"), dollars("$0.0892/kWh"), dollars("$11,700,000 / MW")
    ('25000 USD', '0.0892 USD/kWh', '11700000 USD/MW')
    """
    m = _DOLLAR.match(value)
    if not m:
        raise QuantityError(f"'{value}' is not a dollar amount; write e.g. '$25,000', '$0.09/kWh' or '25000 USD'")
    tail = (m.group(3) or "").replace(" ", "")
    return f"{m.group(1).replace(',', '')}{m.group(2) or ''} USD{tail}"


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _describe(q: pint.Quantity) -> str:
    dim = str(q.dimensionality) or "dimensionless number"
    for k in (POWER, LENGTH, MASS, AREAL_LOAD, TIME, TEMPERATURE, ENERGY, VOLUME_FLOW, POWER_RATE, PRICE, PRICE_PER_LENGTH, PRICE_PER_POWER, ENERGY_PRICE):
        if q.dimensionality == registry().parse_units(k.dimensionality).dimensionality:
            return k.name
    return f"quantity of dimension {dim}"


def fmt(value: float, kind: Kind) -> str:
    """Format a canonical float back to the YAML form (``"700 W"``); stable across runs."""
    return f"{_g(value)} {kind.canonical}"


def _g(x: float) -> str:
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(round(x, 9))


_QUANTITY_PATTERN = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*\S.*$"
_MONEY_PATTERN = r"^\s*(\$\s*\d[\d,]*(\.\d+)?(\s*/\s*\S.*)?|[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*\S.*)$"


def _annotated(kind: Kind):
    def validate(v: Any) -> float:
        return parse(v, kind)

    money = "USD" in kind.canonical

    return Annotated[
        float,
        BeforeValidator(validate),
        PlainSerializer(lambda v: fmt(v, kind), return_type=str, when_used="json"),
        WithJsonSchema(
            {
                "type": "string",
                "pattern": _MONEY_PATTERN if money else _QUANTITY_PATTERN,
                "description": f"{kind.name} with a unit, e.g. '{kind.example}'" + (" or '$25,000'" if money else "")
                + f" (stored in {kind.canonical})",
                "examples": [kind.example],
            }
        ),
    ]


_PREFIXES = [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "u"), (1e-9, "n")]


def readable(value: float, kind: Kind) -> str:
    """A bound as a person writes it, with an SI prefix (``10 kW``, ``100 Tbit/s``, ``1 ms``).

    >>> readable(10e3, POWER), readable(1e14, DATA_RATE), readable(1e13, DATA_SIZE), readable(0.0, TIME), readable(1e-3, TIME)
    ('10 kW', '100 Tbit/s', '10 TB', '0 s', '1 ms')
    >>> readable(400 * 86400.0, TIME), readable(3600.0, TIME)
    ('400 days', '1 h')
    """
    unit = "B" if kind.canonical == "byte" else kind.canonical
    if value == 0 or "USD" in unit or "/" in unit and not unit.endswith("/s") or unit in ("degC", "K"):
        return f"{value:g} {unit}"
    if unit == "s" and abs(value) >= 60:  # long times in the units people use: 400 days, not 34.56 Ms
        scale, name = next((f, n) for f, n in ((86400.0, "days"), (3600.0, "h"), (60.0, "min")) if abs(value) >= f)
        return f"{value / scale:g} {name}"
    scale, prefix = next(((f, p) for f, p in _PREFIXES if abs(value) >= f), _PREFIXES[-1])
    return f"{value / scale:g} {prefix}{unit}"


@dataclass(frozen=True)
class Bounds:
    """The domain of a quantity field, in its canonical unit: above ``above`` (exclusive) or from
    ``at_least`` (inclusive), up to ``at_most``. A value outside is a located error saying the range;
    the field reference prints it (:mod:`twin.lang.reference`)."""

    above: float | None = None
    at_least: float | None = None
    at_most: float | None = None

    def holds(self, v: float) -> bool:
        return ((self.above is None or v > self.above) and (self.at_least is None or v >= self.at_least)
                and (self.at_most is None or v <= self.at_most))

    def text(self, kind: Kind) -> str:
        """``> 0 W, <= 10 kW``."""
        parts = ([f"> {readable(self.above, kind)}"] if self.above is not None else []) + \
                ([f">= {readable(self.at_least, kind)}"] if self.at_least is not None else []) + \
                ([f"<= {readable(self.at_most, kind)}"] if self.at_most is not None else [])
        return ", ".join(parts)


def bounded(kind: Kind, above: float | None = None, at_least: float | None = None, at_most: float | None = None):
    """A quantity of ``kind`` that must lie in the range given (canonical units): a power, a rate, a
    memory that is physical, not merely a number with a unit.

    >>> from pydantic import TypeAdapter
    >>> TypeAdapter(bounded(POWER, above=0, at_most=10e3)).validate_python("700 W")
    700.0
    >>> try:
    ...     TypeAdapter(bounded(POWER, above=0, at_most=10e3)).validate_python("1e30 W")
    ... except ValueError as e:
    ...     print(e.errors()[0]["msg"])
    Value error, '1e30 W' is out of range: expected a power > 0 W, <= 10 kW
    """
    bounds = Bounds(above, at_least, at_most)

    def validate(v: Any) -> float:
        out = parse(v, kind)
        if not bounds.holds(out):
            raise QuantityError(f"'{v}' is out of range: expected a {kind.name} {bounds.text(kind)}")
        return out

    base = _annotated(kind)
    meta = [m if not isinstance(m, BeforeValidator) else BeforeValidator(validate) for m in base.__metadata__]
    schema = next(m for m in meta if isinstance(m, WithJsonSchema))
    meta[meta.index(schema)] = WithJsonSchema({**schema.json_schema, "description": schema.json_schema["description"] + f"; {bounds.text(kind)}"})
    return Annotated[(float, *meta, bounds)]


Power = _annotated(POWER)
Length = _annotated(LENGTH)
Mass = _annotated(MASS)
ArealLoad = _annotated(AREAL_LOAD)
DataRate = _annotated(DATA_RATE)
DataSize = _annotated(DATA_SIZE)
Time = _annotated(TIME)
Temperature = _annotated(TEMPERATURE)
Energy = _annotated(ENERGY)
TemperatureDifference = _annotated(TEMPERATURE_DIFFERENCE)
VolumeFlow = _annotated(VOLUME_FLOW)
PowerRate = _annotated(POWER_RATE)
Frequency = _annotated(FREQUENCY)
Price = _annotated(PRICE)
PricePerLength = _annotated(PRICE_PER_LENGTH)
PricePerPower = _annotated(PRICE_PER_POWER)
EnergyPrice = _annotated(ENERGY_PRICE)


def kw(watts: float) -> str:
    """Human figure for reports: watts as kW or MW with sensible precision."""
    if abs(watts) >= 1e6:
        return f"{watts / 1e6:,.2f} MW"
    return f"{watts / 1e3:,.1f} kW"

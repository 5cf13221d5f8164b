"""Quantities at the boundary: parsing, canonical units, and messages naming the expected dimension."""

import pytest

from twin.lang import units as u


@pytest.mark.parametrize(
    "text,kind,expected",
    [
        ("700 W", u.POWER, 700.0),
        ("30 kW", u.POWER, 30_000.0),
        ("1.2 MW", u.POWER, 1_200_000.0),
        ("1.2 m", u.LENGTH, 1.2),
        ("120 cm", u.LENGTH, 1.2),
        ("400 Gbit/s", u.DATA_RATE, 400e9),
        ("50 GB/s", u.DATA_RATE, 400e9),
        ("64 MiB", u.DATA_SIZE, 64 * 2**20),
        ("22 us", u.TIME, 22e-6),
        ("27 degC", u.TEMPERATURE, 27.0),
        ("80.6 degF", u.TEMPERATURE, 27.0),
        ("1500 kg/m^2", u.AREAL_LOAD, 1500.0),
    ],
)
def test_parse_to_canonical(text, kind, expected):
    assert u.parse(text, kind) == pytest.approx(expected)


@pytest.mark.parametrize(
    "value,kind,needle",
    [
        ("700 m", u.POWER, "expected a power"),
        ("3 kg", u.LENGTH, "expected a length"),
        ("400 Hz", u.DATA_RATE, "not a data rate"),
        (700, u.POWER, "has no unit"),
        ("seven W", u.POWER, "not a number with a unit"),
        ("7 wombats", u.POWER, "unknown unit"),
        (True, u.POWER, "with a unit"),
        ([1, 2], u.POWER, "got list"),
    ],
)
def test_wrong_input_names_expectation(value, kind, needle):
    with pytest.raises(u.QuantityError) as e:
        u.parse(value, kind)
    assert needle in str(e.value)


def test_fmt_round_trips():
    for x in (700.0, 0.5, 1e11, 27.0):
        assert u.parse(u.fmt(x, u.POWER), u.POWER) == x


# Units a site, scenario or sweep writes (every one the examples, the catalog and the tests use, and the
# customary ones a facility engineer may): twin's registry (twin/lang/units.txt) must read each exactly
# as pint's default registry does: the same unit names (the data-rate checks read them), dimension and
# value in the kind's canonical unit.
WRITTEN = [
    ("W", u.POWER), ("kW", u.POWER), ("MW", u.POWER), ("kilowatt", u.POWER), ("BTU/h", u.POWER),
    ("m", u.LENGTH), ("mm", u.LENGTH), ("cm", u.LENGTH), ("km", u.LENGTH), ("ft", u.LENGTH), ("in", u.LENGTH),
    ("feet", u.LENGTH), ("yd", u.LENGTH), ("mi", u.LENGTH), ("meters", u.LENGTH),
    ("kg", u.MASS), ("lb", u.MASS), ("t", u.MASS), ("tonne", u.MASS),
    ("kg/m^2", u.AREAL_LOAD), ("lb/ft^2", u.AREAL_LOAD),
    ("Gbit/s", u.DATA_RATE), ("Tbit/s", u.DATA_RATE), ("GB/s", u.DATA_RATE), ("TB/s", u.DATA_RATE), ("kbit/s", u.DATA_RATE),
    ("B", u.DATA_SIZE), ("bytes", u.DATA_SIZE), ("kB", u.DATA_SIZE), ("MiB", u.DATA_SIZE), ("GiB", u.DATA_SIZE), ("TB", u.DATA_SIZE),
    ("Gbit", u.DATA_SIZE),
    ("ns", u.TIME), ("us", u.TIME), ("µs", u.TIME), ("ms", u.TIME), ("s", u.TIME), ("min", u.TIME), ("minutes", u.TIME),
    ("h", u.TIME), ("hours", u.TIME), ("d", u.TIME), ("day", u.TIME), ("days", u.TIME), ("week", u.TIME), ("year", u.TIME),
    ("degC", u.TEMPERATURE), ("degF", u.TEMPERATURE), ("K", u.TEMPERATURE),
    ("J", u.ENERGY), ("kWh", u.ENERGY), ("MWh", u.ENERGY), ("BTU", u.ENERGY),
    ("K", u.TEMPERATURE_DIFFERENCE), ("mK", u.TEMPERATURE_DIFFERENCE),
    ("L/min", u.VOLUME_FLOW), ("m^3/s", u.VOLUME_FLOW), ("m^3/h", u.VOLUME_FLOW), ("gal/min", u.VOLUME_FLOW),
    ("MW/s", u.POWER_RATE), ("kW/s", u.POWER_RATE), ("W/s", u.POWER_RATE),
    ("Hz", u.FREQUENCY), ("GHz", u.FREQUENCY),
    ("USD", u.PRICE), ("MUSD", u.PRICE), ("USD/m", u.PRICE_PER_LENGTH), ("MUSD/MW", u.PRICE_PER_POWER), ("USD/kW", u.PRICE_PER_POWER),
    ("USD/kWh", u.ENERGY_PRICE), ("USD/MWh", u.ENERGY_PRICE),
]


def test_twin_units_read_as_pints_default_registry():
    import pint

    full = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)
    full.define("USD = [currency]")
    mine = u.registry()
    for unit, kind in WRITTEN:
        a, b = mine.Quantity(3.0, mine.parse_units(unit)), full.Quantity(3.0, full.parse_units(unit))
        assert str(a.units) == str(b.units), unit
        assert str(a.dimensionality) == str(b.dimensionality), unit
        assert a.to(kind.canonical).magnitude == pytest.approx(b.to(kind.canonical).magnitude, rel=1e-12), unit
        assert u.parse(f"3 {unit}", kind) == pytest.approx(float(b.to(kind.canonical).magnitude), rel=1e-12), unit
    # a unit pint knows and twin's inputs have no use for is refused by name, with the expectation
    assert full.parse_units("furlong") and "unknown unit 'furlong'" in _refused("3 furlong", u.LENGTH)


def _refused(text, kind) -> str:
    with pytest.raises(u.QuantityError) as e:
        u.parse(text, kind)
    return str(e.value)


NUMBERS = (3.0, 0.1, 7.25e3, 123456.789, 1e-9, 0.3)


def test_parse_is_pints_conversion_bit_for_bit():
    # parse() converts a plain unit by the factor it found for that unit once (units._factor): the value
    # must be exactly what pint's own conversion of that value gives, not merely close
    ureg = u.registry()
    for unit, kind in WRITTEN:
        for x in NUMBERS:
            pint_value = float(ureg.Quantity(x, ureg.parse_units(unit)).to(kind.canonical).magnitude)
            assert u.parse(f"{x!r} {unit}", kind) == pint_value, (x, unit)
    # a refused unit is refused every time, with the value as written
    for _ in range(2):
        assert "'5 m' is a length, expected a power" in _refused("5 m", u.POWER)


def test_pint_reads_the_same_without_numpy():
    # twin imports pint with numpy, scipy and dask hidden (units._import_pint) unless they are loaded
    # already: both ways, every written unit converts to the same float
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys\n{first}from twin.lang import units as u\n"
            "from tests.test_units import WRITTEN, NUMBERS\n"
            "print('numpy' in sys.modules, repr([u.parse(f'{{x!r}} {{unit}}', kind) for unit, kind in WRITTEN for x in NUMBERS]))")
    out = [subprocess.run([sys.executable, "-c", code.format(first=first)], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).parent.parent).stdout
           for first in ("", "import numpy\n")]
    assert out[0].startswith("False ") and out[1].startswith("True ")
    assert out[0].split(" ", 1)[1] == out[1].split(" ", 1)[1]

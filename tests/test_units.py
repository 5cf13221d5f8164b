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

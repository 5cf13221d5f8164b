"""Loader gaps: YAML scalar tags, integers past Python's 4,300-digit conversion limit, devices and FIFOs
given as input files, and temperature CSVs with a 131,072-character field, non-UTF-8 bytes or -500 degC.
Each was a traceback or a hang; each is now a located error (and exit 2 from the CLI).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from twin.lang.diagnostics import SpecError
from twin.lang.loader import LoadError, load_file, load_text
from twin.lang.scenario.models import parse_scenario
from twin.twins.power.thermal import outdoor, read_hourly_csv

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "twin", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


@pytest.mark.parametrize("text, where, words", [
    ("a: !!int x\n", "t.yaml:1:4", "YAML tag '!!int' is not allowed"),  # was: ValueError
    ("a: !!bool maybe\n", "t.yaml:1:4", "YAML tag '!!bool'"),  # was: KeyError
    ("a: 2020-13-45\n", "t.yaml:1:4", "YAML value: month must be in 1..12"),  # a plain date too; was: ValueError
    ("a: !!binary aGk=\n", "t.yaml:1:4", "YAML tag '!!binary'"),
    ("a:\n  b: " + "9" * 5000 + "\n", "t.yaml:2:6", "an integer of 5,000 characters (expected at most 30 digits)"),  # was: ValueError
])
def test_yaml_scalars_with_tags_or_too_many_digits_are_located(text, where, words):
    with pytest.raises(LoadError) as e:
        load_text(text, "t.yaml")
    assert e.value.diagnostics[0].format().startswith(where) and words in e.value.diagnostics[0].format()


def test_plain_yaml_still_loads():
    assert load_text("a: 5\nb: '5'\nc: 0x1F\nd: [1.5, ~, yes]\n", "t.yaml").data == {"a": 5, "b": "5", "c": 31, "d": [1.5, None, True]}


@pytest.fixture()
def fifo(tmp_path):
    p = tmp_path / "pipe.yaml"
    os.mkfifo(p)
    return p


def test_devices_and_fifos_are_refused_before_reading(fifo):
    for path, kind in (("/dev/zero", "a device"), (str(fifo), "a FIFO"), (str(fifo.parent), "a directory")):
        with pytest.raises(LoadError) as e:
            load_file(path)  # /dev/zero used to be read until memory ran out; a FIFO blocked forever
        assert e.value.diagnostics[0].message.startswith(f"{kind}, not a regular YAML file")


@pytest.mark.slow
def test_the_cli_refuses_a_fifo_as_site_scenario_and_sweep(fifo):
    """Slow for its three CLI start-ups (about 3 s each): each command exits 2 at once instead of blocking."""
    for args in (("validate", str(fifo)), ("simulate", "sites/lab-2zone.yaml", "-s", str(fifo)), ("sweep", str(fifo))):
        r = cli(*args, timeout=60)
        assert r.returncode == 2 and f"{fifo}:0:0: a FIFO, not a regular YAML file" in r.stderr and "Traceback" not in r.stderr, args


CSV_HEAD = "hour,temperature\n0,20 degC\n"


@pytest.mark.parametrize("body, where, words", [
    (CSV_HEAD.encode() + b"1," + b"9" * 131_072 + b"\n", "t.csv:3:1", "a field of 131,072 characters"),
    (CSV_HEAD.encode() + b'1,"' + b"9" * 131_073 + b'"\n', "t.csv:3:1", "not CSV: field larger than field limit"),  # was: csv.Error
    (CSV_HEAD.encode() + b"1,2\xff1 degC\n", "t.csv:3:4", "byte 0xff is not UTF-8 text"),  # was: UnicodeDecodeError
    (CSV_HEAD.encode() + b"1,-500 degC\n", "t.csv:3:3", "-500 degC is not an outdoor temperature (expected between -100 and 70 degC)"),
    (CSV_HEAD.encode() + b"1,2\x001 degC\n", "t.csv:3:1", "a NUL character"),
])
def test_temperature_csv_gaps_are_located(tmp_path, body, where, words):
    p = tmp_path / "t.csv"
    p.write_bytes(body)
    with pytest.raises(SpecError) as e:
        read_hourly_csv(p)
    msg = e.value.diagnostics[0].format()
    assert msg.startswith(f"{tmp_path}/{where}") and words in msg, msg


def test_a_temperature_csv_outside_the_scenario_folder_is_refused_unread(tmp_path):
    """A scenario names its CSV relative to itself, inside its folder (issue 25): an absolute path or a
    '..' out is refused before a byte is read, so neither /dev/zero (never ends) nor a secret (its
    lines would be quoted in the CSV's errors) is read."""
    secret = tmp_path / "secret.csv"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    (tmp_path / "s").mkdir()
    for named in ("/dev/zero", "../secret.csv", str(secret)):
        p = tmp_path / "s" / "s.yaml"
        p.write_text(f"name: x\npower:\n  duration: 2 h\n  job: {{step: {{step: 8 s, compute: 6 s}}}}\n  weather: {{csv: '{named}'}}\n")
        r = cli("simulate", "sites/lab-2zone.yaml", "-s", str(p), timeout=300) if named == "/dev/zero" else None
        if r is not None:
            assert r.returncode == 2 and "/dev/zero:1:1: cannot use the temperature CSV: an absolute path outside" in r.stderr, r.stderr
            assert "Traceback" not in r.stderr
            continue
        with pytest.raises(SpecError) as e:
            outdoor(parse_scenario(p.read_text(), str(p))[0].power.weather, np.zeros(2), 0.0, p.parent)
        msg = "\n".join(d.format() for d in e.value.diagnostics)
        assert "cannot use the temperature CSV" in msg and "outside" in msg and "root:x" not in msg, msg


def test_a_fifo_beside_the_scenario_is_refused_as_the_temperature_csv(tmp_path):
    os.mkfifo(tmp_path / "w.csv")
    w = parse_scenario("name: x\npower:\n  job: {step: {step: 8 s, compute: 6 s}}\n  weather: {csv: w.csv}\n", "w.yaml")[0].power.weather
    with pytest.raises(SpecError) as e:
        outdoor(w, np.zeros(2), 0.0, tmp_path)
    assert e.value.diagnostics[0].format().startswith(f"{tmp_path}/w.csv:1:1: cannot use the temperature CSV: a FIFO, not a regular temperature CSV")


def test_weather_temperatures_are_outdoor_temperatures():
    with pytest.raises(SpecError) as e:
        parse_scenario("name: x\npower:\n  job: {step: {step: 8 s, compute: 6 s}}\n  weather: {constant: -500 degC}\n", "w.yaml")
    assert e.value.diagnostics[0].format().startswith("w.yaml:4:23: power.weather.constant:") and "out of range (expected greater than or equal to -100)" in e.value.diagnostics[0].format()

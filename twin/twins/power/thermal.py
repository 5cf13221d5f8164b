"""Outdoor temperature, the halls' inlet temperature, GPU thermal throttling and the cooling overhead.

Model (constants assumed; one set for every site):

- outdoor temperature: a diurnal cosine between ``min`` (12 h before the peak) and ``max`` at
  ``peak_at``, an hourly CSV (linear between hours), or a constant;
- air-cooled hall: the supply air holds the design inlet temperature (``cooling.inlet_temperature``)
  until outdoor air plus the plant's approach is warmer (economiser / evaporative plant), then tracks
  it: ``inlet = max(setpoint, outdoor + APPROACH x load / capacity)``;
- liquid-cooled hall: the same rule on the coolant supply, with a cold plate's much smaller thermal
  resistance from coolant to GPU; a hall with CDUs applies the rule to its facility water
  (``facility_water.supply_temperature``, the liquid heat against what the water carries), and the CDUs
  supply the cold plates at the facility water plus their approach, never below their set point
  (``cdus.supply_temperature``);
- GPU: ``T_gpu = inlet + THETA x (step-average GPU power)`` (a heat sink's time constant is far longer
  than a step); above ``THROTTLE_AT`` the clocks drop until the GPU holds the threshold, i.e. its
  average power falls to ``(THROTTLE_AT - inlet) / THETA``; the compute phases give up that power and
  run at the chassis ``perf_vs_power`` throughput for their reduced power. A synchronous job runs at
  its slowest GPU's pace, so the hottest hall sets everyone's step.
- cooling overhead: ``(PUE(outdoor) - 1) x IT``, where the plant follows the IT load with a lag.

>>> round(float(diurnal(15 * 3600.0, 20.0, 36.0, 15 * 3600.0)), 1), round(float(diurnal(3 * 3600.0, 20.0, 36.0, 15 * 3600.0)), 1)
(36.0, 20.0)
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from twin.lang.diagnostics import Diagnostic, Severity, SpecError
from twin.lang.files import FileRefused, inside, read_bytes
from twin.lang.scenario.power import OUTDOOR_RANGE
from twin.lang.units import TEMPERATURE, QuantityError, parse

APPROACH = {"air": 4.0, "liquid": 3.0}  # K at full cooling load (assumed)
THETA = {"air": 0.075, "liquid": 0.03}  # K/W from inlet or coolant to GPU, H100 SXM class (assumed; see above)
THROTTLE_AT = 83.0  # degC: GPU clocks fall to hold this temperature (assumed; see above)


def diurnal(t_of_day: np.ndarray | float, lo: float, hi: float, peak_at: float) -> np.ndarray | float:
    """A cosine day: ``hi`` at ``peak_at``, ``lo`` twelve hours away."""
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(2 * np.pi * (np.asarray(t_of_day) - peak_at) / 86400.0)


MAX_FIELD = 64  # characters of one CSV field ("23.5 degC" is 9)


def read_hourly_csv(path: Path) -> np.ndarray:
    """Hourly temperatures from ``hour,temperature`` rows (``0,24 degC``); every hour from 0 without
    gaps. A regular file of at most ``input_bytes`` (:mod:`twin.lang.limits`), UTF-8, fields of at
    most 64 characters, temperatures an outdoor air can have. Problems come back as diagnostics located
    in the CSV (FILE:LINE:COL)."""
    def fail(line: int, col: int, msg: str, exp: str = "an hourly CSV 'hour,temperature'"):
        return SpecError([Diagnostic(Severity.ERROR, str(path), line, col, (), msg, exp)])

    try:
        raw = read_bytes(path, "input_bytes", "temperature CSV")
    except FileRefused as e:
        raise fail(1, 1, f"cannot use the temperature CSV: {e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise fail(line, e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1, f"byte 0x{raw[e.start]:02x} is not UTF-8 text") from None
    if "\x00" in text:
        raise fail(text.count("\n", 0, text.index("\x00")) + 1, 1, "a NUL character")
    diags: list[Diagnostic] = []
    temps: list[float] = []

    def bad(line: int, col: int, msg: str, exp: str) -> None:
        diags.append(Diagnostic(Severity.ERROR, str(path), line, col, (), msg, exp))

    rows: list[tuple[int, list[str]]] = []
    reader = csv.reader(io.StringIO(text))
    try:
        for row in reader:
            rows.append((reader.line_num, row))
    except csv.Error as e:  # a field beyond the csv module's limit, a stray quote
        raise fail(max(1, reader.line_num), 1, f"not CSV: {e}") from None
    if not rows or [c.strip().lower() for c in rows[0][1]] != ["hour", "temperature"]:
        bad(1, 1, "the first row must be the header 'hour,temperature'", "hour,temperature")
        raise SpecError(diags)
    lo, hi = OUTDOOR_RANGE
    for ln, row in rows[1:]:
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != 2:
            bad(ln, 1, f"{len(row)} fields", "2 fields: hour,temperature")
            continue
        if any(len(c) > MAX_FIELD for c in row):
            bad(ln, 1, f"a field of {max(map(len, row)):,} characters", f"at most {MAX_FIELD}")
            continue
        h, v = row[0].strip(), row[1]
        col_v = len(row[0]) + 2 + (len(v) - len(v.lstrip()))
        if not (h.isascii() and h.isdigit()):
            bad(ln, 1, f"'{h}' is not an hour", "an integer hour from 0")
            continue
        if int(h) != len(temps):
            bad(ln, 1, f"hour {h} where hour {len(temps)} comes next" + (" (a gap)" if int(h) > len(temps) else ""),
                f"hour {len(temps)}: every hour from 0 without gaps")
            break
        try:
            t = parse(v.strip(), TEMPERATURE)
        except QuantityError as e:
            bad(ln, col_v, str(e).split("; expected")[0], "a temperature such as '24 degC'")  # the expectation once
            t = float("nan")
        else:
            if not lo <= t <= hi:
                bad(ln, col_v, f"{t:g} degC is not an outdoor temperature", f"between {lo:g} and {hi:g} degC")
        temps.append(t)
    if not diags and len(temps) < 2:
        bad(max(1, rows[-1][0]), 1, f"{len(temps)} hourly row(s)", "at least 2 hours")
    if diags:
        raise SpecError(diags)
    return np.array(temps)


def outdoor(weather, t: np.ndarray, start_time: float, base: Path) -> np.ndarray:
    """Outdoor temperature (degC) at trace times ``t`` (s); ``start_time`` is the time of day at t=0."""
    tod = start_time + np.asarray(t, float)
    if weather.constant is not None:
        return np.full(np.shape(t), weather.constant)
    if weather.diurnal is not None:
        d = weather.diurnal
        return diurnal(tod % 86400.0, d.min, d.max, d.peak_at)
    try:  # named relative to the scenario, inside its folder: a scenario cannot make twin read (and quote) any file
        path = inside(weather.csv, base)
    except FileRefused as e:
        raise SpecError([Diagnostic(Severity.ERROR, weather.csv, 1, 1, (), f"cannot use the temperature CSV: {e}",
                                    "an hourly CSV beside the scenario or below its folder")]) from None
    hourly = read_hourly_csv(path)
    hours = np.arange(len(hourly)) * 3600.0
    return np.interp(tod, hours, hourly)


def inlet(medium: str, setpoint: float, t_out: np.ndarray, load_fraction: float) -> np.ndarray:
    """Inlet (air) or coolant supply (liquid) temperature of a hall."""
    return np.maximum(setpoint, t_out + APPROACH[medium] * min(1.0, max(0.0, load_fraction)))


def coolant(cdu_setpoint: float, approach: float, fw_setpoint: float, t_out: np.ndarray,
            load_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(facility water supply, CDU coolant supply to the cold plates) in degC of a hall with CDUs.

    >>> fw, tc = coolant(35.0, 3.0, 30.0, np.array([20.0, 33.0]), 1.0)
    >>> fw.tolist(), tc.tolist()
    ([30.0, 36.0], [35.0, 39.0])
    """
    fw = inlet("liquid", fw_setpoint, t_out, load_fraction)
    return fw, np.maximum(cdu_setpoint, fw + approach)


def throttle(medium: str, t_in: np.ndarray, avg_gpu_w: float) -> np.ndarray:
    """Fraction of its step-average power a GPU may draw to stay at ``THROTTLE_AT`` (<= 1)."""
    allowed = (THROTTLE_AT - np.asarray(t_in, float)) / THETA[medium]
    return np.clip(allowed / avg_gpu_w, 0.05, 1.0)


def perf_at(curve: list[tuple[float, float]], power_fraction: np.ndarray) -> np.ndarray:
    """Throughput fraction at a power fraction of TDP from the chassis curve (linear; 1:1 below it)."""
    if not curve:
        return np.asarray(power_fraction, float) ** (1 / 3)  # assumed: clock ~ power^(1/3) under DVFS
    xs, ys = zip(*sorted(curve))
    pf = np.asarray(power_fraction, float)
    return np.where(pf < xs[0], ys[0] * pf / xs[0], np.interp(pf, xs, ys))


def pue_at(pue: float, curve: list[tuple[float, float]], t_out: np.ndarray) -> np.ndarray:
    if not curve:
        return np.full(np.shape(t_out), pue)
    xs, ys = zip(*sorted(curve))
    return np.interp(t_out, xs, ys)

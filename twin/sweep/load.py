"""Loading a sweep file: its site and scenario read, every axis path and value checked against the
site and scenario languages, and the figures it asks for resolved against the registry
(:mod:`twin.analysis.figures`), all at once with located errors (the language is
:mod:`twin.lang.sweep.models`)."""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from twin.analysis import figures as figs
from twin.lang import limits, versions
from twin.lang.diagnostics import Diagnostic, Severity, SpecError
from twin.lang.files import FileRefused, inside
from twin.lang.loader import LoadError, Source, load_file
from twin.lang.site.models import Site
from twin.lang.sweep.models import Axis, Range, Setting, Sweep, SweepFile, Target
from twin.lang.sweep.paths import PathError, check_value, field_type, parse_path
from twin.lang.units import registry
from twin.lang.validator import diagnostic, pydantic_diagnostics

YAML_SUFFIXES = (".yaml", ".yml")


def named_file(src: Source, key: str, named: str, root: Path | None) -> Path:
    """A file the sweep names (``site:``, ``scenario:``): a YAML file relative to the sweep file, inside
    ``root`` (default: the sweep file's folder); a located SpecError otherwise."""
    try:
        p = inside(named, Path(src.path).parent, root)
    except FileRefused as e:
        raise SpecError([diagnostic(src, Severity.ERROR, (key,), str(e), f"a {key} file beside or below the sweep file")]) from None
    if p.suffix.lower() not in YAML_SUFFIXES:
        raise SpecError([diagnostic(src, Severity.ERROR, (key,), f"'{named}' is not a YAML file", "a .yaml or .yml file")])
    return p


def load_sweep(path: str | Path, root: str | Path | None = None) -> Sweep:
    """Parse and check a sweep file; SpecError with every positioned problem. The files it names must
    lie inside ``root`` (default: the sweep file's folder)."""
    try:
        src = load_file(path)
    except LoadError as e:
        raise SpecError(e.diagnostics) from None
    if not isinstance(src.data, dict):
        raise SpecError([diagnostic(src, Severity.ERROR, (), "a sweep must be a mapping", "name:, site:, axes:")])
    if errors := [d for d in versions.read(src, "sweep") if d.severity is Severity.ERROR]:
        raise SpecError(errors)
    try:
        sf = SweepFile.model_validate(src.data)
    except ValidationError as e:
        raise SpecError(pydantic_diagnostics(src, e, SweepFile)) from None
    errors: list[Diagnostic] = []

    def err(where: tuple, message: str, expected: str = "") -> None:
        errors.append(diagnostic(src, Severity.ERROR, where, message, expected))

    root = Path(root) if root is not None else None
    site_path = named_file(src, "site", sf.site, root)
    try:
        site = load_file(site_path).data
    except LoadError as e:
        raise SpecError([diagnostic(src, Severity.ERROR, ("site",), e.diagnostics[0].format())]) from None
    if not isinstance(site, dict):
        raise SpecError([diagnostic(src, Severity.ERROR, ("site",), f"{sf.site} is not a site mapping")])
    scenario, scenario_name, has = _scenario(src, sf, root)
    axes, columns, seen = [], [], {}
    for i, ax in enumerate(sf.axes):
        items = _axis_items(src, i, ax, site, scenario, err, seen, columns)
        axes.append(items)
    wanted = sf.figures if sf.figures is not None else figs.defaults(has)
    for k, name in enumerate(wanted):
        if not figs.known(name):
            close = difflib.get_close_matches(name, list(figs.FIGURES), n=1)
            err(("figures", k), f"unknown figure '{name}'", f"did you mean '{close[0]}'?" if close else
                "a named figure (twin sweep --help lists them) or design:, sim:, cost: followed by a path")
        elif (need := figs.needs(name)) and need not in has and not (need == "sim" and has):
            err(("figures", k), f"figure '{name}' needs a scenario with {need if need != 'sim' else 'jobs, a campaign, power or a cluster'}",
                "a scenario: that runs that twin")
    jobs = scenario.get("jobs") or [] if scenario is not None else []
    if sf.job > 1 and sf.job > len(jobs):  # job 1 of a scenario without jobs gives no job figures, and says so
        err(("job",), f"job {sf.job:,} of a scenario with {len(jobs)} job(s)", f"1-{len(jobs)}" if jobs else "job: 1, or a scenario with jobs:")
    if sf.scheme is not None and scenario is not None:
        names = [r.get("name") for r in scenario.get("routing") or [] if isinstance(r, dict)]
        if sf.scheme not in names:
            err(("scheme",), f"the scenario has no routing scheme '{sf.scheme}'", ", ".join(map(str, names)) or "a scheme name")
    count = math.prod(len(a) for a in axes) if axes else 1
    if msg := limits.exceeded("sweep_variants", count):
        err(("axes",), msg, "fewer values per axis")
    if errors:
        raise SpecError(sorted(set(errors), key=lambda d: (d.line, d.col, d.message)))
    return Sweep(sf, Path(path), site_path, site, scenario, scenario_name, axes, columns, list(wanted), frozenset(has))


def _scenario(src: Source, sf: SweepFile, root: Path | None) -> tuple[dict | None, str | None, set[str]]:
    """The base scenario as data (validated), its display name, and which twins it runs."""
    from twin.lang.scenario.models import load_scenario, validate_source

    if sf.scenario is None:
        return None, None, set()
    if isinstance(sf.scenario, str):
        p = named_file(src, "scenario", sf.scenario, root)
        try:
            scn, ssrc = load_scenario(p)
        except SpecError as e:
            if e.diagnostics and e.diagnostics[0].message.startswith("cannot read"):
                raise SpecError([diagnostic(src, Severity.ERROR, ("scenario",), e.diagnostics[0].message, "a scenario file")]) from None
            raise
        data, name = ssrc.data, str(p)
    else:
        inner = Source(src.path, src.data["scenario"], src.text,
                       {k[1:]: v for k, v in src.positions.items() if k[:1] == ("scenario",)})
        scn = validate_source(inner)
        data, name = inner.data, f"{src.path} (scenario)"
    has = {k for k, on in (("jobs", bool(scn.jobs)), ("campaign", scn.campaign is not None), ("power", scn.power is not None),
                                        ("cluster", scn.cluster is not None)) if on}
    return data, name, has


def _axis_items(src, i: int, ax: Axis, site: dict, scenario: dict | None, err, seen: dict, columns: list) -> list[tuple[str, list[Setting]]]:
    """An axis as its items: a label and the settings of each; problems go to ``err`` at their place."""
    if ax.zip is None:
        values = ax.values if ax.values is not None else _expand_range(ax.range, ("axes", i, "range"), err)
        lists = {ax.path: (values, ("axes", i, "path"), ("axes", i, "values" if ax.values is not None else "range"))}
    else:
        lists = {p: (v, ("axes", i, "zip", p), ("axes", i, "zip", p)) for p, v in ax.zip.items()}
    checked: dict[str, tuple[Target, tuple]] = {}
    for text, (values, where, vwhere) in lists.items():
        try:
            path = parse_path(text)
            target: Target = "site"
            if path[0] in ("site", "scenario"):
                target, path = path[0], path[1:]
            if not path:
                raise PathError(f"'{text}' names no field", "e.g. fabric.atsw.oversubscription")
            if target == "scenario" and scenario is None:
                raise PathError(f"'{text}' is a scenario path and the sweep has no scenario", "a scenario: in the sweep")
            from twin.lang.scenario.models import Scenario

            kind = field_type(Scenario if target == "scenario" else Site, scenario if target == "scenario" else site, path)
        except PathError as e:
            err(where, e.message, e.expected)
            continue
        key = (target, path)
        if key in seen:
            err(where, f"'{text}' is set by axis {seen[key] + 1} too", "each path in one axis")
            continue
        seen[key] = i
        checked[text] = key
        columns.append(Setting(target, path, None).column)
        for j, v in enumerate(values):
            try:
                check_value(kind, v)
            except PathError as e:
                err(vwhere + ((j,) if ax.range is None else ()), e.message, e.expected)
    if len(checked) != len(lists):
        return [("", [])]
    n = len(next(iter(lists.values()))[0])
    items = []
    for j in range(n):
        settings = [Setting(*checked[text], lists[text][0][j]) for text in lists]
        if ax.labels is not None:
            label = ax.labels[j]
        else:
            label = " ".join(f"{_short(s)}={_show(s.value)}" for s in settings)
        items.append((label, settings))
    return items


def _short(s: Setting) -> str:
    """The last field name of a path (``oversubscription``), or the whole path when it ends in an index."""
    last = [p for p in s.path if isinstance(p, str)]
    return last[-1] if last and s.path[-1] == last[-1] else s.column


def _show(v: Any) -> str:
    return "default" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))


_QTY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


def _expand_range(r: Range, where: tuple, err) -> list:
    """``{from, to, step}`` as its values: numbers, or quantities in the unit ``from`` is written in.

    >>> _expand_range(Range.model_validate({"from": "500 W", "to": "0.7 kW", "step": "100 W"}), (), None)
    ['500 W', '600 W', '700 W']
    >>> _expand_range(Range.model_validate({"from": 1, "to": 2, "step": 0.5}), (), None)
    [1.0, 1.5, 2.0]
    """
    ends = [r.from_, r.to, r.step]
    if all(isinstance(x, (int, float)) for x in ends):
        a, b, s, unit = float(r.from_), float(r.to), float(r.step), None
    else:
        m = _QTY.match(str(r.from_))
        unit = m.group(2) if m else ""
        try:
            ureg = registry()
            qs = [ureg.Quantity(float(_QTY.match(str(x)).group(1)), ureg.parse_units(_QTY.match(str(x)).group(2) or unit)) for x in ends]
            a, b, s = (float(q.to(ureg.parse_units(unit)).magnitude) for q in qs)
        except Exception:
            err(where, f"range {r.from_!r} to {r.to!r} step {r.step!r} is not numbers or quantities of one dimension",
                "e.g. {from: 500 W, to: 700 W, step: 100 W}")
            return []
    if not all(math.isfinite(x) for x in (a, b, s)):
        err(where, f"range {r.from_!r} to {r.to!r} step {r.step!r} has a bound that is not a finite number", "e.g. {from: 1, to: 4, step: 1}")
        return []
    if s <= 0 or b < a:
        err(where, "a range needs from <= to and a positive step", "e.g. {from: 1, to: 4, step: 1}")
        return []
    span = (b - a) / s  # infinite when the bounds are finite but their difference is not (-1e308 to 1e308)
    n = math.floor(span + 1e-9) + 1 if math.isfinite(span) else math.inf
    if msg := limits.exceeded("sweep_variants", n, "values"):
        err(where, msg, "a larger step")
        return []
    vals = [round(a + k * s, 12) for k in range(n)]
    if unit is None:
        return [int(v) for v in vals] if all(isinstance(x, int) for x in ends) else vals
    return [f"{v:g} {unit}" for v in vals]

"""The input languages' versions: what each version changed, how a file written for an older version is
read, and the edits ``twin upgrade`` makes to bring it to the current one.

A site, scenario or sweep states the version of its language in ``version:``; a file without one was
written before the languages carried versions and is read as version 1. Reading a file of an older
version applies every later change as it stood when that version was current and says so: one located
warning per value twin took in the file's place, naming it and what to write instead. A file of a newer
version than this twin knows, or a ``version`` that is not a whole number from 1, is a located error.

Each :class:`Change` is one entry of the languages' changelog (the documentation's "Language versions"
page is generated from :data:`CHANGES`) and, when older files need it, the function that finds what
they left out.

>>> from twin.lang.loader import load_text
>>> src = load_text("catalog:\\n  switches:\\n    tor: {vendor: Arista, ports: 64}\\n", "s.yaml")
>>> [(e.path, e.field, e.value) for e in pending(src, "site", 1)]
[(('catalog', 'switches', 'tor'), 'config', 'eos')]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twin.lang.diagnostics import Diagnostic, Severity
from twin.lang.loader import Source
from twin.lang.validator import diagnostic


@dataclass(frozen=True)
class Edit:
    """A field a file of an older version leaves out, and the value the older version took for it."""

    path: tuple  # the mapping that lacks the field
    field: str
    value: str
    why: str  # how the older version chose it (the warning's reason)


@dataclass(frozen=True)
class Change:
    language: str  # site, scenario or sweep
    version: int  # the version that introduced it
    date: str
    summary: str  # the changelog's entry (Markdown)
    missing: Callable[[Any], list[Edit]] | None = None  # what a file of an earlier version leaves out


def _switch_targets(data: Any) -> list[Edit]:
    """Site version 2 requires ``catalog.switches.<model>.config``; version 1 chose the target from the
    model's technology and vendor (InfiniBand: opensm; an Arista Ethernet switch: eos; any other: sonic)."""
    catalog = data.get("catalog") if isinstance(data, dict) else None
    switches = catalog.get("switches") if isinstance(catalog, dict) else None
    out = []
    for name, model in (switches.items() if isinstance(switches, dict) else ()):
        if not isinstance(model, dict) or "config" in model:
            continue
        if model.get("technology") == "infiniband":
            value, why = "opensm", "an InfiniBand switch"
        elif str(model.get("vendor", "")).lower().startswith("arista"):
            value, why = "eos", "an Arista Ethernet switch"
        else:
            value, why = "sonic", "an Ethernet switch not made by Arista"
        out.append(Edit(("catalog", "switches", name), "config", value, why))
    return out


CHANGES: tuple[Change, ...] = (
    Change("site", 1, "2026-11-20", "The site language as first published (halls, power, cooling, racks, the fabric, workloads, "
           "the catalog); a file without `version:` is read as version 1."),
    Change("site", 2, "2026-11-27", "A catalog switch names its configuration target: `catalog.switches.<model>.config` "
           "(`sonic`, `eos`, `opensm` or `none`) is required, and nothing is guessed from the vendor. Version 1 took "
           "`opensm` for an InfiniBand switch, `eos` for an Arista Ethernet switch and `sonic` for any other; a version-1 "
           "file without `config:` loads with a warning naming the target it took, and `twin upgrade` writes it in.",
           _switch_targets),
    Change("scenario", 1, "2026-11-20", "The scenario language as first published (routing, collectives, jobs, serving, "
           "cases, campaign, power); a file without `version:` is read as version 1."),
    Change("sweep", 1, "2026-11-20", "The sweep language as first published (a base site and scenario, axes, figures); a "
           "file without `version:` is read as version 1."),
)

CURRENT: dict[str, int] = {lang: max(c.version for c in CHANGES if c.language == lang) for lang in ("site", "scenario", "sweep")}
VERSION_FIELD = ("the version of the language the file is written for; a file without one is read as version 1 and "
                 "upgraded as it loads (with a warning for each value taken in its place); `twin upgrade FILE` rewrites it")


def version_of(src: Source, language: str) -> tuple[int | None, list[Diagnostic]]:
    """The version ``src`` states (1 when it states none), or None and a located error."""
    data = src.data if isinstance(src.data, dict) else {}
    if "version" not in data:
        return 1, []
    v, newest = data["version"], CURRENT[language]
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        return None, [diagnostic(src, Severity.ERROR, ("version",), f"version {v!r} is not a version of the {language} language",
                                 f"a whole number from 1 to {newest}")]
    if v > newest:
        return None, [diagnostic(src, Severity.ERROR, ("version",), f"written for version {v} of the {language} language; this "
                                 f"twin reads versions 1 to {newest}", "a newer twin, or a file of a version it knows")]
    return v, []


def pending(src: Source, language: str, version: int) -> list[Edit]:
    """What a file of ``version`` leaves out that the current version requires, change by change."""
    return [e for c in CHANGES if c.language == language and c.version > version and c.missing for e in c.missing(src.data)]


def warning(src: Source, language: str, version: int, e: Edit) -> Diagnostic:
    return diagnostic(src, Severity.WARNING, e.path + (e.field,), f"not given; took '{e.value}', as {language} language version "
                      f"{version} did for {e.why}; version {CURRENT[language]} requires it",
                      f"'{e.field}: {e.value}' in the file; twin upgrade {src.path} writes it")


def read(src: Source, language: str) -> list[Diagnostic]:
    """Check ``src``'s version and bring its data to the current version in place: errors for a bad or
    newer version, a warning per value taken for an older one. ``version`` itself is taken out of the
    data (the models below the language's root do not carry it)."""
    version, errors = version_of(src, language)
    if errors:
        return errors
    found = []
    for e in pending(src, language, version):
        found.append(warning(src, language, version, e))
        mapping = src.data
        for key in e.path:
            mapping = mapping[key]
        mapping[e.field] = e.value
        src.positions.setdefault(e.path + (e.field,), src.locate(e.path))
    if isinstance(src.data, dict):
        src.data.pop("version", None)
    return found

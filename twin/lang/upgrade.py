"""``twin upgrade``: rewrite a site, scenario or sweep written for an older language version as the current
version reads it, keeping the file as written (its comments, order and layout); only the values the older
version took in the file's place (:mod:`twin.lang.versions`) and ``version:`` are written in.

The file is read as untrusted input like every other: a file that does not parse, is not a mapping, is of
no language twin knows, or states a version this twin does not know is a located error, and nothing is
written. The rewritten text is parsed again before it replaces the file (atomically, with its mode), and
must then read as the current version with nothing left to take.

>>> text = "name: s\\ncatalog:\\n  switches:\\n    tor:\\n      vendor: Acme\\n      ports: 4\\n"
>>> print(upgraded_text(text, "s.yaml").text, end="")
version: 2
name: s
catalog:
  switches:
    tor:
      config: sonic
      vendor: Acme
      ports: 4
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from twin.lang.diagnostics import Diagnostic, Severity, SpecError
from twin.lang.loader import LoadError, Source, load_file, load_text
from twin.lang.validator import diagnostic
from twin.lang.versions import CURRENT, Edit, pending, version_of

# keys only one language has at its top level (tests/test_versions.py holds them to the models: a site's and a
# scenario's `power:`, a site's and a sweep's `placement:` are neither's mark)
MARKS = {
    "site": {"halls", "buildings", "hall_types", "rack_types", "fabric", "catalog", "campus", "storage", "workloads"},
    "scenario": {"routing", "collectives", "jobs", "serving", "cases", "campaign", "cluster", "nccl", "hash", "protocol_efficiency",
                 "step_overhead"},
    "sweep": {"site", "scenario", "axes", "figures", "job", "scheme"},
}


@dataclass
class Upgrade:
    language: str
    version: int  # as the file was written
    text: str  # the file as the current version reads it (the same text when nothing changes)
    edits: list[Edit] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.version != CURRENT[self.language]


def language_of(src: Source) -> str:
    """Which language the document is written in, from the keys only one language has; a located SpecError
    when it is not a mapping or its keys say no one language."""
    if not isinstance(src.data, dict):
        raise SpecError([diagnostic(src, Severity.ERROR, (), "not a twin site, scenario or sweep: the document is not a mapping",
                                    "a mapping of fields (name:, ...)")])
    keys = set(src.data)
    score = {lang: len(keys & marks) for lang, marks in MARKS.items()}
    if isinstance(src.data.get("site"), dict):  # a sweep names its site file; only a site is never nested there
        score["sweep"] = 0
    best = max(score.values())
    if best == 0 and "power" in keys:  # the power twin's scenario: a site's power: never stands without halls and a fabric
        return "scenario"
    found = [lang for lang, n in score.items() if n == best]
    if best == 0 or len(found) > 1:
        raise SpecError([diagnostic(src, Severity.ERROR, (), "not a twin site, scenario or sweep"
                                    + (f": its fields fit the {' and the '.join(found)} languages alike" if best else ""),
                                    "a site (halls: or buildings:, fabric:), a scenario (routing:, jobs:, campaign:, power:) "
                                    "or a sweep (site:, axes:)")])
    return found[0]


def _lines_with_insert(lines: list[str], line: int, col: int, text: str) -> None:
    """Insert ``text`` (``key: value``) as a field of the mapping whose first key is at (line, col): a line of
    its own at that indentation in a block mapping, the first item after ``{`` in a flow one."""
    row = lines[line - 1]
    if row[col - 1:col] == "{":
        lines[line - 1] = row[:col] + text + (", " if row[col:].lstrip()[:1] != "}" else "") + row[col:]
    else:
        lines.insert(line - 1, " " * (col - 1) + text + "\n")


def upgraded_text(text: str, path: str = "<string>") -> Upgrade:
    """The text of a file of any version as the current version reads it; SpecError (located) when the file
    cannot be read as a twin language of a version this twin knows."""
    try:
        src = load_text(text, path)
    except LoadError as e:
        raise SpecError(e.diagnostics) from None
    return _upgrade(src)


def _upgrade(src: Source) -> Upgrade:
    language = language_of(src)
    version, errors = version_of(src, language)
    if errors:
        raise SpecError(errors)
    if version == CURRENT[language]:
        return Upgrade(language, version, src.text)
    edits = pending(src, language, version)
    lines = src.text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    # later lines first, so the earlier positions still hold; the version line last (at the top)
    for e in sorted(edits, key=lambda e: src.locate(e.path), reverse=True):
        _lines_with_insert(lines, *src.locate(e.path), f"{e.field}: {e.value}")
    if "version" in src.data:
        line, col = src.positions[("version",)]
        row = lines[line - 1]
        end = col - 1 + len(str(src.data["version"]))
        lines[line - 1] = row[:col - 1] + str(CURRENT[language]) + row[end:]
    else:
        _lines_with_insert(lines, *src.positions.get((), (1, 1)), f"version: {CURRENT[language]}")
    out = "".join(lines)
    check = load_text(out, src.path)  # parses, and reads as the current version with nothing left to take
    if language_of(check) != language or version_of(check, language)[0] != CURRENT[language] or pending(check, language, CURRENT[language]):
        raise SpecError([diagnostic(src, Severity.ERROR, (), f"could not rewrite it as {language} language version {CURRENT[language]}",
                                    "a file in block or flow style that twin reads")])
    return Upgrade(language, version, out, edits)


def upgrade_file(path: Path, write: bool = True) -> Upgrade:
    """Upgrade the file at ``path`` in place (``write``: False only says what would change). Nothing is
    written unless the whole file was read and rewritten."""
    try:
        src = load_file(path)
    except LoadError as e:
        raise SpecError(e.diagnostics) from None
    up = _upgrade(src)
    if up.changed and write:
        _replace(path, up.text)
    return up


def _replace(path: Path, text: str) -> None:
    """Write ``text`` over ``path`` atomically (a sibling temporary file renamed over it), keeping its mode."""
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".upgrade", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def describe(up: Upgrade, path: str) -> list[str]:
    """One line per change, for the terminal."""
    if not up.changed:
        return [f"{path}: {up.language} language version {up.version}, current: nothing to upgrade"]
    head = f"{path}: {up.language} language version {up.version} -> {CURRENT[up.language]}"
    return [head] + [f"  {'.'.join(map(str, e.path))}.{e.field}: {e.value} ({e.why}, as version {up.version} took it)" for e in up.edits]


def error_lines(e: SpecError) -> list[Diagnostic]:
    return [d for d in e.diagnostics if d.severity is Severity.ERROR] or list(e.diagnostics)

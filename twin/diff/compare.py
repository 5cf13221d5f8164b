"""``twin diff``: what a change to a spec does, as a review, before anything is written.

Each side is a spec (compiled in memory and emitted) or a built folder (its manifest, files and
``review.json``). The review compares:

- the review figures (:mod:`twin.analysis.review`): GPUs, switches per tier, optics and cable km, power per
  level and headroom, placement objective and gap, ECMP widths, cost, the default twin run; every
  figure that moved, old -> new with its delta;
- the configs: per switch role, how many changed, were added or removed, and one representative
  unified diff;
- the artifacts, by sha256: added, removed, changed with line counts, and the changed fields of
  ``design.json``.

``diff(spec, built)`` is the original form (a spec against the folder it would replace).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from twin.build import MANIFEST, render
from twin.twins.results import SCHEMA_VERSION

ROLES = ("rtsw", "ctsw", "atsw", "leaf", "spine", "super", "core")
DIFF_LINES = 60  # lines of a representative config diff


@dataclass
class Side:
    """One side of a diff: artifact hashes, a reader for an artifact's bytes, and the review figures."""

    label: str
    hashes: dict[str, str]
    read: Callable[[str], bytes]
    figures: list[dict] | None
    note: str = ""
    scenario: str | None = None  # file name of the scenario run with the build (manifest.json)


def spec_side(path: str | Path, scenario: str | Path | None = None) -> Side:
    """Compile and emit a spec in memory, as ``twin build [--scenario]`` would (raises SpecError /
    InfeasibleError)."""
    _design, files = render(path, scenario)
    hashes = {p: hashlib.sha256(b).hexdigest() for p, b in files.items() if p != MANIFEST}
    figs = json.loads(files["review.json"])["figures"] if "review.json" in files else None
    return Side(str(path), hashes, lambda p: files.get(p, b""), figs, scenario=Path(scenario).name if scenario else None)


def folder_side(folder: str | Path) -> Side:
    """A built folder as it is on disk (``FileNotFoundError`` without a manifest)."""
    folder = Path(folder)
    m = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    hashes = {a["path"]: a["sha256"] for a in m["artifacts"]}

    def read(p: str) -> bytes:
        try:
            return (folder / p).read_bytes()
        except OSError:
            return b""

    rj = folder / "review.json"
    doc = json.loads(rj.read_text(encoding="utf-8")) if rj.is_file() else {}
    figs = doc.get("figures") if isinstance(doc, dict) and doc.get("schema_version") == SCHEMA_VERSION else None
    note = "" if figs is not None else (f"{folder} has no review.json of schema version {SCHEMA_VERSION} (built by another twin version): "
                                        "its figures are not compared; rebuild it")
    return Side(str(folder), hashes, read, figs, note, m.get("scenario"))


def side(target: str | Path, scenario: str | Path | None = None) -> Side:
    t = Path(target)
    return folder_side(t) if t.is_dir() else spec_side(t, scenario)


@dataclass
class DiffResult:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: dict[str, tuple[int, int]] = field(default_factory=dict)  # path -> (+lines, -lines)
    design_fields: list[str] = field(default_factory=list)
    old: str = ""
    new: str = ""
    figures: list[dict] = field(default_factory=list)  # the figures that moved
    unchanged_figures: int = 0
    configs: dict[str, dict] = field(default_factory=dict)  # role -> {changed, added, removed, example, diff}
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def to_json(self) -> dict:
        return {
            "old": self.old,
            "new": self.new,
            "added": self.added,
            "removed": self.removed,
            "changed": {p: {"added_lines": a, "removed_lines": r} for p, (a, r) in self.changed.items()},
            "design_fields": self.design_fields,
            "figures": self.figures,
            "unchanged_figures": self.unchanged_figures,
            "configs": self.configs,
            "notes": self.notes,
        }


def diff(spec_path: str | Path, built: str | Path, scenario: str | Path | None = None) -> DiffResult:
    """What building ``spec_path`` (with ``scenario``) would change in the folder ``built``."""
    return compare(folder_side(built), spec_side(spec_path, scenario))


def compare(old: Side, new: Side) -> DiffResult:
    res = DiffResult(added=sorted(set(new.hashes) - set(old.hashes)), removed=sorted(set(old.hashes) - set(new.hashes)),
                     old=old.label, new=new.label, notes=[n for n in (old.note, new.note) if n])
    if old.scenario != new.scenario:
        res.notes.append(f"the sides ran different scenarios with the build ({old.scenario or 'none'} vs {new.scenario or 'none'}):"
                         " report and twin figures differ for that reason too (`--scenario` runs one with every spec side)")
    for p in sorted(set(new.hashes) & set(old.hashes)):
        if new.hashes[p] == old.hashes[p]:
            continue
        before, after = text(old.read(p)), text(new.read(p))
        plus = minus = 0
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                plus += 1
            elif line.startswith("-") and not line.startswith("---"):
                minus += 1
        res.changed[p] = (plus, minus)
        if p == "design.json":
            res.design_fields = changed_paths(json.loads(before or "{}"), json.loads(after or "{}"))
    if old.figures is not None and new.figures is not None:
        res.figures, res.unchanged_figures = moved_figures(old.figures, new.figures)
    res.configs = config_changes(res, old, new)
    return res


def text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def moved_figures(old: list[dict], new: list[dict]) -> tuple[list[dict], int]:
    """Figures whose value differs, in the new side's order (then figures only the old side has),
    each with ``old``, ``new``, ``delta`` and ``delta_pct`` (None where not numeric or from zero)."""
    before = {r["key"]: r for r in old}
    after = {r["key"]: r for r in new}
    keys = [r["key"] for r in new] + [r["key"] for r in old if r["key"] not in after]
    out, same = [], 0
    for k in keys:
        a, b = before.get(k), after.get(k)
        va, vb = (a or {}).get("value"), (b or {}).get("value")
        if same_value(va, vb):
            same += 1
            continue
        row = {key: (b or a)[key] for key in ("group", "key", "label", "unit")}
        row.update(old=va, new=vb, delta=None, delta_pct=None)
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)):
            row["delta"] = round(vb - va, 6)
            row["delta_pct"] = round(100 * (vb - va) / abs(va), 3) if va else None
        out.append(row)
    return out, same


def same_value(a, b) -> bool:
    """Equal values; numbers within a relative 1e-9 (written and read back through JSON).

    >>> same_value(0.1 + 0.2, 0.3), same_value(1, 2), same_value("optimal", "optimal")
    (True, False, True)
    """
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def config_role(path: str) -> str | None:
    """The switch role a config artifact belongs to, from its device name; None outside configs/.

    >>> config_role("configs/frr/dh1-z1-r001-rtsw/frr.conf"), config_role("configs/eos/leaf-0001.cfg")
    ('rtsw', 'leaf')
    >>> config_role("configs/opensm/opensm.conf"), config_role("report.md")
    ('opensm', None)
    """
    parts = PurePosixPath(path).parts
    if len(parts) < 3 or parts[0] != "configs":
        return None
    device = parts[2].split(".")[0] if len(parts) == 3 else parts[2]
    return next((t for t in device.split("-") if t in ROLES), parts[1])


def config_changes(res: DiffResult, old: Side, new: Side) -> dict[str, dict]:
    """Per role: configs changed, added and removed, and the first changed one's unified diff."""
    out: dict[str, dict] = {}
    for kind, paths in (("changed", list(res.changed)), ("added", res.added), ("removed", res.removed)):
        for p in paths:
            role = config_role(p)
            if role is None:
                continue
            r = out.setdefault(role, {"changed": 0, "added": 0, "removed": 0, "example": None, "diff": ""})
            r[kind] += 1
            if kind == "changed" and r["example"] is None:
                lines = list(difflib.unified_diff(text(old.read(p)).splitlines(), text(new.read(p)).splitlines(),
                                                  f"old/{p}", f"new/{p}", lineterm="", n=2))
                cut = len(lines) - DIFF_LINES
                r["example"] = p
                r["diff"] = "\n".join(lines[:DIFF_LINES] + ([f"... {cut} more lines"] if cut > 0 else []))
    return dict(sorted(out.items(), key=lambda kv: (ROLES.index(kv[0]) if kv[0] in ROLES else len(ROLES), kv[0])))


def changed_paths(a, b, prefix: str = "") -> list[str]:
    """Dotted paths of the leaves that differ between two JSON documents.

    >>> changed_paths({"a": {"b": 1, "c": [1, 2]}}, {"a": {"b": 1, "c": [1, 3]}, "d": 0})
    ['a.c[1]', 'd']
    """
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += changed_paths(a.get(k), b.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += changed_paths(x, y, f"{prefix}[{i}]")
        return out
    return [] if a == b else [prefix]

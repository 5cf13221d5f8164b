"""``twin diff``: what a change to a spec does, as a review, before anything is written.

Each side is a spec (compiled in memory and emitted) or a built folder (its manifest, files and
``review.json``). The review compares:

- the review figures (review.json, named in :mod:`twin.analysis.registry`): GPUs, switches per tier,
  optics and cable km, power per level and headroom, placement objective and gap, ECMP widths, cost, the
  default twin run; every figure that moved, old -> new with its delta, labelled as the registry does;
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
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from twin.analysis.registry import lookup
from twin.build import render
from twin.diff.fields import changed_paths, input_changes
from twin.diff.groups import building_names
from twin.folder import JSON_LIMIT, MANIFEST, FolderError, expect, inside, load_manifest, parse_json, printable, read_artifact
from twin.twins.results import SCHEMA_VERSION

ROLES = ("rtsw", "ctsw", "atsw", "leaf", "spine", "super", "core")
# review.json keys of folders built before the figure registry (issue 23): old key -> (name, factor to its unit)
RENAMED = {"switches.total": ("switches", 1), "power.it_kw": ("it_power_mw", 1e-3), "power.facility_kw": ("facility_power_mw", 1e-3),
           "power.network_kw": ("network_power_kw", 1), "cost.switch": ("capex_switches", 1), "cost.transceiver": ("capex_transceivers", 1),
           "cost.cable": ("capex_cables", 1), "cost.network": ("capex_network", 1), "campaign.ettr_p50": ("ettr_p50", 1e-2),
           "campaign.mtti_h": ("mtti_h", 1), "power.grid_peak_mw": ("grid_peak_mw", 1), "power.limits_failing": ("distribution_limits_failing", 1)}
DIFF_LINES = 60  # lines of a representative config diff
LINE_DIFF_LIMIT = JSON_LIMIT  # bytes: a changed artifact larger than this is named, its lines not counted


@dataclass
class Side:
    """One side of a diff: artifact hashes, a reader for an artifact's bytes, and the review figures."""

    label: str
    hashes: dict[str, str]
    read: Callable[[str], bytes]
    figures: list[dict] | None
    note: str = ""
    scenario: str | None = None  # file name of the scenario run with the build (manifest.json)
    sizes: dict[str, int] = field(default_factory=dict)  # artifact -> bytes
    risks: list[dict] | None = None  # review.json's verdicts (twin.analysis.verdicts), worst first


def spec_side(path: str | Path, scenario: str | Path | None = None, progress=None) -> Side:
    """Compile and emit a spec in memory, as ``twin build [--scenario]`` would (raises SpecError /
    InfeasibleError); ``progress`` hears each step's label."""
    _design, files = render(path, scenario, progress)
    hashes = {p: hashlib.sha256(b).hexdigest() for p, b in files.items() if p != MANIFEST}
    review = json.loads(files["review.json"]) if "review.json" in files else {}
    return Side(str(path), hashes, lambda p: files.get(p, b""), review.get("figures"), scenario=Path(scenario).name if scenario else None,
                sizes={p: len(b) for p, b in files.items()}, risks=review.get("risks"))


def folder_side(folder: str | Path) -> Side:
    """A built folder as it is on disk, read as untrusted input (FolderError: one located line).

    The manifest must be twin's with every path inside the folder; every artifact it lists must be a
    regular file of the recorded size (a file is read only through :func:`twin.folder.read_artifact`,
    which checks its sha256); review.json, when listed, must hold figures of the right types."""
    folder = Path(folder)
    m = load_manifest(folder)
    resolved: dict[str, Path] = {}
    for rel, a in m.artifacts.items():
        path = inside(folder, rel, "artifact", resolved)
        try:
            st = path.lstat()
        except FileNotFoundError:
            raise FolderError(f"{path}: listed in {MANIFEST} but missing (rebuild the folder)") from None
        except OSError as e:
            raise FolderError(f"{path}: cannot read ({e.strerror})") from None
        if not stat.S_ISREG(st.st_mode):
            raise FolderError(f"{path}: not a regular file (twin writes regular files only)")
        if st.st_size != a.size:
            raise FolderError(f"{path}: {st.st_size:,} bytes, {MANIFEST} records {a.size:,} (changed after the build; rebuild the folder)")
    hashes = {p: a.sha256 for p, a in m.artifacts.items()}

    def read(p: str) -> bytes:
        return read_artifact(folder, m, p) if p in m.artifacts else b""

    figs = risks = None
    note = (f"{folder} has no review.json of schema version {SCHEMA_VERSION} (built by another twin version): "
            "its figures are not compared; rebuild it")
    if "review.json" in m.artifacts:
        where = str(folder / "review.json")
        if m.artifacts["review.json"].size > JSON_LIMIT:
            raise FolderError(f"{where}: {m.artifacts['review.json'].size:,} bytes, more than the {JSON_LIMIT:,} bytes twin reads")
        doc = parse_json(read("review.json"), where)
        if isinstance(doc, dict) and doc.get("schema_version") == SCHEMA_VERSION:
            figs, note = [renamed(r) for r in figures_of(doc, where)], ""
            risks = risks_of(doc, where)
    return Side(str(folder), hashes, read, figs, note, m.scenario, {p: a.size for p, a in m.artifacts.items()}, risks)


FIGURE_TEXT = ("group", "key", "label", "unit")
FIGURE_MAX = 1e18  # a review figure's magnitude (the largest twin writes, a campus's capex in dollars, is ~1e10)


def figures_of(doc, where: str) -> list[dict]:
    """review.json's ``figures``, each checked: text group/key/label/unit, a value that is null, a
    number, a truth value or text."""
    expect(doc, dict, where, "a JSON object with figures")
    figs = expect(doc.get("figures"), list, f"{where}: figures", "a list")
    for i, f in enumerate(figs):
        at = f"{where}: figures[{i}]"
        expect(f, dict, at, "an object")
        for k in FIGURE_TEXT:
            expect(f.get(k), str, f"{at}.{k}", "text")
        v = f.get("value")
        if v is not None:
            expect(v, (bool, int, float, str), f"{at}.value", "a number, text, a truth value or null")
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not abs(v) < FIGURE_MAX:
                raise FolderError(f"{at}.value: {printable(repr(v), 40)} is out of range (expected a magnitude below {FIGURE_MAX:.0e})")
    return figs


RISK_TEXT = ("key", "check", "status", "severity", "value", "limit", "section", "where")


def risks_of(doc: dict, where: str) -> list[dict] | None:
    """review.json's ``risks`` (None in a folder built before the verdicts), each checked: text fields,
    a status of pass, warn or fail."""
    if "risks" not in doc:
        return None
    rs = expect(doc["risks"], list, f"{where}: risks", "a list")
    for i, r in enumerate(rs):
        at = f"{where}: risks[{i}]"
        expect(r, dict, at, "an object")
        for k in RISK_TEXT:
            expect(r.get(k), str, f"{at}.{k}", "text")
        if r["status"] not in ("pass", "warn", "fail"):
            raise FolderError(f"{at}.status: {printable(repr(r['status']), 40)} (expected pass, warn or fail)")
    return rs


def risk_changes(old: list[dict] | None, new: list[dict] | None) -> list[dict]:
    """The new side's verdicts, each with ``was``: its status on the old side (None: a check it did not make)."""
    before = {r["key"]: r["status"] for r in old or []}
    return [dict(r, was=before.get(r["key"])) for r in new or []]


def renamed(row: dict) -> dict:
    """A review.json row under today's name and unit (:data:`RENAMED`); other rows as they are.

    >>> renamed({"group": "power", "key": "power.it_kw", "label": "site IT power", "unit": "kW", "value": 192.6})["value"]
    0.1926
    """
    if row["key"] not in RENAMED:
        return row
    name, factor = RENAMED[row["key"]]
    value = row["value"] if factor == 1 or not isinstance(row["value"], (int, float)) else round(row["value"] * factor, 9)
    return dict(row, key=name, value=value)


def side(target: str | Path, scenario: str | Path | None = None, progress=None) -> Side:
    """One side of a diff; ``progress`` hears its steps, each labelled with the side (``NEW.yaml: compile: fabric``)."""
    t, say = Path(target), progress or (lambda _m: None)
    say(f"{t.name}: read the built folder" if t.is_dir() else f"{t.name}: compile")
    return folder_side(t) if t.is_dir() else spec_side(t, scenario, lambda m: say(f"{t.name}: {m}"))


@dataclass
class DiffResult:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)  # path -> (+lines, -lines); None: too large to count
    design_fields: list[str] = field(default_factory=list)
    old: str = ""
    new: str = ""
    figures: list[dict] = field(default_factory=list)  # the figures that moved
    unchanged_figures: int = 0
    configs: dict[str, dict] = field(default_factory=dict)  # role -> {changed, added, removed, example, diff}
    notes: list[str] = field(default_factory=list)
    risks: list[dict] = field(default_factory=list)  # the new side's verdicts with ``was`` (the old side's status)
    inputs: list[dict] = field(default_factory=list)  # what changed in the spec as validated: path, old, new
    racks: dict | None = None  # racks moved, added, removed on the floor (twin/diff/racks.py); None: the floor is the same
    buildings: list[str] = field(default_factory=list)  # the new side's buildings by name (a campus; groups the artifacts)

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
            "risks": self.risks,
            "inputs": self.inputs,
            "racks": self.racks,
        }


def diff(spec_path: str | Path, built: str | Path, scenario: str | Path | None = None) -> DiffResult:
    """What building ``spec_path`` (with ``scenario``) would change in the folder ``built``."""
    return compare(folder_side(built), spec_side(spec_path, scenario))


def compare(old: Side, new: Side, progress=None) -> DiffResult:
    say = progress or (lambda _m: None)
    say("compare the artifacts")
    res = DiffResult(added=sorted(set(new.hashes) - set(old.hashes)), removed=sorted(set(old.hashes) - set(new.hashes)),
                     old=old.label, new=new.label, notes=[n for n in (old.note, new.note) if n])
    if old.scenario != new.scenario:
        res.notes.append(f"the sides ran different scenarios with the build ({old.scenario or 'none'} vs {new.scenario or 'none'}):"
                         " report and twin figures differ for that reason too (`--scenario` runs one with every spec side)")
    both = sorted(set(new.hashes) & set(old.hashes))
    for k, p in enumerate(both):
        if k % 200 == 0 and k:  # a 24K-GPU site has thousands of files to line-diff: say how far it got
            say(f"compare the artifacts: {k:,} of {len(both):,} files")
        if new.hashes[p] == old.hashes[p]:
            continue
        if max(old.sizes.get(p, 0), new.sizes.get(p, 0)) > LINE_DIFF_LIMIT:
            res.changed[p] = (None, None)  # changed (by sha256); too large to count lines
            if p == "design.json":
                raise FolderError(f"{old.label if old.sizes.get(p, 0) > JSON_LIMIT else new.label}/design.json: more than the "
                                  f"{JSON_LIMIT:,} bytes twin reads (twin writes a few MB at most)")
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
            da, db = design_doc(old.read(p), old.label), design_doc(new.read(p), new.label)
            res.design_fields = [f for f in changed_paths(da, db) if not f.startswith(NOISE)]
            res.inputs = input_changes(da, db)
            res.buildings = building_names(db)
    if old.figures is not None and new.figures is not None:
        res.figures, res.unchanged_figures = moved_figures(old.figures, new.figures)
    if not res.buildings and "design.json" in new.hashes and new.sizes.get("design.json", 0) <= LINE_DIFF_LIMIT:
        res.buildings = building_names(design_doc(new.read("design.json"), new.label))
    say("compare the configs per role")
    res.configs = config_changes(res, old, new)
    res.risks = risk_changes(old.risks, new.risks)
    if "placement/floor.csv" in res.changed and res.changed["placement/floor.csv"] != (None, None):
        from twin.diff.racks import moved

        say("count the racks moved")
        res.racks = moved(old.read("placement/floor.csv"), new.read("placement/floor.csv"))
    return res


def design_doc(data: bytes, label: str) -> dict:
    where = f"{label}/design.json"
    return expect(parse_json(data, where), dict, where, "a JSON object") if data else {}


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
        row = describe(k, b or a)
        row.update(old=va, new=vb, delta=None, delta_pct=None)
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)):
            row["delta"] = round(vb - va, 6)
            row["delta_pct"] = round(100 * (vb - va) / abs(va), 3) if va else None
        out.append(row)
    return out, same


def describe(key: str, row: dict) -> dict:
    """A moved figure's group, key, label and unit: the registry's (:mod:`twin.analysis.registry`), so a
    folder built by an older twin reads like today's; a family member keeps its row's label (it names
    the member), a figure the registry no longer has keeps its row's words."""
    f = lookup(key)
    if f is None:
        return {k: row[k] for k in ("group", "key", "label", "unit")}
    return {"group": f.group, "key": key, "label": row["label"] if f.family else f.label, "unit": f.unit}


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


NOISE = ("warnings", "spec_sha256")  # design.json fields that move with any edit (a warning's line, the file's hash)

"""``twin diff``: what a change to a spec changes downstream, before anything is written.

The spec is compiled in memory and its artifacts are compared, by sha256, with the manifest of an
existing build; changed text artifacts get a line count of what was added and removed, and
``design.json`` a list of the changed fields, which is usually what a reviewer wants to see first.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .build import MANIFEST, manifest
from .emit import emit_all
from .pipeline import compile_design


@dataclass
class DiffResult:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: dict[str, tuple[int, int]] = field(default_factory=dict)  # path -> (+lines, -lines)
    design_fields: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def to_json(self) -> dict:
        return {
            "added": self.added,
            "removed": self.removed,
            "changed": {p: {"added_lines": a, "removed_lines": r} for p, (a, r) in self.changed.items()},
            "design_fields": self.design_fields,
        }


def diff(spec_path: str | Path, built: str | Path) -> DiffResult:
    built = Path(built)
    old_manifest = json.loads((built / MANIFEST).read_text(encoding="utf-8"))
    old = {a["path"]: a["sha256"] for a in old_manifest["artifacts"]}
    design = compile_design(spec_path)
    files = emit_all(design)
    files[MANIFEST] = manifest(design, files)
    new = {p: hashlib.sha256(b).hexdigest() for p, b in files.items() if p != MANIFEST}
    res = DiffResult(added=sorted(set(new) - set(old)), removed=sorted(set(old) - set(new)))
    for p in sorted(set(new) & set(old)):
        if new[p] == old[p]:
            continue
        before = _text(built / p)
        after = files[p].decode("utf-8", "replace")
        plus = minus = 0
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                plus += 1
            elif line.startswith("-") and not line.startswith("---"):
                minus += 1
        res.changed[p] = (plus, minus)
        if p == "design.json":
            res.design_fields = _changed_paths(json.loads(before or "{}"), json.loads(after))
    return res


def _text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _changed_paths(a, b, prefix: str = "") -> list[str]:
    """Dotted paths of the leaves that differ between two JSON documents."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += _changed_paths(a.get(k), b.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += _changed_paths(x, y, f"{prefix}[{i}]")
        return out
    return [] if a == b else [prefix]

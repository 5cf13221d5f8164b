"""Artifact writers. Each emitter maps a Design to ``{relative path: bytes}``; the build writes them.

Emitters are pure (no file system access), so the build can hash, index and write everything
atomically, and a test can call one emitter alone. Later work registers its emitters in EMITTERS.
"""

from __future__ import annotations

from collections.abc import Callable

from ..design import Design
from . import bom, cabling, campus_report, configs, configs_ib, design_json, model_export, netbox, placement, report

Emitter = Callable[[Design], dict[str, bytes]]

EMITTERS: list[Emitter] = [design_json.emit, report.emit, bom.emit, cabling.emit, campus_report.trunks_csv, model_export.emit,
                           configs.emit, configs_ib.emit, placement.emit, netbox.emit]


def emit_all(design: Design, overrides: dict[Emitter, Emitter] | None = None) -> dict[str, bytes]:
    """Every artifact; ``overrides`` runs another emitter in an emitter's place (the report of a build
    that ran a scenario)."""
    files: dict[str, bytes] = {}
    for emitter in EMITTERS:
        for path, data in (overrides or {}).get(emitter, emitter)(design).items():
            if path in files:
                raise RuntimeError(f"two emitters write {path}")
            files[path] = data
    return files

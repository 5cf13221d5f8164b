"""Artifact writers. Each emitter maps a Design to ``{relative path: bytes}``; the build writes them.

Emitters are pure (no file system access), so the build can hash, index and write everything
atomically, and a test can call one emitter alone. Later work registers its emitters in EMITTERS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from twin.compiler.design import Design
from twin.emit import bom, cabling, campus_report, configs, configs_ib, design_json, model_export, netbox, placement, report
from twin.twins.results import Runs

Emitter = Callable[[Design], dict[str, bytes]]

EMITTERS: list[Emitter] = [design_json.emit, bom.emit, cabling.emit, campus_report.trunks_csv, model_export.emit,
                           configs.emit_frr, configs.emit_targets_first, configs.emit_targets_second, configs_ib.emit, placement.emit, netbox.emit]
EMITTER_LABELS = {design_json.emit: "design.json", bom.emit: "bill of materials", cabling.emit: "cabling",
                  campus_report.trunks_csv: "campus trunks", model_export.emit: "fabric model", configs.emit_frr: "switch configs: FRR",
                  configs.emit_targets_first: "switch configs: SONiC, EOS, first half of the switches",
                  configs.emit_targets_second: "switch configs: SONiC, EOS, second half of the switches",
                  configs_ib.emit: "OpenSM configs", placement.emit: "floor plan", netbox.emit: "NetBox set"}

# EMITTERS, largest first (CPU seconds on meta-24k-roce with their files written: each half of the SONiC/EOS
# configs ~0.8, FRR ~0.9, NetBox ~0.6, model export and cabling ~0.5 each, the rest < 0.05): the build's
# processes take them from a queue in this order, so the last ones to start are short and neither waits long
_LARGEST = [configs.emit_targets_first, configs.emit_targets_second, configs.emit_frr, netbox.emit, model_export.emit, cabling.emit]
BY_COST: list[Emitter] = [*_LARGEST, *(e for e in EMITTERS if e not in _LARGEST)]
# The same emitters for a build that binds on memory (a million GPUs: twin.build takes this order past 2 GiB of
# RSS): the three that hold the most at their peak (NetBox, the fabric model, the cable schedule) between the
# switch configs, so the two processes seldom render two of them at once (gigawatt-campus's 2-plane copy:
# 16.0 -> 14.2 GiB summed PSS at the peak; on meta-campus-100k this order costs ~5% of the wall clock)
_HEAVY_APART = [netbox.emit, configs.emit_targets_first, model_export.emit, configs.emit_targets_second, cabling.emit, configs.emit_frr]
BY_MEMORY: list[Emitter] = [*_HEAVY_APART, *(e for e in EMITTERS if e not in _HEAVY_APART)]


def emit_all(design: Design, runs: Runs | None = None, overrides: dict[Emitter, Emitter] | None = None,
             risks: list | None = None, progress: Callable[[str], None] | None = None) -> dict[str, bytes]:
    """Every artifact: the report (report.md, report.html, its pictures, review.json) from the design,
    the twins' results the build ran (``runs``) and the verdicts (``risks``, :mod:`twin.analysis.verdicts`),
    then every other emitter from the design alone;
    ``overrides`` runs another emitter in an emitter's place (a test reusing configs it rendered)."""
    from twin.compiler.study import floor_needed

    floor_needed(design.spec, "every artifact of a build at once (twin diff)")  # the report reads the floor
    files: dict[str, bytes] = {}
    for part in emit_each(design, runs, overrides, risks, progress):
        files.update(part)
    return files


def emit_each(design: Design, runs: Runs | None = None, overrides: dict[Emitter, Emitter] | None = None,
              risks: list | None = None, progress: Callable[[str], None] | None = None) -> Iterator[dict[str, bytes]]:
    """The artifacts of :func:`emit_all`, one emitter's at a time (the build writes and drops each
    before the next renders: a 24K-GPU site's ~230 MB never sit in memory at once)."""
    seen: set[str] = set()
    named = [("report", lambda d: report.emit(d, runs, risks)), *((EMITTER_LABELS[e], (overrides or {}).get(e, e)) for e in EMITTERS)]
    for label, emitter in named:
        if progress:
            progress(f"emit: {label}")
        part = emitter(design)
        for path in part:
            if path in seen:
                raise RuntimeError(f"two emitters write {path}")
            seen.add(path)
        yield part

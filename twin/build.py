"""``twin build``: compile a spec and write its artifacts atomically with a manifest.

Everything is rendered in memory first; then the files go to a temporary sibling folder that replaces
the previous output with two renames. A failed build therefore leaves the old output untouched, and a
reader never sees a half-written folder (except for the instant between the two renames).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from twin.compiler.design import Design
from twin.compiler.pipeline import compile_design
from twin.emit import emit_all
from twin.emit.design_json import dumps
from twin.twins.default import design_results
from twin.twins.results import Runs
from twin.version import __version__

MANIFEST = "manifest.json"


class OutputError(Exception):
    """The output folder cannot be written safely (e.g. it holds something that is not twin output)."""


@dataclass(frozen=True)
class BuildResult:
    design: Design
    out_dir: Path
    files: dict[str, str]  # relative path -> sha256


def manifest(design: Design, files: dict[str, bytes], scenario: str | Path | None = None) -> bytes:
    """manifest.json: tool, spec (and the scenario run with the build, if any) and every artifact's sha256."""
    spec = design.spec
    extra = {}
    if scenario is not None:
        extra = {"scenario": Path(scenario).name, "scenario_sha256": hashlib.sha256(Path(scenario).read_bytes()).hexdigest()}
    return dumps({
        "tool": "twin",
        "version": __version__,
        "site": spec.name,
        "spec": Path(spec.source_path).name,
        "spec_sha256": spec.source_sha256,
        **extra,
        "artifacts": [
            {"path": p, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            for p, data in sorted(files.items())
        ],
    })


def render(spec_path: str | Path, scenario: str | Path | None = None, progress: Callable[[str], None] | None = None) -> tuple[Design, dict[str, bytes]]:
    """The design and every artifact in memory, manifest included; with ``scenario`` (a scenario file)
    the twins it names run too and the report carries their sections (SpecError for a bad scenario,
    located in its file). ``twin build`` writes these; ``twin diff`` compares them."""
    loaded = None
    if scenario is not None:
        from twin.lang.scenario.models import load_scenario

        loaded = load_scenario(scenario)
    design = compile_design(spec_path, progress=progress)
    runs = run_twins(design, loaded and (str(scenario), loaded), progress)
    if progress:
        progress("emit")
    files = emit_all(design, runs)
    for rel in files:
        _check_relative(rel)
    files[MANIFEST] = manifest(design, files, scenario)
    return design, files


def run_twins(design: Design, scenario: tuple[str, tuple] | None = None, progress: Callable[[str], None] | None = None) -> Runs:
    """The twins a build runs, once: the default run (the report's twin section, its pictures and
    review.json) and, with ``scenario`` ((file, loaded scenario)), that scenario's twins."""
    if progress:
        progress("twin")
    default = design_results(design)
    data = None
    if scenario is not None:
        from twin.twins.run import simulate

        if progress:
            progress("simulate")
        data = (scenario[0], simulate(design, *scenario[1]).data)
    return Runs(default, data)


def build(spec_path: str | Path, out: str | Path | None = None, progress: Callable[[str], None] | None = None,
          scenario: str | Path | None = None) -> BuildResult:
    """Render (:func:`render`) and write atomically into ``out`` (default: generated/<site>)."""
    design, files = render(spec_path, scenario, progress)
    out_dir = Path(out) if out is not None else Path("generated") / design.name
    if progress:
        progress("write")
    write_atomically(out_dir, files)
    return BuildResult(design, out_dir, {p: hashlib.sha256(b).hexdigest() for p, b in sorted(files.items())})


def _check_relative(rel: str) -> None:
    """Artifact names derive from user-chosen names: they must stay inside the output folder."""
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts or "\\" in rel or "\x00" in rel:
        raise OutputError(f"refusing to write artifact outside the output folder: {rel!r}")


def write_atomically(out_dir: Path, files: dict[str, bytes]) -> None:
    out_dir = out_dir.resolve() if out_dir.exists() else out_dir.absolute()
    if out_dir.exists():
        if not out_dir.is_dir() or (any(out_dir.iterdir()) and not (out_dir / MANIFEST).is_file()):
            raise OutputError(f"{out_dir} exists and is not a twin output folder (no {MANIFEST}); not replacing it")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        for rel, data in sorted(files.items()):
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        os.chmod(tmp, 0o755)
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
            os.rmdir(old)
            os.rename(out_dir, old)
            os.rename(tmp, out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise

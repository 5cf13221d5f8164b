"""``twin build``: compile a spec and write its artifacts atomically with a manifest.

Each emitter's files go to a temporary sibling folder as soon as they are rendered (a 24K-GPU site's
~230 MB are never in memory at once); the folder replaces the previous output with two renames once
every file and the manifest are written. A failed build therefore leaves the old output untouched, and
a reader never sees a half-written folder (except for the instant between the two renames).
``render`` gives the same files in memory (``twin diff``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from twin.compiler.design import Design
from twin.compiler.pipeline import compile_design
from twin.emit import emit_all, emit_each
from twin.jsonfmt import dumps as json_dumps
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
    return manifest_of(design, {p: (hashlib.sha256(data).hexdigest(), len(data)) for p, data in files.items()}, scenario)


def manifest_of(design: Design, digests: dict[str, tuple[str, int]], scenario: str | Path | None = None) -> bytes:
    """:func:`manifest` from each artifact's (sha256, bytes)."""
    spec = design.spec
    extra = {}
    if scenario is not None:
        extra = {"scenario": Path(scenario).name, "scenario_sha256": hashlib.sha256(Path(scenario).read_bytes()).hexdigest()}
    return json_dumps({
        "tool": "twin",
        "version": __version__,
        "site": spec.name,
        "spec": Path(spec.source_path).name,
        "spec_sha256": spec.source_sha256,
        **extra,
        "artifacts": [{"path": p, "sha256": sha, "bytes": size} for p, (sha, size) in sorted(digests.items())],
    }, ensure_ascii=False)


def render(spec_path: str | Path, scenario: str | Path | None = None, progress: Callable[[str], None] | None = None) -> tuple[Design, dict[str, bytes]]:
    """The design and every artifact in memory, manifest included; with ``scenario`` (a scenario file)
    the twins it names run too and the report carries their sections (SpecError for a bad scenario,
    located in its file). ``twin diff`` compares them; ``twin build`` writes them as they come (:func:`build`)."""
    design, runs = _compiled(spec_path, scenario, progress)
    if progress:
        progress("emit")
    files = emit_all(design, runs)
    for rel in files:
        _check_relative(rel)
    files[MANIFEST] = manifest(design, files, scenario)
    return design, files


def _compiled(spec_path, scenario, progress) -> tuple[Design, Runs]:
    loaded = None
    if scenario is not None:
        from twin.lang.scenario.models import load_scenario

        loaded = load_scenario(scenario)
    design = compile_design(spec_path, progress=progress)
    runs = run_twins(design, loaded and (str(scenario), loaded), progress)
    _release_free_memory()
    return design, runs


def _release_free_memory() -> None:
    """Hand the heap the twins freed back to the operating system (glibc keeps freed arenas mapped:
    ~150 MB after the 24K-GPU default run, which the emitters' own peak would sit on). Elsewhere a no-op."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


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
    """Compile, run the twins and write every artifact into ``out`` (default: generated/<site>): each
    emitter's files go to the staging folder as soon as they are rendered, and the folder replaces the
    previous output only once all of them and the manifest are written."""
    design, runs = _compiled(spec_path, scenario, progress)
    out_dir = Path(out) if out is not None else Path("generated") / design.name
    if progress:
        progress("emit")
    digests: dict[str, tuple[str, int]] = {}
    with _staging(out_dir) as tmp:
        for part in emit_each(design, runs):
            _write_into(tmp, part, digests)
        if progress:
            progress("write")
        _write_into(tmp, {MANIFEST: manifest_of(design, digests, scenario)}, digests)
    return BuildResult(design, out_dir, {p: sha for p, (sha, _size) in sorted(digests.items())})


def _check_relative(rel: str) -> None:
    """Artifact names derive from user-chosen names: they must stay inside the output folder."""
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts or "\\" in rel or "\x00" in rel:
        raise OutputError(f"refusing to write artifact outside the output folder: {rel!r}")


def write_atomically(out_dir: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` into ``out_dir``, replacing it only when all are written."""
    with _staging(out_dir) as tmp:
        _write_into(tmp, files, {})


def _write_into(tmp: Path, files: dict[str, bytes], digests: dict[str, tuple[str, int]]) -> None:
    """Write ``files`` under the staging folder ``tmp`` and record each one's (sha256, bytes)."""
    made: set[Path] = set()
    for rel, data in sorted(files.items()):
        _check_relative(rel)
        target = tmp / rel
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        target.write_bytes(data)
        digests[rel] = (hashlib.sha256(data).hexdigest(), len(data))


@contextmanager
def _staging(out_dir: Path) -> Iterator[Path]:
    """A temporary sibling of ``out_dir`` to write into; on success it replaces ``out_dir`` with two
    renames, on failure it is removed and ``out_dir`` is left as it was."""
    out_dir = out_dir.resolve() if out_dir.exists() else out_dir.absolute()
    if out_dir.exists():
        if not out_dir.is_dir() or (any(out_dir.iterdir()) and not (out_dir / MANIFEST).is_file()):
            raise OutputError(f"{out_dir} exists and is not a twin output folder (no {MANIFEST}); not replacing it")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        yield tmp
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

"""``twin build``: compile a spec and write its artifacts atomically with a manifest.

Each emitter's files go to a temporary sibling folder as soon as they are rendered (a 24K-GPU site's
~230 MB are never in memory at once; :func:`render` gives them all in memory for ``twin diff``); then
:mod:`twin.output` exchanges the folder with the previous output in one atomic step. A failed build leaves the
old output untouched, a reader never sees a half-written or missing folder, a folder twin did not
write is never replaced, and a second build of the same folder stops at once (exit 3).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from twin.analysis.verdicts import Verdict, verdicts
from twin.compiler.design import Design
from twin.compiler.pipeline import compile_design
from twin.emit import emit_all, emit_each
from twin.folder import MANIFEST, safe_relative
from twin.jsonfmt import dumps as json_dumps
from twin.output import OutputError, claimed, write_atomically, write_claimed_parts
from twin.twins.default import design_results
from twin.twins.results import Runs
from twin.version import __version__

__all__ = ["MANIFEST", "OutputError", "BuildResult", "Rendered", "build", "manifest", "render", "render_all", "run_twins", "write_atomically"]


@dataclass(frozen=True)
class BuildResult:
    design: Design
    out_dir: Path
    files: dict[str, str]  # relative path -> sha256
    risks: tuple[Verdict, ...] = ()  # every verdict, worst first (twin.analysis.verdicts)
    runs: Runs | None = None  # the twins the build ran


@dataclass(frozen=True)
class Rendered:
    design: Design
    files: dict[str, bytes]
    risks: tuple[Verdict, ...]
    runs: Runs


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
    """The design and every artifact in memory, manifest included (:func:`render_all` without the rest)."""
    r = render_all(spec_path, scenario, progress)
    return r.design, r.files


def render_all(spec_path: str | Path, scenario: str | Path | None = None, progress: Callable[[str], None] | None = None) -> Rendered:
    """The design, every artifact in memory (manifest included), the verdicts and the twins' runs; with
    ``scenario`` (a scenario file) the twins it names run too and the report carries their sections
    (SpecError for a bad scenario, located in its file). ``twin diff`` compares these; ``twin build``
    writes the same, emitter by emitter."""
    design, runs = _compiled(spec_path, scenario, progress)
    if progress:
        progress("verdicts")
    risks = tuple(verdicts(design, runs.scenario))
    files = emit_all(design, runs, risks=list(risks), progress=progress)
    for rel in files:
        _check_relative(rel)
    files[MANIFEST] = manifest(design, files, scenario)
    return Rendered(design, files, risks, runs)


def _compiled(spec_path, scenario, progress) -> tuple[Design, Runs]:
    loaded = None
    if scenario is not None:
        from twin.lang.scenario.models import load_scenario

        if progress:
            progress(f"read the scenario {Path(scenario).name}")
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


def _parts(design: Design, runs: Runs, scenario, digests: dict[str, tuple[str, int]], progress,
           risks: tuple[Verdict, ...] = ()) -> Iterator[dict[str, bytes]]:
    """Every emitter's files in turn, their names checked and digests recorded, then the manifest."""
    for part in emit_each(design, runs, risks=list(risks), progress=progress):
        for rel, data in part.items():
            _check_relative(rel)
            digests[rel] = (hashlib.sha256(data).hexdigest(), len(data))
        yield part
    if progress:
        progress("write")
    man = manifest_of(design, digests, scenario)
    digests[MANIFEST] = (hashlib.sha256(man).hexdigest(), len(man))
    yield {MANIFEST: man}


def run_twins(design: Design, scenario: tuple[str, tuple] | None = None, progress: Callable[[str], None] | None = None) -> Runs:
    """The twins a build runs, once: the default run (the report's twin section, its pictures and
    review.json) and, with ``scenario`` ((file, loaded scenario)), that scenario's twins."""
    if progress:
        progress("default twin")
    default = design_results(design, progress)
    data = sha = views = None
    if scenario is not None:
        from twin.twins.run import simulate

        name = Path(scenario[0]).name
        if progress:
            progress(f"scenario {name}")
        result = simulate(design, *scenario[1], progress=progress and (lambda m: progress(f"scenario {name}: {m}")))
        data, views = (scenario[0], result.data), result.power_views or None
        sha = hashlib.sha256(Path(scenario[0]).read_bytes()).hexdigest() if Path(scenario[0]).is_file() else None
        return Runs(default, data, sha, views, named_files(scenario[0], scenario[1][0]))
    return Runs(default, data, sha, views)


def named_files(scenario_file: str, scn) -> tuple[tuple[str, str], ...]:
    """(name, sha256) of the files a scenario names (the power twin's weather CSV), as the twin read them
    (relative to the scenario, inside its folder: the twin has refused any other before this runs)."""
    from twin.lang.files import inside

    csv = scn.power.weather.csv if scn.power is not None else None
    if not csv:
        return ()
    path = inside(csv, Path(scenario_file).parent)
    return ((csv, hashlib.sha256(path.read_bytes()).hexdigest()),)


def build(spec_path: str | Path, out: str | Path | None = None, progress: Callable[[str], None] | None = None,
          scenario: str | Path | None = None) -> BuildResult:
    """Render (:func:`render`) and write atomically into ``out`` (default: generated/<site>). With
    ``out`` given the folder is claimed first (locked, proved twin's), so a build that could not
    write stops before compiling; OutputError says why."""
    held = claimed(Path(out)) if out is not None else nullcontext(None)
    digests: dict[str, tuple[str, int]] = {}
    with held as out_dir:
        design, runs = _compiled(spec_path, scenario, progress)
        if progress:
            progress("verdicts")
        risks = tuple(verdicts(design, runs.scenario))
        parts = _parts(design, runs, scenario, digests, progress, risks)
        if out_dir is None:
            out_dir = Path("generated") / design.name
            with claimed(out_dir) as real:
                write_claimed_parts(real, parts)
        else:
            write_claimed_parts(out_dir, parts)
    return BuildResult(design, Path(out) if out is not None else out_dir, {p: sha for p, (sha, _n) in sorted(digests.items())}, risks, runs)


def _check_relative(rel: str) -> None:
    """Artifact names derive from user-chosen names: they must stay inside the output folder."""
    if safe_relative(rel) is None or rel == MANIFEST:
        raise OutputError(f"refusing to write artifact outside the output folder: {rel!r}")

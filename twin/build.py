"""``twin build``: compile a spec and write its artifacts atomically with a manifest.

Each emitter's files go to a temporary sibling folder as soon as they are rendered (a 24K-GPU site's
~230 MB are never in memory at once; :func:`render` gives them all in memory for ``twin diff``); then
:mod:`twin.output` exchanges the folder with the previous output in one atomic step. A failed build leaves the
old output untouched, a reader never sees a half-written or missing folder, a folder twin did not
write is never replaced, and a second build of the same folder stops at once (exit 3).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import twin.heap as heap
from twin.compiler.design import Design
from twin.compiler.pipeline import compile_design
from twin.folder import MANIFEST, safe_relative
from twin.forked import apart
from twin.jsonfmt import dumps as json_dumps
from twin.output import OutputError, adopt, claimed, handed_back, write_atomically, write_claimed_with, write_parts, write_stream
from twin.rebuild import old_manifest, spec_edited
from twin.version import __version__

if TYPE_CHECKING:  # the emitters, the verdicts and the twins load where they run (after the twins' fork)
    from twin.analysis.verdicts import Verdict
    from twin.twins.results import Runs

__all__ = ["MANIFEST", "OutputError", "BuildResult", "Rendered", "build", "manifest", "render", "render_all", "run_twins", "write_atomically"]


@dataclass(frozen=True)
class BuildResult:
    design: Design
    out_dir: Path
    files: dict[str, str]  # relative path -> sha256
    risks: tuple[Verdict, ...] = ()  # every verdict, worst first (twin.analysis.verdicts)
    runs: Runs | None = None  # the twins the build ran
    left: tuple[str, ...] = ()  # a warning line per leftover-like folder twin could not prove its own (twin.leftovers)


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
    from twin.analysis.verdicts_twins import verdicts
    from twin.emit import emit_all

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
    loaded = _scenario(scenario, progress)
    design = compile_design(spec_path, progress=progress)
    runs = run_twins(design, loaded, progress)
    heap.trim()
    return design, runs




def run_twins(design: Design, scenario: tuple[str, tuple] | None = None, progress: Callable[[str], None] | None = None) -> Runs:
    """The twins a build runs, once: the default run (the report's twin section, its pictures and
    review.json) and, with ``scenario`` ((file, loaded scenario)), that scenario's twins."""
    from twin.twins.default import design_results_or_why
    from twin.twins.results import Runs

    if progress:
        progress("default twin")
    default, why = design_results_or_why(design, progress)
    data = sha = views = None
    if scenario is not None:
        from twin.twins.run import simulate

        name = Path(scenario[0]).name
        if progress:
            progress(f"scenario {name}")
        result = simulate(design, *scenario[1], progress=progress and (lambda m: progress(f"scenario {name}: {m}")))
        data, views = (scenario[0], result.data), result.power_views or None
        sha = hashlib.sha256(Path(scenario[0]).read_bytes()).hexdigest() if Path(scenario[0]).is_file() else None
        return Runs(default, data, sha, views, named_files(scenario[0], scenario[1][0]), default_error=why)
    return Runs(default, data, sha, views, default_error=why)


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
    ``out`` given the folder is claimed first (locked; its names and sizes checked at once, its bytes
    hashed while the build compiles, :func:`twin.output.claimed`), so a build that could not write
    mostly stops before compiling; generated/<site> is claimed once placement has named the site.
    OutputError says why. The same files as :func:`render`, written by two processes at once
    (:func:`_emit_into`)."""
    digests: dict[str, tuple[str, int]] = {}
    done: dict[str, object] = {}
    folder: list[tuple[Path, dict]] = []  # the claimed output folder, the header of the manifest it holds
    left: list[str] = []
    with ExitStack() as held:

        def claim(at: Path) -> None:
            old = old_manifest(at)
            folder.append((held.enter_context(claimed(at, folders_ahead=spec_edited(old, spec_path), warn=left.append)), old))

        if out is not None:
            claim(Path(out))
        twins = _Twins(_scenario(scenario, progress))
        held.callback(twins.stop)

        def passed(name: str, design: Design) -> None:
            if not folder and name == "placement":  # the site's name is known: claim generated/<site> now,
                claim(Path("generated") / design.name)  # proved meanwhile
            twins.start_after(name, design)

        design = compile_design(spec_path, progress=progress, on_pass=passed)

        def fill(tmp: Path) -> None:
            done["runs"], done["risks"] = _emit_into(tmp, design, twins, scenario, digests, progress)

        # the rest allocates little that is cyclic, and a full collection would only traverse the
        # design, alive to the end (0.2 s at 24K GPUs, 0.8 s at 100K, once or twice)
        with heap.collector_paused():
            (at, old), = folder
            write_claimed_with(at, fill, expect_same=_same_inputs(old, design, scenario))
    return BuildResult(design, Path(out) if out is not None else Path("generated") / design.name,
                       {p: sha for p, (sha, _n) in sorted(digests.items())}, done["risks"], done["runs"], tuple(left))


def _same_inputs(old: dict, design: Design, scenario) -> bool:
    """The output being replaced (its manifest's header ``old``) says it was built by this twin from this
    spec (and scenario): its files are expected to come out the same (:mod:`twin.rebuild`; only a hint,
    every file is still compared)."""
    new = json.loads(manifest_of(design, {}, scenario))
    return old == {k: v for k, v in new.items() if k != "artifacts"}


class _Twins:
    """The build's twins (:func:`run_twins`), started in a forked child as soon as what they read is
    compiled: they read the placement, fabric, cabling, BOM and budget, never the addressing or the
    config intent, so those two passes compile beside them. Run in this process where the system
    cannot fork."""

    AFTER = "bom"  # the last pass the twins read

    def __init__(self, loaded):
        self.loaded, self.child = loaded, None

    def start_after(self, name: str, design: Design) -> None:
        if name == self.AFTER and hasattr(os, "fork"):
            self.child = apart(lambda: run_twins(design, self.loaded))

    def running(self) -> bool:
        """The child is still at work (False where the twins run in this process)."""
        return self.child is not None and not self.child.done()

    def result(self, design: Design, progress) -> Runs:
        """The twins' runs: the child's, waited for, or run here."""
        if self.child is None:
            runs = run_twins(design, self.loaded, progress)
            heap.trim()
            return runs
        if progress:
            progress("default twin" + (f" and scenario {Path(self.loaded[0]).name}" if self.loaded else ""))
        child, self.child = self.child, None
        return child.join()

    def stop(self) -> None:
        """Nothing of the child outlives a build that failed before it was waited for."""
        if self.child is not None:
            self.child.kill()
            self.child = None


def _scenario(scenario: str | Path | None, progress) -> tuple[str, tuple] | None:
    if scenario is None:
        return None
    from twin.lang.scenario.models import load_scenario

    if progress:
        progress(f"read the scenario {Path(scenario).name}")
    return str(scenario), load_scenario(scenario)


def _emit_into(folder: Path, design: Design, twins: _Twins, scenario, digests: dict[str, tuple[str, int]], progress) -> tuple[Runs, tuple[Verdict, ...]]:
    """Every artifact of ``design`` written under ``folder``, in two processes where the system can
    fork: a child renders and writes the emitters that read the design alone (configs, NetBox,
    cabling, model export, ...), and so does this process until the twins are done (:class:`_Twins`);
    then it runs the verdicts and the report, which read their results, and takes the design-only
    emitters nobody has started yet (one queue, largest first). Each file and digest is the one the serial
    :func:`render` makes; the child hands back its digests (or its exception) through a pipe."""
    if design.spec.site.fabric_only:  # a study of the fabric alone: its own artifacts, no floor, no verdicts
        return _emit_study(folder, design, twins, scenario, digests, progress)
    from twin.analysis.verdicts_twins import verdicts
    from twin.emit import BY_COST, BY_MEMORY
    from twin.emit.report import emit as report_emit

    queue = _queue(BY_MEMORY if heap.large() else BY_COST)
    child = apart(lambda: (_write_emitters(folder, _taken(queue), design, acyclic=True), handed_back(folder))) if hasattr(os, "fork") else None
    try:
        # while the twins run, this process computes the report's figures of the design alone, then
        # takes design-only emitters too, one at a time: no core waits for another
        if design.fabric is not None and twins.running():
            from twin.compiler.fabric.figures import compute

            compute(design.fabric, design.spec)  # memoised (twin.memo): the report and the verdicts read it
        # a third worker only where a core is free of the two children: on two cores it would share theirs
        # and add its emitters' memory to the twins' peak (a 2-plane copy of gigawatt-campus: 18.2 -> ... GiB)
        early = _write_emitters(folder, _taken(queue, progress, twins.running), design, acyclic=True) if _spare_core() else {}
        runs = twins.result(design, progress)
        if progress:
            progress("verdicts")
        risks = tuple(verdicts(design, runs.scenario))
        if progress:
            progress("emit: report")
        ours = _write_emitters(folder, [lambda d: report_emit(d, runs, list(risks))], design)
        mine = _write_emitters(folder, _taken(queue, progress), design, acyclic=True)  # what the child has not started
        if progress and child is not None:
            progress("emit: the other process's emitters")
        theirs, handed = child.join() if child is not None else ({}, None)
        adopt(folder, handed)  # what it linked from the old output (proved: not hashed again) and what waits
    except BaseException:
        if child is not None:
            child.kill()
        raise
    finally:
        os.close(queue)
    if progress:
        progress("write")
    _with_manifest(folder, design, digests, _union(early, ours, mine, theirs), scenario)
    return runs, risks


def _with_manifest(folder: Path, design: Design, digests: dict[str, tuple[str, int]], files: dict, scenario) -> None:
    """The artifacts' digests in order, then the manifest listing them, written last."""
    digests.update(sorted(files.items()))
    man = manifest_of(design, digests, scenario)
    digests[MANIFEST] = (hashlib.sha256(man).hexdigest(), len(man))
    write_parts(folder, [{MANIFEST: man}])


def _emit_study(folder: Path, design: Design, twins: _Twins, scenario, digests: dict[str, tuple[str, int]], progress) -> tuple[Runs, tuple]:
    """A fabric-only study's artifacts (twin.emit.study): those that need no floor, then study.md naming them."""
    from twin.emit import study
    files = _write_emitters(folder, [*study.EMITTERS, study.links_csv], design)
    runs = twins.result(design, progress)
    files.update(_write_emitters(folder, [lambda d: study.emit(d, runs, sorted(files))], design))
    _with_manifest(folder, design, digests, files, scenario)
    return runs, ()


def _spare_core() -> bool:
    """More cores are this process's to use than the build's two children (twins, emitters) keep busy."""
    return len(os.sched_getaffinity(0)) > 2 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) > 2


def _queue(order: list) -> int:
    """A pipe holding the indices in :data:`BY_COST` of the emitters of ``order`` as bytes, its write end
    closed: each read of one byte takes the next emitter, and none is taken twice, whichever process reads it."""
    from twin.emit import BY_COST

    r, w = os.pipe()
    os.write(w, bytes(BY_COST.index(e) for e in order))  # fewer than 256, far below a pipe's buffer
    os.close(w)
    return r


def _union(*parts: dict[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
    """The digests of several processes' or steps' files; a path two of them wrote is a bug."""
    out: dict[str, tuple[str, int]] = {}
    for part in parts:
        if both := sorted(set(out) & set(part)):
            raise RuntimeError(f"two emitters write {both[0]}")
        out.update(part)
    return out


def _taken(queue: int, progress=None, more: Callable[[], bool] = lambda: True):
    """The emitters this process takes from ``queue``, one at a time, until it is empty (or, asked
    before each, ``more()`` says stop)."""
    from twin.emit import BY_COST, EMITTER_LABELS

    while more() and (index := os.read(queue, 1)):
        emitter = BY_COST[index[0]]
        if progress:
            progress(f"emit: {EMITTER_LABELS[emitter]}")
        yield emitter


def _write_emitters(folder: Path, emitters, design: Design, *, acyclic: bool = False) -> dict[str, tuple[str, int]]:
    """Each emitter's files checked, hashed and written before the next renders (a 24K-GPU site's
    ~230 MB never sit in memory at once); their (sha256, bytes). ``acyclic``: the emitters build
    rows of tuples and strings, no reference cycles (the design-only ones), so the cyclic collector is
    paused while each renders: it would only rescan their ~1M young tuples (10-20% of their time); a
    cycle one did leave is collected once the collector resumes after it."""
    digests: dict[str, tuple[str, int]] = {}
    for emitter in emitters:
        stream = getattr(emitter, "stream", None)  # files too large to hold come as chunks (model_export)
        with heap.collector_paused() if acyclic else nullcontext():
            part, chunks = stream(design) if stream else (emitter(design), ())
            for rel, data in part.items():
                _claim(rel, digests)
                digests[rel] = (hashlib.sha256(data).hexdigest(), len(data))
            write_parts(folder, [part], digests)  # a file the output being replaced holds as is: linked, not written
            del part
            # (name, chunks) pairs, possibly lazy (netbox: a file's name is known once the previous file is
            # written), each checked before its first chunk is asked for
            for rel, it in chunks:
                _claim(rel, digests)
                digests[rel] = write_stream(folder, rel, it)
        if heap.large():  # what a large site's emitter freed, back to the system before the next grows
            heap.trim()  # (gigawatt-campus: 0.6 GiB less at the peak)
    return digests


def _claim(rel: str, digests: dict) -> None:
    _check_relative(rel)
    if rel in digests:
        raise RuntimeError(f"two emitters write {rel}")


def _check_relative(rel: str) -> None:
    """Artifact names derive from user-chosen names: they must stay inside the output folder."""
    if safe_relative(rel) is None or rel == MANIFEST:
        raise OutputError(f"refusing to write artifact outside the output folder: {rel!r}")

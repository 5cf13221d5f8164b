"""`twin build` in two processes (twin/build.py, twin/forked.py): the same files as one process, and a
failure in the forked child is the build's failure."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from twin.build import render
from twin.emit import BY_COST, EMITTERS
from twin.forked import apart
from twin.output import EXIT_WRITE, OutputError

ROOT = Path(__file__).resolve().parents[1]


def test_two_processes_write_what_one_renders(built):
    """The build (child and parent writing one folder) against render() (every emitter in this process):
    the same paths and bytes, manifest included."""
    out = built("lab-2zone")
    on_disk = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    _, files = render(ROOT / "sites" / "lab-2zone.yaml")
    assert len(files) > 50
    assert sorted(on_disk) == sorted(files)
    assert [p for p in files if on_disk[p] != files[p]] == []


@pytest.mark.parametrize("spare", [True, False])
def test_a_third_worker_or_none_writes_the_same_files(tmp_path, monkeypatch, spare):
    """With a core free of the two children the parent takes emitters while the twins run; on two cores it
    waits for them (twin/build.py `_spare_core`). Either way the folder is what render() gives."""
    import twin.build as b

    taken = []
    real = b._write_emitters

    def spy(folder, emitters, design, **kw):
        out = real(folder, emitters, design, **kw)
        taken.append(len(out))
        return out

    monkeypatch.setattr(b, "_spare_core", lambda: spare)
    monkeypatch.setattr(b, "_write_emitters", spy)
    out = tmp_path / "out"
    b.build(ROOT / "sites" / "lab-2zone.yaml", out)
    on_disk = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    _, files = render(ROOT / "sites" / "lab-2zone.yaml")
    assert sorted(on_disk) == sorted(files) and [p for p in files if on_disk[p] != files[p]] == []
    assert len(taken) == (3 if spare else 2)  # in this process: (what it took while the twins ran,) the report, the rest


def test_the_queue_holds_every_emitter_once():
    from twin.build import _queue
    from twin.emit import BY_MEMORY

    for order in (BY_COST, BY_MEMORY):
        assert sorted(map(id, order)) == sorted(map(id, EMITTERS)) and len(set(map(id, order))) == len(EMITTERS)
        q = _queue(order)
        try:
            assert [BY_COST[i] for i in os.read(q, 256)] == order  # the indices in BY_COST, in the order asked
        finally:
            os.close(q)


def test_child_result_and_exceptions_come_back():
    assert apart(lambda: {"a": (1, 2)}).join() == {"a": (1, 2)}
    with pytest.raises(ZeroDivisionError):
        apart(lambda: 1 / 0).join()
    with pytest.raises(OutputError) as e:  # its exit code survives the trip
        apart(lambda: (_ for _ in ()).throw(OutputError("disk full", EXIT_WRITE))).join()
    assert e.value.code == EXIT_WRITE and str(e.value) == "disk full"


def test_a_child_that_dies_is_an_error_not_a_hang():
    """A child ended by SIGKILL (the kernel's OOM killer: the 2-plane million-GPU campus's emitter once was)
    is the run running out of memory, which the CLI says in one line (tests/test_envelope.py); another
    death stays an error of its own."""
    def die(sig):
        return lambda: os.kill(os.getpid(), sig)

    with pytest.raises(MemoryError, match="signal 9: most likely out of memory"):
        apart(die(signal.SIGKILL)).join()
    with pytest.raises(RuntimeError, match="signal 15") as e:
        apart(die(signal.SIGTERM)).join()
    assert not isinstance(e.value, MemoryError)


def test_kill_reaps_the_child():
    import time

    child = apart(lambda: time.sleep(60))
    child.kill()
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)  # already reaped: no zombie left


def test_the_twins_run_beside_addressing_and_intent():
    """The build starts the twins in a child once the BOM is compiled (twin/build.py `_Twins`): what they
    read is all there, addressing and intent are not yet; the child's runs are the runs this process
    makes from the finished design, and a build that stops first leaves no child behind."""
    from twin.build import _Twins, run_twins
    from twin.compiler.pipeline import compile_design

    twins, seen = _Twins(None), {}

    def on_pass(name, design):
        seen[name] = design.addressing is None and design.intent is None
        twins.start_after(name, design)

    design = compile_design(ROOT / "sites" / "lab-2zone.yaml", on_pass=on_pass)
    assert seen == {"placement": True, "fabric": True, "cabling": True, "bom": True, "addressing": False, "intent": False}
    assert twins.child is not None and design.intent is not None
    here = run_twins(design)
    assert twins.result(design, None) == here and here.default["job"]["compute_s"] > 0 and here.default["schemes"]
    assert twins.child is None

    design = compile_design(ROOT / "sites" / "lab-2zone.yaml", on_pass=twins.start_after)
    pid = twins.child.pid
    twins.stop()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)

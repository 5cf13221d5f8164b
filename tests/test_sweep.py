"""twin sweep on a real dask.distributed LocalCluster of worker processes, with small lab variants.

What a wrong implementation gets wrong here: figures that depend on which worker ran a variant or in
which order variants finished (the results must be byte-identical with 1 and 2 workers); a cache that
recomputes what it has, or returns a result for a variant it never computed; a failed variant that
stops the sweep instead of becoming a row; overrides applied to the wrong field (capex and the step
time follow the axis values); bad input reported as a traceback instead of a located error.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from conftest import unwrap

from twin.lang.diagnostics import SpecError
from twin.sweep import engine
from twin.sweep.load import load_sweep
from twin.sweep.output import write

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = """scenario:
  name: lab-step
  routing:
    - {name: e-ecmp-16qp, scheme: e-ecmp, qps: 16}
  jobs:
    - {workload: lab-llama-8b, order: topology}
"""


def sweep_file(tmp: Path, axes: str, extra: str = "", name: str = "t") -> Path:
    """A sweep file beside a copy of the lab site (a sweep names files inside its own folder)."""
    site = tmp / "lab-2zone.yaml"
    if not site.exists():
        site.write_bytes((ROOT / "sites" / "lab-2zone.yaml").read_bytes())
    p = tmp / f"{name}.yaml"
    p.write_text(f"name: {name}\nsite: lab-2zone.yaml\nplacement: naive\n{SCENARIO}{extra}axes:\n{axes}")
    return p


AXES = """  - path: fabric.atsw.oversubscription
    values: ["1:1", "2:1"]
  - path: scenario.jobs[0].order
    values: [topology, naive]
  - path: fabric.rtsw.uplinks
    values: [16, 64]
"""
FIGS = ("figures: [gpus, capex, capex_servers, capex_network, capex_per_gpu, step_time_s, tokens_per_day, tokens_per_day_per_dollar,"
        " 'design:derived.rack.power', 'sim:cases[0].jobs[0].microbatches']\n")


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "twin", "sweep", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """8 lab variants (2 of them invalid: 64 RTSW uplinks + 16 NICs exceed 64 ports) on 2 and on 1 worker."""
    tmp = tmp_path_factory.mktemp("sweep")
    sw = load_sweep(sweep_file(tmp, AXES, FIGS))
    two = engine.run(sw, tmp / "w2", workers=2)
    one = engine.run(sw, tmp / "w1", workers=1)
    return sw, tmp, two, one, write(sw, two, tmp / "w2"), write(sw, one, tmp / "w1")


def test_workers_are_processes():
    """Two worker processes; the scheduler's HTTP server takes a free port, so a cluster already on
    Dask's default 8787 (another sweep, another session) neither clashes nor warns."""
    with socket.socket() as taken, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.suppress(OSError):  # taken already: all the better
            taken.bind(("127.0.0.1", 8787))
            taken.listen()
        client = engine.connect(None, 2)
        try:
            pids = set(client.run(os.getpid).values())
        finally:
            engine.close_client(client)
    assert len(pids) == 2 and os.getpid() not in pids
    assert [str(w.message) for w in caught if "8787" in str(w.message)] == []


@pytest.mark.slow
def test_results_are_identical_whatever_the_worker_count(swept):
    sw, tmp, two, one, f2, f1 = swept
    assert two.computed == one.computed == 8 and len(two.worker_peak_rss) == 2 and len(one.worker_peak_rss) == 1
    for name in ("results.csv", "results.parquet", "summary.md"):
        assert f2[name] == f1[name], name
        assert (tmp / "w2" / name).read_bytes() == f2[name]


@pytest.mark.slow
def test_rows_follow_the_axes(swept):
    """Servers cost 16 x $270,000 in every variant; capex and network follow the oversubscription; the
    job's tokens per day are its tokens per step over the step time (64 sequences of 8,192 tokens)."""
    import pyarrow.parquet as pq

    sw, tmp, *_ = swept
    t = pq.read_table(tmp / "w2" / "results.parquet").to_pylist()
    assert [r["variant"] for r in t] == list(range(1, 9))
    assert [r["fabric.atsw.oversubscription"] for r in t] == ["1:1"] * 4 + ["2:1"] * 4
    ok = [r for r in t if r["status"] == "ok"]
    bad = [r for r in t if r["status"] != "ok"]
    assert len(ok) == 4 and len(bad) == 4 and all(r["fabric.rtsw.uplinks"] == "64" for r in bad)
    for r in bad:  # located in the variant's own file, the row's folder
        assert r["status"] == "invalid" and r["error"].startswith(f"variants/{r['variant']:03d}/site.yaml:")
        assert "rtsw" in r["error"] and r["capex"] is None and r["step_time_s"] != r["step_time_s"]  # no figure: null in an integer column, NaN in a float one
    for r in ok:
        assert r["capex_servers"] == 16 * 270_000
        assert r["gpus"] == 128 and r["capex_per_gpu"] == pytest.approx(r["capex"] / 128)
        assert r["tokens_per_day"] == pytest.approx(64 * 8192 * 86400 / r["step_time_s"], rel=1e-12)
        assert r["tokens_per_day_per_dollar"] == pytest.approx(r["tokens_per_day"] / r["capex"], rel=1e-12)
        assert r["design:derived.rack.power"] == 2 * 10_200 + 1_500 + 300  # design.json: 2 servers, an RTSW, 300 W other
        assert r["sim:cases[0].jobs[0].microbatches"] == 64 / 8  # global batch / DP
    by = {(r["fabric.atsw.oversubscription"], r["scenario.jobs[0].order"]): r for r in ok}
    # 1:1 gives each CTSW 16 ATSW uplinks instead of 8: more switch ports cabled, a dearer network
    assert by[("1:1", "topology")]["capex_network"] > by[("2:1", "topology")]["capex_network"]
    assert by[("1:1", "topology")]["capex_network"] == by[("1:1", "naive")]["capex_network"]  # a scenario path: same build
    assert by[("2:1", "naive")]["step_time_s"] != by[("2:1", "topology")]["step_time_s"]


@pytest.mark.slow
def test_rerun_computes_only_new_variants(swept, tmp_path):
    sw, tmp, *_ = swept
    again = engine.run(sw, tmp / "w2", workers=1)
    assert (again.computed, again.cached) == (0, 8)
    more = load_sweep(sweep_file(tmp, AXES.replace('["1:1", "2:1"]', '["1:1", "2:1", "4:1"]'), FIGS))
    oc = engine.run(more, tmp / "w2", workers=1)
    assert (oc.computed, oc.cached) == (4, 8)
    assert [v.hash for v in oc.variants[:4]] == [v.hash for v in again.variants[:4]]


@pytest.mark.parametrize("axes, extra, where, words", [
    # line 11 is the first axis: name, site, placement, the 6-line scenario and "axes:" come first
    ("  - path: fabric.atsw.oversubscriptoin\n    values: [2]\n", "", ":11:11", "did you mean 'oversubscription'"),
    ("  - path: rack_types.gt-rak.servers\n    values: [2]\n", "", ":11:11", "has no entry 'gt-rak'"),
    ("  - path: rack_types.gt-rack.gpu_power_cap\n    values: [500 W, 500 m]\n", "", ":12:21", "is a length, expected a power"),
    ("  - path: power.energy_price\n    values: [25 EUR/kWh]\n", "", ":12:14", "USD only"),
    ("  - path: halls[3].rows\n    values: [2]\n", "", ":11:11", "has no item [3]"),
    ("  - path: fabric.zones\n    values: [2]\n", "figures: [tokens_per_dayy]\n", ":10:11: figures[0]", "did you mean 'tokens_per_day'"),
])
def test_bad_input_is_located_exit_2(tmp_path, axes, extra, where, words):
    p = sweep_file(tmp_path, axes, extra)
    with pytest.raises(SpecError) as e:
        load_sweep(p)
    text = "\n".join(d.format() for d in e.value.diagnostics)
    assert words in text and (where in text), text
    r = run_cli(str(p), "-o", str(tmp_path / "out"))
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr


def test_unreachable_scheduler_exit_2(tmp_path):
    p = sweep_file(tmp_path, "  - path: fabric.atsw.oversubscription\n    values: [2]\n")
    r = run_cli(str(p), "-o", str(tmp_path / "out"), "--scheduler", "tcp://127.0.0.1:9", "--insecure", "--connect-timeout", "2")
    assert r.returncode == 2 and "cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'" in r.stderr and "Traceback" not in r.stderr


# `python -m twin` with SIGINT raising KeyboardInterrupt, as a terminal's Ctrl-C finds it. A process started with SIGINT ignored (a background
# job of a non-interactive shell: `bash .ci/run &`, nohup and CI runners do this) passes the ignore on
# to its children, and Python then installs no KeyboardInterrupt handler: the sweep would never see
# the SIGINT and finish with 0.
CTRL_C_TWIN = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
               "runpy.run_module('twin', run_name='__main__', alter_sys=True)")


@pytest.mark.slow
def test_interrupted_sweep_keeps_finished_results(tmp_path):
    """SIGINT after the first result: exit 130, results written with the rest pending, a rerun computes the rest."""
    axes = "  - path: fabric.atsw.oversubscription\n    values: [1, 2, 4]\n  - path: scenario.jobs[0].seed\n    range: {from: 1, to: 8, step: 1}\n"
    p = sweep_file(tmp_path, axes, "figures: [capex, step_time_s]\n")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", CTRL_C_TWIN, "sweep", str(p), "-o", str(out), "--workers", "1", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    # wait for a state (the first finished variant in the cache), however long a loaded machine takes;
    # the timeout only stops a hung run
    while not list((out / "cache").glob("*.json")):
        if proc.poll() is not None:
            pytest.fail(f"the sweep ended (exit {proc.returncode}) before any result was cached:\n{proc.stderr.read()}")
        if time.monotonic() > t0 + 900:
            proc.kill()
            pytest.fail("no variant finished within 900 s")
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 130, stderr
    first = unwrap(stdout)
    done = sum(r["status"] != "pending" for r in first["rows"])
    assert first["status"] == "interrupted" and 1 <= done < 24
    assert len(list((out / "cache").glob("*.json"))) == done
    r = run_cli(str(p), "-o", str(out), "--workers", "1", "--json")
    second = unwrap(r.stdout)
    assert r.returncode == 0 and (second["computed"], second["cached"]) == (24 - done, done)
    assert all(row["status"] == "ok" for row in second["rows"])


def test_help_lists_every_named_figure():
    from typer.testing import CliRunner

    from twin.analysis.figures import FIGURES
    from twin.cli.app import app

    text = " ".join(CliRunner().invoke(app, ["sweep", "--help"], terminal_width=200).output.split())
    assert [f for f in FIGURES if f not in text] == []

"""`twin calibrate --nccl-tests`: nccl-tests output (all_reduce_perf's table, [nccl-tests]) as a calibration input,
so a site's collective-model constants come from a kernel-level measurement of its own fabric.

Known answer: a table the network twin itself produces under a known protocol efficiency (0.85) and step
overhead (5 us), printed in all_reduce_perf's format (out-of-place and in-place columns, rank lines,
summary), is a closed-loop answer: parsing it and fitting from the model's defaults must recover both
constants and leave no residual. busbw = algbw x 2 (n - 1) / n ([nccl-tests] PERFORMANCE.md) names the op.
"""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from twin.cli.app import app
from twin.compiler.pipeline import compile_design
from twin.lang.diagnostics import SpecError
from twin.twins.net import nccl_tests, routing, topology
from twin.twins.net.nccl import Library

SIZES = [8 * 4**k for k in range(16)]  # 8 B - 8 GiB, as all_reduce_perf -b 8 -e 8G -f 4
HEADER = ("#                                                              out-of-place                       in-place          \n"
          "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
          "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n")


def output(times_s, hosts=2, per_host=8, factor=None, redop="sum") -> str:
    n = hosts * per_host
    factor = factor or 2 * (n - 1) / n
    out = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 "
           "graph: 0", "#", "# Using devices"]
    out += [f"#  Rank {r:2d} Group  0 Pid {4000 + r:6d} on node-{r // per_host} device {r % per_host:2d} [0000:04:00] NVIDIA H100 80GB HBM3"
            for r in range(n)]
    out += ["#", HEADER.rstrip("\n")]
    for s, t in zip(SIZES, times_s):
        alg = s / t / 1e9
        cells = f"{t * 1e6:7.1f}  {alg:6.2f}  {alg * factor:6.2f}      0"
        out.append(f"{s:12d}  {s // 4:12d}     float  {redop:>6}      -1  {cells}  {cells}")
    return "\n".join(out + ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 70.742 ", ""])


@pytest.fixture(scope="module")
def ib(root):
    """The lab InfiniBand fat tree, its fabric, the scheme its routing engine states and the default library."""
    d = compile_design(root / "sites/lab-ib.yaml", placement_method="naive")
    return d, topology.from_design(d), routing.site_scheme(d.spec.fabric), Library(nic_latency=d.spec.chassis.nic_latency)


def measured(ib, eta: float, overhead: float) -> str:
    d, net, scheme, lib = ib
    table = nccl_tests.Table("allreduce", 16, 2, 8, tuple(nccl_tests.Row(0, s, 1.0, 0.0, 0.0) for s in SIZES))
    ranks = nccl_tests.place(net, table, "t")
    return output(nccl_tests.predict(net, table, ranks, scheme, dataclasses.replace(lib, eta=eta, step_overhead=overhead)))


def test_the_fit_recovers_the_constants_of_a_known_table(ib):
    d, net, scheme, lib = ib
    table = nccl_tests.parse(measured(ib, 0.85, 5e-6), "ar.txt")
    assert (table.op, table.ranks, table.hosts, table.per_host, len(table.rows)) == ("allreduce", 16, 2, 8, 16)
    assert table.rows[0].line == 24 and table.rows[-1].size == 8 * 4**15
    res = nccl_tests.fit(net, table, nccl_tests.place(net, table, "ar.txt"), scheme, lib)
    assert res["constants"]["protocol_efficiency"] == pytest.approx(0.85, abs=2e-3)
    assert res["constants"]["step_overhead"] == pytest.approx(5e-6, abs=0.2e-6)
    assert res["rms_error"] < 2e-3 and "protocol_efficiency: 0.85" in res["scenario"]


def first_row(text: str, k: int, value: str | None) -> str:
    """The first data row (line 24) with its k-th field replaced (None: removed)."""
    lines = text.split("\n")
    f = lines[23].split()
    f[k:k + 1] = [] if value is None else [value]
    lines[23] = "  ".join(f)
    return "\n".join(lines)


@pytest.mark.parametrize("edit, line, col, words", [
    (lambda t: first_row(t, 5, "-3.5"), 24, 23, "time '-3.5' is not a positive number"),
    (lambda t: first_row(t, 7, "nan"), 24, None, "busbw 'nan' is not a non-negative number"),
    (lambda t: first_row(first_row(t, 4, None), 4, None), 24, 1, "fields, the header names 13"),
    (lambda t: first_row(t, 0, "9" * 20), 24, 1, "beyond any GPU's memory"),
    (lambda t: t.replace("#  Rank", "# rank"), 1, 1, "no '#  Rank"),
    (lambda t: t.replace(HEADER.splitlines()[1], "#", 1), 24, 1, "a data row before the column header"),
    (lambda t: t.replace("on node-1 device  7", "on node-2 device  7", 1), 1, 1, "different numbers of GPUs"),
    (lambda t: t.replace("#  Rank 15", "#  Rank 14", 1), 19, 9, "rank 14 appears twice"),
    (lambda t: "\n".join(x for x in t.split("\n") if not x[:1].isspace() or x.split()[0] == "8"), 24, 1, "one size (8 B) to fit two"),
])
def test_hostile_nccl_tests_output_is_a_located_error(ib, edit, line, col, words):
    text = edit(measured(ib, 0.9, 0.0))
    with pytest.raises(SpecError) as e:
        nccl_tests.parse(text, "ar.txt")
    d = e.value.diagnostics[0]
    assert d.file == "ar.txt" and (line is None or d.line == line) and (col is None or d.col == col) and words in d.message, d.format()


def test_the_table_names_its_operation_and_must_cross_servers(ib):
    d, net, _, _ = ib
    times = [1e-4 * (1 + s / 1e8) for s in SIZES]
    assert nccl_tests.parse(output(times, factor=15 / 16, redop="none")).op == "allgather"
    assert nccl_tests.parse(output(times, factor=15 / 16)).op == "reducescatter"
    with pytest.raises(SpecError, match="not all_reduce_perf"):
        nccl_tests.parse(output(times, factor=1.0))
    one = nccl_tests.parse(output(times, hosts=1))
    with pytest.raises(SpecError, match="one host"):
        nccl_tests.place(net, one, "ar.txt")


def test_the_command_prints_the_fit_and_exits_2_on_hostile_output(root, ib, tmp_path):
    good, bad = tmp_path / "ar.txt", tmp_path / "bad.txt"
    good.write_text(measured(ib, 0.88, 2e-6))
    res = CliRunner().invoke(app, ["calibrate", str(root / "sites/lab-ib.yaml"), "--nccl-tests", str(good)])
    assert res.exit_code == 0, res.output
    assert "all_reduce_perf, 16 ranks on 2 servers" in res.output and "protocol_efficiency: 0.88" in res.output
    bad.write_text(first_row(good.read_text(), 5, "12x.5"))
    res = CliRunner().invoke(app, ["calibrate", str(root / "sites/lab-ib.yaml"), "--nccl-tests", str(bad)])
    assert res.exit_code == 2 and f"{bad}:24:23: time '12x.5' is not a positive number" in res.output
    res = CliRunner().invoke(app, ["calibrate", str(root / "sites/lab-ib.yaml")])
    assert res.exit_code == 2 and "nothing to calibrate on" in res.output

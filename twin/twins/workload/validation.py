"""The job twin's validation table: every published row the twin is held to, with its source, inputs,
prediction, error and the convention it is compared in. Anyone can rerun it:

    twin validate-jobs [--json]            # or: python -m twin.twins.workload.validation [--json]

The open validation set (the only end-to-end rows any constant may be set on):

- Llama 3 Table 4 ([llama3]): the three workloads of ``sites/meta-24k-roce.yaml`` on its compiled fabric,
  E-ECMP with 16 QPs (the site's hash fields and QPs); model FLOPs (6N + attention, BF16 MFU convention). The ``meta-production-2024``
  stack's ``kernel_share`` is set on the 8,192-GPU row; the other two rows are predictions.
- Megatron-LM SC'21 Table 1 ([megatron-sc21]): the ten GPT runs of ``sites/selene-a100.yaml`` on its
  compiled HDR fat tree (static routing, as the site's OpenSM engine, ftree, programs it); hardware FLOPs with
  recomputation (Eq. 3). The ``megatron-lm-2021`` stack's ``kernel_share`` is set so that the ten rows'
  errors average zero; the trend (44% -> 52% of peak) is the model's.
- nccl-tests ``all_reduce_perf`` on one DGX H100 ([dgxc-nccl]): time (8 B - 1 MiB) or bus bandwidth
  (16 MiB - 16 GiB), the fastest of NCCL's ring and NVLS as its tuner picks. The NVLS constants are set on
  the 128 MiB - 16 GiB rows (:mod:`twin.twins.net.nccl`). The 8 B and 1 KiB rows differ by the grid NCCL
  shrinks a small LL collective to (enqueue.cc: 1 KiB runs one channel of 128 threads, 1/64 of LL's rate).

- NVIDIA's Megatron-Bridge 25.11 H100 FP8 pre-training rows ([megatron-bridge-perf]) on
  ``sites/dgx-h100-pod.yaml``: the ``megatron-core-2025`` stack's ``kernel_share`` is set on the LLAMA3_8B row
  (TP1, FSDP: no TP exchange to overlap), which is in the open set.

Out of sample (reported, never calibrated on): the LLAMA3_70B (TP4, TP exchanges overlapped with the GEMMs)
and LLAMA3.1_405B rows of the same table.

``--fit`` reruns the calibrations and prints the constants they give (the catalog holds them); ``--holdout``
calibrates each series on its smallest run alone and prints the error on the rest (:func:`holdout`).
Designs compile with the naive placement (cable lengths change latencies by microseconds, not the rows).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from twin.twins.workload import validation_rows

GIB = 2**30
MIB = 2**20


# The job twin's stated error: the mean absolute error of the open validation set in `twin validate-jobs`
# (tests/test_job_validation.py holds it to the table within 0.1 percentage point). A sweep names a winner on a
# job figure only when it leads by more than this (twin/sweep/output.py).
STATED_ERROR = 0.023

@dataclass(frozen=True)
class Group:
    name: str
    site: str
    source: str
    convention: str
    stack: str
    calibration: str  # how the stack's kernel_share is set from this group: "mean" of all rows, "row" (calibration_row)
    calibration_row: str = ""  # the row the stack is set on ("row")
    open_rows: tuple[str, ...] | None = None  # the rows in the open set (None: every row); the rest are out of sample
    variants: tuple = ()  # rows stated as variants of the site's workloads (validation_rows); none: the site's own rows
    constant: str = "kernel_share"  # the stack constant the group sets (zero3_host: the stack's kernel_share is another's)

    @property
    def open_set(self) -> bool:
        return self.open_rows is None

    def is_open(self, workload: str) -> bool:
        return self.open_rows is None or workload in self.open_rows


GROUPS = (
    Group("llama3-table4", "meta-24k-roce", "[llama3] Table 4", "model FLOPs per GPU (BF16 MFU convention)",
          "meta-production-2024", "row", "llama3-405b-8k"),
    Group("megatron-sc21-table1", "selene-a100", "[megatron-sc21] Table 1", "hardware FLOPs with recomputation (Eq. 3)",
          "megatron-lm-2021", "mean"),
    Group("nemo-h100", "dgx-h100-pod", "[megatron-bridge-perf]", "Megatron-LM model FLOPs (attention over the full square)",
          "megatron-core-2025", "row", "nemo-llama3-8b", ("nemo-llama3-8b",)),
    Group("megatron-sc21-table2", "selene-a100", "[megatron-sc21] Table 2", "hardware FLOPs with recomputation (Eq. 3)",
          "megatron-deepspeed-2021", "row", "zero3-175b-384", ("zero3-175b-384",), validation_rows.TABLE2, "zero3_host"),
)
FIT_CONSTANT = {g.stack: g.constant for g in GROUPS}  # the constant --fit sets on each stack
CALIBRATION_ROW = GROUPS[0].calibration_row  # the Llama 3 row the meta stack is set on
NCCL_ROWS = (  # size, time (us), busbw (GB/s) or None: [dgxc-nccl], out of place
    (8, 13.67, None), (1024, 16.9, None), (MIB, 27.4, None), (16 * MIB, 123.8, 237.0),
    (128 * MIB, 586.0, 400.5), (GIB, 4029.0, 466.0), (16 * GIB, 62648.0, 479.9),
)


@dataclass
class Row:
    group: str
    source: str
    inputs: str
    measured: float
    predicted: float
    unit: str
    convention: str
    open_set: bool = True
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "error": self.error}


def sites_dir() -> Path:
    here = Path(__file__).resolve().parents[3] / "sites"
    if not here.is_dir():
        raise FileNotFoundError(f"{here}: the example sites are not installed (validate-jobs runs from a source checkout)")
    return here


def _design(site: str):
    from twin.compiler.pipeline import compile_design

    return compile_design(sites_dir() / f"{site}.yaml", placement_method="naive")


def with_share(design, stack: str, share: float, constant: str = "kernel_share"):
    """The design with one stack's kernel_share (or another constant) replaced (a what-if for the fit)."""
    cat = design.spec.catalog
    stacks = {**cat.stacks, stack: cat.stacks[stack].model_copy(update={constant: share})}
    spec = dataclasses.replace(design.spec, catalog=cat.model_copy(update={"stacks": stacks}))
    return dataclasses.replace(design, spec=spec)


def _job_rows(g: Group, design, net, names: list[str] | None = None) -> list[Row]:
    from twin.lang.scenario.models import Case, Job
    from twin.twins.net import routing
    from twin.twins.net.nccl import Library
    from twin.twins.workload import jobs

    scheme = routing.site_scheme(design.spec.fabric)  # as the site states it: OpenSM's engine, or Ethernet's hash
    lib = Library(nic_latency=design.spec.chassis.nic_latency)
    if g.variants:
        design = validation_rows.design_with(design, g.variants)
    rows = []
    for w in design.spec.site.workloads:
        if w.measured is None or (names is not None and w.name not in names):
            continue
        j = jobs.simulate_job(design, net, Job(workload=w.name), [scheme], lib, Case(name="validation"), set(), None, ("jobs", 0))
        s = j["schemes"][0]
        pred = s["predicted_convention_tflops_per_gpu"]
        rec = w.recompute if isinstance(w.recompute, str) else ",".join(w.recompute)
        inputs = (f"{w.name}: {j['parallelism']} on {w.gpus:,} GPUs, seq {w.sequence_length:,}, batch {w.global_batch:,}, "
                  f"micro-batch {w.micro_batch}, v {j['virtual_stages']}, recompute {rec}, ZeRO {w.zero}, stack {j['stack']}")
        rows.append(Row(g.name, w.source or g.source, inputs, w.measured, pred, "TFLOPs/GPU", g.convention, g.is_open(w.name),
                        extra={"workload": w.name, "peak_share": pred / design.spec.chassis.gpu_peak_tflops,
                               "measured_peak_share": w.measured / design.spec.chassis.gpu_peak_tflops,
                               "step_s": s["step_s"], "memory_gb": j["memory"]["total_bytes"] / 1e9}))
    return sorted(rows, key=lambda r: int(m.group(1)) if (m := re.search(r"row (\d+)", r.source)) else 0)


def nccl_rows() -> list[Row]:
    """One DGX H100 (catalog ``dgx-h100``): NVLink at its catalog rate, NVLS where the chassis has it."""
    from twin.lang.catalog import builtin
    from twin.twins.net import collectives as coll
    from twin.twins.net import routing, synthetic, topology
    from twin.twins.net.nccl import Library

    ch = builtin().chassis["dgx-h100"]
    net = topology.compile_graph(synthetic.clos(1, 1, 1, ch.gpus, 1), {}, ch.nvlink_bandwidth)
    lib = Library(nic_latency=ch.nic_latency)
    ranks = np.arange(ch.gpus)
    scheme = routing.Scheme("nvlink", "spray", 1)
    timings = [coll.time_collective(net, "allreduce", a, ranks, scheme, lib=lib) for a in ("ring", "nvls") if a == "ring" or ch.nvls]
    rows = []
    for size, t_us, busbw in NCCL_ROWS:
        best = min(timings, key=lambda x: x.time(size))
        label = f"{size // GIB} GiB" if size >= GIB else f"{size // MIB} MiB" if size >= MIB else f"{size // 1024} KiB" if size >= 1024 else f"{size} B"
        inputs = f"all_reduce_perf {label}, 8 ranks in one DGX H100 ({best.algorithm}, {best.protocol(size)})"
        if busbw is None:
            rows.append(Row("nccl-dgx-h100", f"[dgxc-nccl] all_reduce_perf, {label}", inputs, t_us, best.time(size) * 1e6, "us",
                            "nccl-tests time (out of place)"))
        else:
            rows.append(Row("nccl-dgx-h100", f"[dgxc-nccl] all_reduce_perf, {label}", inputs, busbw, best.busbw(size) / 1e9, "GB/s",
                            "nccl-tests busbw (out of place)", extra={"ring_busbw": timings[0].busbw(size) / 1e9}))
    return rows


def run(progress=None) -> list[Row]:
    """Every row of the table (compiles the two sites; about a minute on two cores)."""
    from twin.twins.net import topology

    rows: list[Row] = []
    for g in GROUPS:
        if progress:
            progress(f"compiling {g.site}")
        d = _design(g.site)
        net = topology.from_design(d)
        if progress:
            progress(f"timing {g.source}")
        rows += _job_rows(g, d, net)
    rows += nccl_rows()
    return rows


def summary(rows: list[Row]) -> dict:
    """Mean and largest absolute error per group and over the open set; the two trends."""
    out: dict = {"groups": {}}
    for name in dict.fromkeys(r.group for r in rows):
        e = [abs(r.error) for r in rows if r.group == name]
        out["groups"][name] = {"rows": len(e), "mean_abs_error": float(np.mean(e)), "max_abs_error": float(np.max(e))}
    held = [r for r in rows if r.open_set]
    out["open_set"] = {"rows": len(held), "mean_abs_error": float(np.mean([abs(r.error) for r in held])),
                       "max_abs_error": float(max(abs(r.error) for r in held))}
    oos = [abs(r.error) for r in rows if not r.open_set]
    if oos:
        out["out_of_sample"] = {"rows": len(oos), "mean_abs_error": float(np.mean(oos)), "max_abs_error": float(np.max(oos))}
    meg = [r for r in rows if r.group == "megatron-sc21-table1"]
    if meg:
        out["megatron_peak_share"] = {"predicted": [meg[0].extra["peak_share"], meg[-1].extra["peak_share"]],
                                      "measured": [meg[0].extra["measured_peak_share"], meg[-1].extra["measured_peak_share"]]}
    llama = {r.extra["workload"]: r.predicted for r in rows if r.group == "llama3-table4"}
    if llama:
        out["llama3_order"] = [llama.get("llama3-405b-8k"), llama.get("llama3-405b-16k"), llama.get("llama3-405b-131k")]
    return out


def fit(progress=None) -> dict:
    """Each stack's constant from its group (module docstring): kernel_share, or for Megatron-DeepSpeed 2021, whose
    kernels are Megatron-LM 2021's, zero3_host; by secant steps on the constant."""
    from twin.twins.net import topology

    out = {}
    for g in GROUPS:
        d = _design(g.site)
        net = topology.from_design(d)
        names = [g.calibration_row] if g.calibration == "row" else None

        def err(share: float, g=g, d=d, net=net, names=names) -> float:
            rows = _job_rows(g, with_share(d, g.stack, share, g.constant), net, names)
            e = float(np.mean([r.error for r in rows]))
            if progress:
                progress(f"{g.stack}: {g.constant} {share:.6g} -> mean error {100 * e:+.2f}%")
            return e

        x0 = float(getattr(d.spec.catalog.stacks[g.stack], g.constant))
        e0 = err(x0)
        # kernel_share scales the rate; a host time per gather slows it: start the other way, from 1 ms if none
        x1 = x0 / (1 + e0) if g.constant == "kernel_share" else (x0 or 1e-3) * (1 + e0)
        for _ in range(6):
            e1 = err(x1)
            if abs(e1) < 2e-4 or e1 == e0:
                break
            x0, e0, x1 = x1, e1, x1 - e1 * (x1 - x0) / (e1 - e0)
        out[g.stack] = round(x1, 4) if g.constant == "kernel_share" else round(x1, 6)
    return out


def holdout(progress=None, groups: tuple[str, ...] | None = None) -> list[dict]:
    """``twin calibrate --holdout smallest`` on every published series of the table: the rows of one group under one
    stack, their measured rates restated as step times (the twin's step x predicted / measured), the stack's
    ``kernel_share`` fitted on the row with the fewest GPUs alone and the others predicted (the issue's measure of a
    calibration: the error on the rest of the series)."""
    from twin.lang.site.workload_models import DEFAULT_STACK
    from twin.twins.net import routing, topology
    from twin.twins.workload import calibrate

    out = []
    for g in GROUPS:
        if groups is not None and g.name not in groups:
            continue
        if progress:
            progress(f"calibrating {g.source} on its smallest run")
        d = _design(g.site)
        net = topology.from_design(d)
        rows = _job_rows(g, d, net)
        dv = validation_rows.design_with(d, g.variants) if g.variants else d
        by = {w.name: w for w in dv.spec.site.workloads}
        series: dict[str, list[Row]] = {}
        for r in rows:
            series.setdefault(by[r.extra["workload"]].stack or DEFAULT_STACK, []).append(r)
        for stack, rs in series.items():
            if len(rs) < 2:
                continue
            runs = [calibrate.Run(k + 2, r.extra["workload"], by[r.extra["workload"]].gpus, r.extra["step_s"] * r.predicted / r.measured, {})
                    for k, r in enumerate(rs)]
            res = calibrate.fit(dv, net, runs, stack, "held-out", ("kernel_share",), routing.site_scheme(d.spec.fabric),
                                file=g.source, holdout="smallest")
            out.append({"group": g.name, "source": g.source, "stack": stack, "kernel_share": res["constants"]["kernel_share"],
                        "open_set": all(r.open_set for r in rs), "runs": res["runs"], "held_out": res["held_out"]})
    return out


def holdout_table(series: list[dict]) -> str:
    lines = []
    for s in series:
        fitted = next(r for r in s["runs"] if r["fitted"])
        rest = ", ".join(f"{r['workload']} {100 * r['error']:+.1f}%" for r in s["runs"] if not r["fitted"])
        h = s["held_out"]
        lines.append(f"{s['source']} ({s['stack']}{'' if s['open_set'] else ', out of sample'}): fitted on {fitted['workload']} "
                     f"({fitted['gpus']:,} GPUs, kernel_share {s['kernel_share']}); held out {rest}; mean |error| "
                     f"{100 * h['mean_abs_error']:.1f}%, largest {100 * h['max_abs_error']:.1f}%")
    return "\n".join(lines + ["(error: the twin's step against the measured one, + slower)"])


def table(rows: list[Row]) -> str:
    head = f"{'source':<58} {'compared in':<16} {'measured':>10} {'twin':>10} {'error':>7}  inputs"
    lines = [head, "-" * len(head)]
    for r in rows:
        conv = {"TFLOPs/GPU": "TFLOPs/GPU", "us": "us", "GB/s": "busbw GB/s"}[r.unit]
        conv = ("Eq.3 " if "Eq. 3" in r.convention else "Megatron " if "Megatron-LM" in r.convention
                else "model " if "model" in r.convention else "") + conv
        flag = "" if r.open_set else " (out of sample)"
        lines.append(f"{r.source.split(';')[0][:58]:<58} {conv:<16} {r.measured:>10,.1f} {r.predicted:>10,.1f} {100 * r.error:>+6.1f}%  {r.inputs}{flag}"
                     + (f" [{r.note}]" if r.note else ""))
    s = summary(rows)
    lines.append("")
    for name, v in s["groups"].items():
        lines.append(f"{name}: {v['rows']} rows, mean |error| {100 * v['mean_abs_error']:.1f}%, largest {100 * v['max_abs_error']:.1f}%")
    o = s["open_set"]
    lines.append(f"open set: {o['rows']} rows, mean |error| {100 * o['mean_abs_error']:.1f}%, largest "
                 f"{100 * o['max_abs_error']:.1f}%")
    if "out_of_sample" in s:
        x = s["out_of_sample"]
        lines.append(f"out of sample (never calibrated on): {x['rows']} rows, mean |error| {100 * x['mean_abs_error']:.1f}%, "
                     f"largest {100 * x['max_abs_error']:.1f}%")
    if "megatron_peak_share" in s:
        p, m = s["megatron_peak_share"]["predicted"], s["megatron_peak_share"]["measured"]
        lines.append(f"Megatron-LM Table 1 share of peak, smallest -> largest model: twin {100 * p[0]:.0f}% -> {100 * p[1]:.0f}%, "
                     f"measured {100 * m[0]:.0f}% -> {100 * m[1]:.0f}%")
    if "llama3_order" in s:
        lines.append("Llama 3 Table 4 (8K GPUs, 16K GPUs, 16K GPUs at 131K tokens): twin " + " > ".join(f"{x:.0f}" for x in s["llama3_order"])
                     + ", measured 430 > 400 > 380")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m twin.twins.workload.validation", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the rows and the summary as JSON")
    ap.add_argument("--fit", action="store_true", help="rerun the stacks' calibration and print the constants")
    ap.add_argument("--holdout", action="store_true", help="calibrate each series on its smallest run and print the held-out error")
    a = ap.parse_args(argv)
    log = (lambda m: None) if a.json else (lambda m: print(f"  {m}", file=sys.stderr))
    try:
        if a.fit:
            res = fit(log)
            print(json.dumps(res, indent=1, sort_keys=True) if a.json else "\n".join(f"{k}: {FIT_CONSTANT[k]} {v}" for k, v in res.items()))
            return 0
        if a.holdout:
            series = holdout(log)
            print(json.dumps(series, indent=1, sort_keys=True) if a.json else holdout_table(series))
            return 0
        rows = run(log)
    except FileNotFoundError as e:
        print(str(e), file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps({"rows": [r.as_dict() for r in rows], "summary": summary(rows)}, indent=1, sort_keys=True))
    else:
        print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

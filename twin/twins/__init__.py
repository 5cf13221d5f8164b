"""The twin: flow-level simulation of collectives and training jobs on a compiled design.

>>> import twin, twin.twins
>>> d = twin.load("sites/lab-2zone.yaml")
>>> r = twin.twins.simulate(d, "scenarios/allreduce-sweep.yaml")
>>> ring = r.data["cases"][0]["collectives"][0]           # healthy fabric, ring AllReduce, 128 GPUs
>>> {s["scheme"]: round(s["busbw_GBps_at_max_size"]) for s in ring["schemes"]}  # bus bandwidth, GB/s
{'ecmp-1qp': 150, 'e-ecmp-16qp': 376, 'static': 376, 'spray': 376}

(One queue pair per GPU pair lets ECMP hash several ring flows onto one uplink; 16 QPs, static
routes or spraying spread them.)

Modules: topology (graph -> arcs and ECMP groups), hashing (RoCEv2 5-tuple, per-switch seeds),
routing (ecmp, e-ecmp, static, spray, te; channels x QPs flows, PXN), fluid (max-min, events),
collectives (nccl-tests algorithms as phases), nccl (channels, protocols, per-step latency), trees
(double binary tree), te (LP reference), compute (FLOPs and kernel roofline), jobs (TP/CP/PP/DP
step, StepProfile), serving (TTFT/TPOT), scenario (the YAML language), run (orchestration), report
(tables), plots (PNG), reliability (training campaigns: interruptions,
checkpoints, spares, ETTR), power (the site's draw over time), timeline (values the twins share).
"""

from __future__ import annotations

from pathlib import Path


def simulate(design, scenario, graph=None, progress=None):
    """Run ``scenario`` (a path, YAML text is not accepted, or a parsed Scenario) on ``design``."""
    from twin.lang.scenario.models import Scenario, load_scenario
    from twin.twins.run import simulate as _run

    src = None
    if not isinstance(scenario, Scenario):
        scenario, src = load_scenario(Path(scenario))
    return _run(design, scenario, src, graph, progress)

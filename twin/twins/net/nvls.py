"""NVLink SHARP (NVLS): NCCL's AllReduce in which the NVSwitch does the reduction.

Inside one NVSwitch domain (the twin's server) each GPU pulls its 1/n share of the buffer reduced by the
switch (``multimem.ld_reduce``: S/n in, its S out to the switch across the n pulls) and stores the result
once for the switch to multicast (S/n out, S in): ``S (1 + 1/n)`` bytes each way over its NVLink, in one
step instead of a ring's ``2 (n - 1)``, against ``2 S (n - 1) / n`` for a ring. NCCL runs it with the
Simple protocol only, and only when every rank shares the domain (across servers it becomes NVLS-tree,
not modelled). Time: ``NVLS_LATENCY + S (1 + 1/n) / (NVLink x NVLS_EFFICIENCY)``, both constants set on
the open validation set's nccl-tests rows (:mod:`twin.twins.net.nccl`). On 8x H100 (450 GB/s NVLink):
busbw = ``2 (n - 1) / n x 450 x 0.685 / 1.125`` = 480 GB/s at large sizes, against the ring's 370.

>>> from twin.twins.net import synthetic, topology, routing
>>> net = topology.compile_graph(synthetic.clos(1, 1, 1, 8, 1), {}, 3.6e12)
>>> t = time_nvls(net, [np.arange(8)], routing.Scheme("s", "spray", 1), Library())
>>> round(t.busbw(2**34) / 1e9)   # 16 GiB: the 480 GB/s asymptote less the per-step latency
479
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from twin.twins.net.nccl import NVLS_EFFICIENCY, NVLS_LATENCY, Cost, Library, PhaseCost
from twin.twins.net.timing import BUSBW_FACTOR, PhaseTiming, Timing


def time_nvls(net, groups: list[np.ndarray], scheme, lib: Library) -> Timing:
    """An NVLS AllReduce in every group at once; raises ValueError where a group spans servers or the
    servers have no NVLink (NCCL then falls back to its other algorithms)."""
    g0 = np.asarray(groups[0])
    n = len(g0)
    if n < 2:
        raise ValueError("a collective needs at least 2 ranks")
    for g in groups:
        if len(set(net.gpu_server[np.asarray(g)].tolist())) != 1:
            raise ValueError("NVLS runs inside one NVLink domain (one server); this group spans servers")
    out = net.gpu_nvl_out[g0]
    if (out < 0).any():
        raise ValueError("NVLS needs NVLink: the design has no NVLink bandwidth for these GPUs")
    link = float(net.arc_cap[out].min())  # bytes/s per GPU and direction
    nvls_lib = replace(lib, protocols=("Simple",))
    # t = S x t_per_byte / eta (Simple, Cost.time): store the NVLS rate so that eta cancels
    t1 = nvls_lib.eta * (1 + 1 / n) / (link * NVLS_EFFICIENCY)
    phase = PhaseTiming("NVLS reduce + multicast", 1, t1, 0.0, 1, n, 1, 0)
    cost = Cost("nvls", 1, 1, BUSBW_FACTOR["allreduce"](n), [PhaseCost(1, t1, 0, 0, 0, 0.0, 0.0, False)], nvls_lib)
    timing = Timing("allreduce", "nvls", scheme.name, n, [phase], cost)
    timing.notes.append(f"NVLS: {NVLS_LATENCY * 1e6:.0f} us + S (1 + 1/n) at {NVLS_EFFICIENCY:.3f} of {link / 1e9:.0f} GB/s NVLink")
    return timing

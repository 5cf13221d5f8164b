"""A collective timed: its phases' costs, ``time(S)`` and the nccl-tests bandwidths (algbw, busbw).

The types the engine (twin/twins/net/collectives.py) and the NVLink SHARP closed form (nvls.py) both
return, and the nccl-tests-shaped table of a list of timings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.twins.net.nccl import Cost

BUSBW_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "sendrecv": lambda n: 1.0,
}


@dataclass
class PhaseTiming:
    label: str
    repeat: int
    t_per_byte: float  # seconds per byte of S at full capacity (before eta)
    latency: float  # longest network path latency (s): switch forwarding + cables
    steps: int
    flows: int
    classes: int
    events: int
    load: np.ndarray | None = None  # offered bytes per arc for S = 1 (for plots and max/mean)
    net_steps: int = 0
    posts: int = 0


@dataclass
class Timing:
    """A collective timed under one scheme; ``time(S)`` and the nccl-tests bandwidths follow."""

    op: str
    algorithm: str
    scheme: str
    n: int
    phases: list[PhaseTiming]
    cost: Cost
    notes: list[str] = field(default_factory=list)
    blocks: dict | None = None  # groups timed one block per class of equal blocks (twin/twins/net/blocks.py)

    @property
    def steps(self) -> int:
        return sum(p.steps for p in self.phases)

    def time(self, size: float) -> float:
        return self.cost.time(size)

    def protocol(self, size: float) -> str:
        return self.cost.protocol(size)

    def latency(self, size: float) -> float:
        """The part of ``time(size)`` that is not moving bytes at full rate (at the protocol chosen
        for that size): launch, step latencies, NIC and path, posts, the first chunk of each step."""
        p = self.cost.protocol(size)
        return max(0.0, self.cost.time(size, p) - self.cost.bandwidth_time(size, p))

    def algbw(self, size: float) -> float:
        return size / self.time(size)

    def busbw(self, size: float) -> float:
        return self.algbw(size) * BUSBW_FACTOR[self.op](self.n)


def nccl_table(timings: list[Timing], sizes: list[float], dtype_bytes: int = 2, dtype: str = "bfloat16") -> list[dict]:
    """Rows shaped like nccl-tests output: size, count, type, then time/algbw/busbw per scheme (and
    the protocol the model picks, as NCCL's tuner would)."""
    rows = []
    for s in sizes:
        row = {"size": int(s), "count": int(s // dtype_bytes), "type": dtype}
        for t in timings:
            row[t.scheme] = {"time_us": t.time(s) * 1e6, "algbw_GBps": t.algbw(s) / 1e9, "busbw_GBps": t.busbw(s) / 1e9,
                             "protocol": t.protocol(s), "latency_us": t.latency(s) * 1e6}
        rows.append(row)
    return rows

"""Checkpoint size, write and restore times, and the Young/Daly interval.

Size: the training state is ``bytes_per_param`` bytes per parameter (16 for mixed precision with Adam:
BF16 weights and gradients, FP32 master weights and two moments), sharded over the job's TP x PP x DP
ranks so each byte is written once (context-parallel ranks hold replicas: one of them writes, all of
them read on a restore). Llama 3 405B: 405e9 x 16 B = 6.48 TB, 396 MB per GPU at TP8 PP16 DP128
(Llama 3 s3.3.1 reports checkpoints of 1 MB to 4 GB per GPU).

Bandwidth: the storage's aggregate bandwidth (sustained, or peak for bursts; Tectonic: 2 TB/s and
7 TB/s, Llama 3 s3.3.1), capped by the job's servers times their front-end NIC bandwidth.

Synchronous: the job stalls for the whole write. Asynchronous: it stalls only to copy its shard to host
memory (per-GPU bytes over the GPU-to-host bandwidth); the write to storage runs in the background and
the checkpoint is durable only when it ends, so a failure during that write falls back to the one before.

>>> c = cost(405e9 * 16, gpus=16384, servers=2048, replicas=1, storage_Bps=2e12, frontend_Bps=None,
...          mode="sync", snapshot_Bps=50e9)
>>> round(c.write_s, 2), round(c.per_gpu_bytes / 1e6), c.limit
(3.24, 396, 'storage')
>>> round(young_daly(3.24, 3 * 3600))
265
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class CheckpointCost:
    bytes: float  # one checkpoint
    per_gpu_bytes: float
    bandwidth_Bps: float | None  # bytes/s the write gets (None: times given)
    limit: str  # "storage" or "front-end NICs" (or "given")
    write_s: float  # the whole write to storage
    restore_s: float
    stall_s: float  # the job stalls this long per checkpoint
    lag_s: float  # after the stall, until the checkpoint is durable (async)
    mode: str

    @property
    def final_write_s(self) -> float:
        """Before a planned stop the checkpoint must be durable: stall plus background write."""
        return self.stall_s + self.lag_s


def cost(size: float, gpus: int, servers: int, replicas: int, storage_Bps: float | None, frontend_Bps: float | None,
         mode: str, snapshot_Bps: float, write_s: float | None = None, restore_s: float | None = None) -> CheckpointCost:
    """Write and restore times of a checkpoint of ``size`` bytes written by ``gpus`` GPUs on ``servers`` servers.

    ``replicas`` GPUs hold each shard (context parallelism) and all read it on a restore; ``write_s`` and
    ``restore_s`` override the bandwidth model (e.g. a site without a storage section)."""
    writers = max(1, gpus // max(1, replicas))
    per_gpu = size / writers
    limit, bw = "given", None
    if storage_Bps is not None:
        bw, limit = storage_Bps, "storage"
        if frontend_Bps is not None and servers * frontend_Bps < bw:
            bw, limit = servers * frontend_Bps, "front-end NICs"
    if bw is None and (write_s is None or restore_s is None):
        raise ValueError("no storage bandwidth: give the write and restore times")
    w = write_s if write_s is not None else size / bw
    r = restore_s if restore_s is not None else size * replicas / bw
    if mode == "async":
        stall = per_gpu / snapshot_Bps
        lag = w
    else:
        stall, lag = w, 0.0
    return CheckpointCost(size, per_gpu, bw, limit if write_s is None else "given", w, r, stall, lag, mode)


def young_daly(write_s: float, mtti_s: float) -> float:
    """Young's first-order optimal checkpoint interval ``sqrt(2 x write time x MTTI)`` (Young 1974, Daly 2006)."""
    return math.sqrt(2.0 * write_s * mtti_s)

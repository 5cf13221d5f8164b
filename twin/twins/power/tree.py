"""The power tree as weight vectors over trace channels: GPU racks, rows (busways A and B), halls, site.

Racks come from the placement (hall, row, slot); the job's ranks go to GPUs in topology order (zone,
rack, server, GPU), the order the job twin uses for ``order: topology``, so rank r sits in pipeline
stage ``(r // stage_group) % stages``. A GPU rack's weights count its GPUs per stage, its GPUs outside
the job, its job and other servers, and its constant watts (rack switch, fans); a network rack is a
constant. Rows sum their racks (2N: half on busway A, half on B); halls sum rows; the site adds the
network power of the bill of materials not already in a rack (optics).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.twins.power.schedule import Channels


@dataclass(frozen=True)
class PowerTree:
    ch: Channels
    racks: list[str]
    rack_pos: list[tuple[str, int]]  # (hall, row) of each rack
    rack_W: np.ndarray  # (racks x channels)
    rows: list[tuple[str, int]]
    row_W: np.ndarray
    halls: list[str]
    hall_W: np.ndarray
    site_W: np.ndarray  # (1 x channels), IT load
    job_gpus: int
    other_gpus: int
    network_w: float

    def hall_rows(self, hall: str) -> dict[int, int]:
        """Row number -> index into ``rows`` for one hall."""
        return {r: i for i, (h, r) in enumerate(self.rows) if h == hall}


def build_tree(design, ch: Channels, job_gpus: int, stage_group: int, network_total: float) -> PowerTree:
    spec = design.spec
    rf = spec.rack
    per_server = spec.chassis.gpus or 1
    servers = spec.rack_type.servers
    span = spec.chassis.span
    pl = design.placement
    gpu_racks = sorted(pl.gpu_racks(), key=lambda r: (r.zone if r.zone is not None else -1, r.index, r.id))
    others = [r for r in pl.racks if r.kind != "gpu"]
    racks = gpu_racks + sorted(others, key=lambda r: r.id)
    W = np.zeros((len(racks), ch.n))
    g = rf.gpus
    job_gpus = min(job_gpus, g * len(gpu_racks))
    for k, _r in enumerate(gpu_racks):
        ranks = np.arange(k * g, (k + 1) * g)
        inj = ranks < job_gpus
        if inj.any():
            stages = (ranks[inj] // stage_group) % ch.stages
            W[k, : ch.stages] = np.bincount(stages, minlength=ch.stages)
        W[k, ch.other_gpu] = int((~inj).sum())
        first = ranks[::per_server][:servers]
        # a system over a rack pair (NVL36x2) puts half of its non-GPU power in each of its racks
        W[k, ch.job_server] = int((first < job_gpus).sum()) / span
        W[k, ch.other_server] = servers / span - W[k, ch.job_server]
        W[k, ch.const] = rf.rtsw_power + spec.rack_type.other_power
    for k, r in enumerate(racks[len(gpu_racks):], start=len(gpu_racks)):
        W[k, ch.const] = r.power
    pos = [(r.position.hall, r.position.row) for r in racks]
    rows = sorted(set(pos), key=lambda hr: (_hall_index(spec, hr[0]), hr[1]))
    row_of = {hr: i for i, hr in enumerate(rows)}
    row_W = np.zeros((len(rows), ch.n))
    np.add.at(row_W, [row_of[p] for p in pos], W)
    halls = [h.name for h in spec.site.halls if any(p[0] == h.name for p in rows)]
    hall_W = np.zeros((len(halls), ch.n))
    for i, (h, _) in enumerate(rows):
        hall_W[halls.index(h)] += row_W[i]
    placed_net = len(gpu_racks) * rf.rtsw_power + sum(r.power for r in racks[len(gpu_racks):])
    residual = max(0.0, network_total - placed_net)
    site = hall_W.sum(axis=0, keepdims=True)
    site[0, ch.const] += residual
    return PowerTree(ch, [r.id for r in racks], pos, W, rows, row_W, halls, hall_W, site,
                     job_gpus, int(W[:, ch.other_gpu].sum()), network_total)


def _hall_index(spec, name: str) -> int:
    return next(i for i, h in enumerate(spec.site.halls) if h.name == name)

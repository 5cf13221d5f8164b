"""Failures striking a cluster run: the jobs on the failed server hang, then requeue; the server is drained.

A failure of a server (or of a rack switch, taking its rack) stops every job running there at once
(:meth:`twin.twins.cluster.engine.Run.close` with ``FAIL``: the work since each job's last checkpoint is
lost). Each job holds its GPUs, doing nothing, for the source's health-check detection time before it
is released and requeued in its old place. The server is drained for the detection and repair time;
a server that fails ``lemon_after`` times within ``lemon_window`` is taken for a lemon and drained for
``lemon_drain``. With spares held back, one comes into service for the drained server.
"""

from __future__ import annotations

import numpy as np

from twin.twins.cluster.alloc import DOWN, IN_SERVICE, SPARE
from twin.twins.cluster.cycle import FAIL, RELEASE, REPAIR, RUNNING
from twin.twins.cluster.failures import Source


def failure(R, t: float, unit: int, k: int) -> None:
    """A failure of source ``k`` on ``unit`` (a server, or a rack: every server of it)."""
    src = R.sources[k]
    servers = R.racks[unit] if src.unit == "rack" else (unit,)
    for s in servers:
        server_fails(R, t, s, src)


def server_fails(R, t: float, s: int, src: Source) -> None:
    """Server ``s`` fails at ``t``: its running jobs hang for the detection time, then requeue; it is drained for
    repair (longer if it is found a lemon) and a spare, if any, comes into service."""
    A, p = R.A, R.p
    if A.state[s] == DOWN:
        R.c["failures_while_down"] += 1
        return
    R.c["failures"] += 1
    hit = [j for j in R.on[s] if R.st[j] == RUNNING]
    if hit:
        R.by_source[src.name] += 1
        R.by_causes[src.causes] += 1
    for j in hit:
        R.c["job_interruptions"] += 1
        R.T.count(R.cls[j], "failures")
        R.after_fail[j] = True
        R.close(j, t, FAIL)
        R.push(t + src.detection, RELEASE, j, R.epoch[j])
    was_spare = A.state[s] == SPARE
    A.set_state(s, DOWN)
    back = t + src.detection + src.repair
    if p.lemon_after is not None:
        seen = R.seen[s]
        seen.append(t)
        recent = [x for x in seen if x > t - p.lemon_window]
        R.seen[s] = recent
        if len(recent) >= p.lemon_after:
            back = max(back, t + src.detection + p.lemon_drain)
            R.c["lemons_drained"] += 1
            R.c["lemons_true"] += int(R.lemons[s])
            R.seen[s] = []
    R.sepoch[s] += 1
    R.push(back, REPAIR, s, R.sepoch[s])
    if not was_spare and p.spares:
        spare = np.flatnonzero(A.state == SPARE)
        if len(spare):
            A.set_state(int(spare[0]), IN_SERVICE)
            R.dirty = True

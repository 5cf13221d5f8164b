"""The cluster twin's jobs that run a scenario's workload: their step and their collective's share from the job twin.

A size class of the mix may name ``workload:``, a workload of the scenario's ``jobs:``. The job twin has
timed that job on the compiled fabric (the scenario's first case, its first routing scheme); its result
gives the class's jobs

- their step, ``step_s``: what the cluster twin's step of such a job is when nothing slows it, and
- their collective's share of the step, ``w = dp_s / step_s``: the time the job's data-parallel
  traffic is on the wire over the step. On a shared fabric (:mod:`twin.twins.cluster.fabric`) this is
  the job's own ``comm_share``: the chance its neighbours find its collective running, and the share of
  its step that stretches with the collective (``s = 1 + w (C - 1)``). The stretch is exact when the job
  twin finds part of the collective exposed (the compute it overlaps is then full, so every second the
  collective gains shows in the step) and an upper bound when the collective is wholly hidden.

Under a site power cap (:mod:`twin.twins.cluster.sitecap`) the share of their step that slows with the GPUs'
clock is the job twin's compute and pipeline bubble over the step (``compute_share``).

Per workload the run reports its jobs, the job twin's step and shares, and the cluster twin's step: the
job twin's step times the jobs' running time over their running time without the neighbours' and the
power cap's stretch.
A job alone on the site has the job twin's step, to the float.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.lang.diagnostics import SpecError
from twin.lang.validator import error


@dataclass(frozen=True)
class Profile:
    workload: str
    gpus: int
    scheme: str
    step_s: float
    dp_s: float
    dp_exposed_s: float
    busy_s: float = 0.0  # compute and pipeline bubble of the step: what slows with a GPU's clock
    compute_s: float = 0.0
    bubble_s: float = 0.0
    exposed_s: float = 0.0  # exposed communication

    @property
    def busy_share(self) -> float:
        return min(max(self.busy_s / self.step_s, 0.0), 1.0) if self.step_s > 0 else 1.0

    @property
    def comm_share(self) -> float:
        return min(max(self.dp_s / self.step_s, 0.0), 1.0) if self.step_s > 0 else 0.0


def resolve(mix, results: list[dict] | None, src) -> dict[str, Profile]:
    """The profile of every workload the mix's classes name, from the job twin's ``results`` (located errors)."""
    out: dict[str, Profile] = {}
    for i, c in enumerate(mix.sizes):
        if c.workload is None:
            continue
        where = ("cluster", "jobs", "mix", "sizes", i)
        found = next((r for r in results or [] if r.get("workload") == c.workload), None)
        if found is None:
            names = sorted({r["workload"] for r in results or []})
            raise SpecError([error(src, where + ("workload",), f"workload '{c.workload}' is not among this scenario's jobs",
                                   ", ".join(names) if names else "list it under jobs: (the job twin computes its step)")])
        if c.gpus != found["gpus"]:
            raise SpecError([error(src, where + ("gpus",), f"{c.gpus:,} GPUs, but the job twin's {c.workload} runs on {found['gpus']:,}",
                                   f"{found['gpus']:,}")])
        s = found["schemes"][0]
        out[c.workload] = Profile(c.workload, int(found["gpus"]), s["scheme"], float(s["step_s"]), float(s.get("dp_s", 0.0)),
                                  float(s.get("dp_exposed_s", 0.0)), float(found["compute_s"]) + float(found["bubble_s"]),
                                  float(found["compute_s"]), float(found["bubble_s"]), float(s["exposed_comm_s"]))
    return out


def comm_of(jobs, profiles: dict[str, Profile]) -> np.ndarray | None:
    """Each job's collective share (nan: the fabric's stated ``comm_share``), or None when no job runs a workload."""
    if jobs.workload is None or not profiles:
        return None
    w = np.array([profiles[n].comm_share for n in jobs.workloads] + [np.nan])
    return w[jobs.workload]


def busy_of(jobs, profiles: dict[str, Profile], comm: np.ndarray | None, fabric) -> np.ndarray | None:
    """Each job's share of its step that slows with the GPUs' clock under a power cap: a workload's compute and
    bubble over its step; a stated job's all but the fabric's ``comm_share`` (all of it when the fabric is not
    shared). None: every job computes all of its step."""
    w = fabric.comm_share if fabric is not None else 0.0
    if jobs.workload is None or not profiles:
        return None if w == 0.0 else np.full(len(jobs), 1.0 - w)
    b = np.array([profiles[n].busy_share for n in jobs.workloads] + [1.0 - w])
    return b[jobs.workload]


def draws_of(jobs, profiles: dict[str, Profile], ph, fabric) -> tuple[list[tuple[float, float]], np.ndarray | None]:
    """The kinds of held GPU for the site's power (:class:`twin.twins.cluster.power.SiteDraw`): each draws ``a p + c`` W
    at compute watts ``p``; kind 0 the stated jobs (``comm_share`` at communication watts), kind ``i + 1`` workload
    ``i``'s jobs at the power twin's mean over their step (``ph.step_average``: compute at ``p``, exposed
    communication, bubble and slack at theirs). And each job's kind (None: all kind 0)."""
    w = fabric.comm_share if fabric is not None else 0.0
    out = [(1.0 - w, w * ph.communication)]
    for name in jobs.workloads if profiles else ():
        p = profiles[name]
        slack = max(0.0, p.step_s - p.compute_s - p.bubble_s - p.exposed_s)
        out.append((p.compute_s / p.step_s, (p.exposed_s * ph.communication + (p.bubble_s + slack) * ph.waiting) / p.step_s))
    if jobs.workload is None or not profiles:
        return out, None
    return out, jobs.workload + 1


def summary(jobs, out, profiles: dict[str, Profile]) -> list[dict]:
    """Per workload: its jobs, the job twin's step and share, and the step the cluster twin measured."""
    rows = []
    for i, name in enumerate(jobs.workloads):
        p = profiles[name]
        mine = jobs.workload == i
        ran = float(out.jobs_ran[mine].sum())
        slowed = float(out.jobs_slowed[mine].sum())
        stretch = ran / (ran - slowed) if ran > slowed else 1.0
        rows.append({"workload": name, "gpus": p.gpus, "scheme": p.scheme, "jobs": int(mine.sum()),
                     "step_s": p.step_s, "dp_s": p.dp_s, "dp_exposed_s": p.dp_exposed_s, "comm_share": p.comm_share, "compute_share": p.busy_share,
                     "running_h": ran / 3600.0, "slowed_h": slowed / 3600.0, "cluster_step_s": p.step_s * stretch})
    return rows

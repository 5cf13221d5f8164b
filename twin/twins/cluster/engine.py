"""The cluster twin's event clock: every job, the scheduler and the failures of the site over the span.

Three streams of events meet on one clock: job arrivals (sorted, from a mix or a trace), failures
(sorted, drawn up front per server), and what the run itself schedules in a heap (a job ends, a hung
job is released, a server comes back, a job reaches its lifetime, a job passes its preemption guard).

A running job works in cycles of ``interval`` compute then a checkpoint ``write``
(:mod:`twin.twins.cluster.cycle`); after a failure or a preemption it pays ``restart`` before computing
again, and loses the compute since its last checkpoint (a job that does not checkpoint loses all of it).
A failure (:mod:`twin.twins.cluster.strike`) hangs the job for the source's detection time (its GPUs
held, doing nothing); the job is then requeued in its old place (its priority and submit time) and the
failed server is drained for repair. The scheduler (:mod:`twin.twins.cluster.schedule`) runs after every
event that can let a job start.

Every GPU-second of the span lands in exactly one bucket (:data:`BUCKETS`): a job's held time is split
into productive, rework, detection, restart, checkpoint, preempted, neighbours (the part of its running
time its step was stretched by jobs sharing its links: :mod:`twin.twins.cluster.fabric`) and powercap
(stretched by a site power cap: :mod:`twin.twins.cluster.sitecap`); a GPU no job holds is idle (no
job waits), queued_idle (jobs wait and the head needs more GPUs than are free), fragmentation (the head
would fit by count, not by shape), repair (on a drained server) or spare (a held-back server).
"""

from __future__ import annotations

import bisect
import heapq
import math

import numpy as np

from twin.twins.cluster import schedule, strike
from twin.twins.cluster.alloc import DOWN, IN_SERVICE, SPARE, Allocator
from twin.twins.cluster.answers import Tally, size_class
from twin.twins.cluster.cycle import BUCKETS, CAP, DONE, END, FAIL, FINISH, GUARD, HANGING, HORIZON, LIFE, LIFETIME, PREEMPT, RELEASE, REPAIR, RUNNING, WAITING, Outcome, Policy, split, wall
from twin.twins.cluster.fabric import retime
from twin.twins.cluster.failures import Source
from twin.twins.cluster.sitecap import stretch

__all__ = ["BUCKETS", "Outcome", "Policy", "Run"]


class Run:
    """One cluster run; ``go()`` returns its :class:`Outcome`. Deterministic for its inputs."""

    def __init__(self, site, jobs, sources: list[Source], failures: tuple[np.ndarray, np.ndarray, np.ndarray],
                 lemons: np.ndarray, policy: Policy, horizon: float, fabric=None, comm: np.ndarray | None = None, power=None,
                 busy: np.ndarray | None = None, kind: np.ndarray | None = None):
        self.site, self.jobs, self.sources, self.p, self.D = site, jobs, sources, policy, horizon
        self.fab = fabric  # a SharedFabric: multi-server jobs stretch each other's steps (None: they do not)
        # each job's collective share of its step (the job twin's, :mod:`twin.twins.cluster.profiles`; nan or None: the stated one)
        self.comm = None if comm is None else [None if x != x else x for x in np.asarray(comm, float).tolist()]
        self.pw = power  # a SiteDraw (the GPUs held by kind, for the site's power) or a SiteCap (that also slows the jobs)
        self.cap = power if power is not None and power.controls else None
        self.kind = [0] * len(jobs) if kind is None else np.asarray(kind, np.int64).tolist()  # each job's kind of draw
        self.busy = np.ones(len(jobs)).tolist() if busy is None else np.asarray(busy, float).tolist()  # compute share of a step
        self.fail_t, self.fail_u, self.fail_k = failures
        self.lemons = lemons
        n = len(jobs)
        self.g = jobs.gpus.tolist()
        self.cls = size_class(jobs.gpus).tolist()
        self.tau = [policy.interval if c else math.inf for c in jobs.checkpoint.tolist()]
        self.key = list(zip((-jobs.priority).tolist(), jobs.submit.tolist(), range(n)))
        self.rem = jobs.work.tolist()
        self.st = [0] * n
        self.seg0 = [0.0] * n
        self.over = [0.0] * n
        self.cause = [FINISH] * n  # why the job last stopped (what its next start's overhead is)
        self.alloc: list = [None] * n
        self.epoch = [0] * n
        self.first = [math.nan] * n
        self.end = [math.nan] * n
        self.prod = [0.0] * n
        self.hang0 = [0.0] * n
        self.est = [0.0] * n
        self.need = [0.0] * n  # running time to the end of the segment, unstretched
        self.sf = [1.0] * n  # the step's stretch by neighbours now, since ts; lag: the seconds it added before ts
        self.sp = [1.0] * n  # by the power cap; lagp
        self.ts = [0.0] * n
        self.lag = [0.0] * n
        self.lagp = [0.0] * n
        self.ran = [0.0] * n  # running time over all segments, and the part of it the stretches (neighbours, cap) added
        self.slow = [0.0] * n
        self.tok = [0] * n  # the END event that counts
        self.after_fail = [False] * n
        self.on_lemon = [False] * n
        self.A = Allocator(site, policy.packing, policy.spares, policy.seed)
        self.on = [set() for _ in range(site.servers)]
        self.sepoch = [0] * site.servers
        self.seen: list[list[float]] = [[] for _ in range(site.servers)]
        self.racks = [[] for _ in range(int(site.rack.max()) + 1 if site.servers else 0)]
        for s, r in enumerate(site.rack.tolist()):
            self.racks[r].append(s)
        self.B = dict.fromkeys(BUCKETS, 0.0)
        self.T = Tally.empty()
        nb = max(1, math.ceil(horizon / policy.bin))
        self.series = {k: [0.0] * nb for k in ("running", "idle", "queued_idle", "fragmentation", "repair", "spare")}
        self.heap: list = []
        self.seq = 0
        self.queue: list = []  # sorted keys (-priority, submit, job)
        self.ends: list = []  # sorted (expected end, job) of running jobs, for backfill's reservation
        self.running: set[int] = set()
        self.old: set[int] = set()  # running jobs past the preemption guard
        self.c = dict.fromkeys(("completions", "cancelled", "failures", "failures_while_down", "job_interruptions", "preemptions",
                                "preemptions_after_failure", "lifetime_requeues", "lemons_drained", "lemons_true", "starts", "cross_zone_starts"), 0)
        self.by_source = {s.name: 0 for s in sources}
        self.by_causes = {"all": 0, "infrastructure": 0}
        self.dirty = False
        self.releases = 0
        self.tl = 0.0

    # ------------------------------------------------------------------ the clock
    def push(self, t: float, kind: int, a: int, b: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, a, b))

    def go(self) -> Outcome:
        D = self.D
        sub = self.jobs.submit.tolist()
        ft, fu, fk = self.fail_t.tolist(), self.fail_u.tolist(), self.fail_k.tolist()
        na = nf = 0
        NA, NF = len(sub), len(ft)
        inf = math.inf
        heap = self.heap
        if self.cap is not None:
            self.push(0.0, CAP, 0, 0)
        while True:
            ta = sub[na] if na < NA else inf
            tf = ft[nf] if nf < NF else inf
            th = heap[0][0] if heap else inf
            t = min(ta, tf, th)
            if t >= D:
                break
            self.advance(t)
            if th <= ta and th <= tf:
                _, _, kind, a, b = heapq.heappop(heap)
                self.event(t, kind, a, b)
            elif tf <= ta:
                strike.failure(self, t, fu[nf], fk[nf])
                nf += 1
            else:
                self.arrive(t, na)
                na += 1
            if self.dirty:
                self.dirty = False
                schedule.run(self, t)
        self.advance(D)
        for j in list(self.running):
            self.close(j, D, HORIZON)
        for j, s in enumerate(self.st):
            if s == HANGING:
                self.held(j, D - self.hang0[j], "detection")
        self.c["jobs_on_lemons"] = sum(self.on_lemon)
        return Outcome(D, self.site.gpus, dict(self.B), self.T, {k: np.array(v) for k, v in self.series.items()},
                       dict(self.c), dict(self.by_source), dict(self.by_causes), np.array(self.first), np.array(self.end),
                       np.array(self.st), self.p.bin, np.array(self.ran), np.array(self.slow))

    def advance(self, t: float) -> None:
        """Account the GPUs no job holds from the last event to ``t``."""
        dt = t - self.tl
        if dt <= 0:
            return
        A = self.A
        fi = A.free_in_service
        if self.queue:
            what = "fragmentation" if fi >= self.g[self.queue[0][2]] else "queued_idle"
        else:
            what = "idle"
        B = self.B
        B[what] += fi * dt
        B["repair"] += A.free_down * dt
        B["spare"] += A.free_spare * dt
        running = self.site.gpus - fi - A.free_down - A.free_spare
        if self.pw is not None:
            self.pw.account(self.tl, t)
        self._bins(self.tl, t, ((what, fi), ("repair", A.free_down), ("spare", A.free_spare), ("running", running)))
        self.tl = t

    def _bins(self, t0: float, t1: float, parts) -> None:
        b = self.p.bin
        k = int(t0 // b)
        ser = self.series
        while t0 < t1:
            e = min(t1, (k + 1) * b)
            for name, n in parts:
                ser[name][k] += n * (e - t0)
            t0, k = e, k + 1

    def event(self, t: float, kind: int, a: int, b: int) -> None:
        if kind == END:
            if self.tok[a] == b and self.st[a] == RUNNING:
                self.close(a, t, FINISH)
        elif kind == RELEASE:
            if self.epoch[a] == b and self.st[a] == HANGING:
                self.held(a, t - self.hang0[a], "detection")
                self.release(a)
                self.enqueue(a)
        elif kind == REPAIR:
            if self.sepoch[a] == b and self.A.state[a] == DOWN:
                spare_now = int((self.A.state == SPARE).sum()) if self.p.spares else 0
                self.A.set_state(a, SPARE if spare_now < self.p.spares else IN_SERVICE)
                self.dirty = True
        elif kind == LIFETIME:
            if self.epoch[a] == b and self.st[a] == RUNNING:
                self.c["lifetime_requeues"] += 1
                self.close(a, t, LIFE)
        elif kind == GUARD:
            if self.epoch[a] == b and self.st[a] == RUNNING:
                self.old.add(a)
                self.dirty = True
        elif kind == CAP:
            self.control(t)

    def control(self, t: float) -> None:
        """The power manager sets the GPUs' cap for the GPUs held now; every running job's step follows it."""
        cap = self.cap
        if cap.control(t):
            for j in self.running:
                self.restretch(j, t, sp=stretch(self.busy[j], cap.k), sort=False)
            self.ends = sorted((self.est[j], j) for j in self.running)
        if t + cap.interval < self.D:
            self.push(t + cap.interval, CAP, 0, 0)

    # ------------------------------------------------------------------ jobs
    def arrive(self, t: float, j: int) -> None:
        self.enqueue(j)

    def enqueue(self, j: int) -> None:
        self.st[j] = WAITING
        k = self.key[j]
        pos = bisect.bisect(self.queue, k)
        self.queue.insert(pos, k)
        if pos <= self.p.depth:
            self.dirty = True

    def start(self, j: int, t: float, alloc: list) -> None:
        p = self.p
        self.st[j] = RUNNING
        self.alloc[j] = alloc
        if self.pw is not None:
            self.pw.hold(self.kind[j], self.g[j])
        self.running.add(j)
        for s, _ in alloc:
            self.on[s].add(j)
            if self.lemons[s]:
                self.on_lemon[j] = True
        if math.isnan(self.first[j]):
            self.first[j] = t
        self.seg0[j] = t
        self.over[j] = p.restart if self.cause[j] in (FAIL, PREEMPT, LIFE) else 0.0
        self.epoch[j] += 1
        self.need[j] = self.over[j] + wall(self.rem[j], self.tau[j], p.write)
        sp = stretch(self.busy[j], self.cap.k) if self.cap is not None and self.cap.k < 1 else 1.0
        end = t + self.need[j] * sp
        self.est[j] = end
        self.sf[j], self.sp[j], self.ts[j], self.lag[j], self.lagp[j] = 1.0, sp, t, 0.0, 0.0
        bisect.insort(self.ends, (end, j))
        self.push_end(j, end)
        if t + p.lifetime < end:
            self.push(t + p.lifetime, LIFETIME, j, self.epoch[j])
        if p.preempt:
            if p.guard <= 0:
                self.old.add(j)
            elif t + p.guard < end:
                self.push(t + p.guard, GUARD, j, self.epoch[j])
        self.c["starts"] += 1
        if len(alloc) > 1 and self.A.zones_of(alloc) > 1:
            self.c["cross_zone_starts"] += 1
        if self.fab is not None and len(alloc) > 1:
            retime(self, t, self.fab.add(j, tuple(s for s, _ in alloc), self.comm[j] if self.comm is not None else None))

    def push_end(self, j: int, end: float) -> None:
        self.tok[j] = self.seq + 1
        self.push(end, END, j, self.tok[j])

    def slowed(self, j: int, t: float) -> tuple[float, float]:
        """Seconds of the running segment of ``j`` up to ``t`` that its neighbours' and the power cap's stretches added
        (of ``dt`` at both, ``dt (1 - 1/sp)`` is the cap's and ``dt / sp (1 - 1/sf)`` the neighbours')."""
        dt, sf, sp = t - self.ts[j], self.sf[j], self.sp[j]
        return self.lag[j] + dt / sp * (1.0 - 1.0 / sf), self.lagp[j] + dt * (1.0 - 1.0 / sp)

    def restretch(self, j: int, t: float, sf: float | None = None, sp: float | None = None, sort: bool = True) -> None:
        """New stretches of the running ``j`` from ``t``: its end moves with its remaining running time (``sort``: kept
        in place in the expected ends; else the caller sorts them)."""
        a = self.sf[j] if sf is None else sf
        b = self.sp[j] if sp is None else sp
        if a == self.sf[j] and b == self.sp[j]:
            return
        self.lag[j], self.lagp[j] = self.slowed(j, t)
        self.ts[j], self.sf[j], self.sp[j] = t, a, b
        end = t + (self.need[j] - (t - self.seg0[j] - self.lag[j] - self.lagp[j])) * a * b
        if sort:
            i = bisect.bisect_left(self.ends, (self.est[j], j))
            if i < len(self.ends) and self.ends[i][1] == j:
                del self.ends[i]
            bisect.insort(self.ends, (end, j))
        self.est[j] = end
        self.push_end(j, end)

    def held(self, j: int, dt: float, bucket: str) -> None:
        v = dt * self.g[j]
        self.B[bucket] += v
        self.T.add(self.cls[j], bucket, v)

    def close(self, j: int, t: float, how: int) -> None:
        """End the running segment of ``j`` at ``t``: its GPU-time into buckets, its progress kept or lost."""
        p = self.p
        e = t - self.seg0[j]
        nb, pw = self.slowed(j, t) if self.sf[j] != 1.0 or self.sp[j] != 1.0 or self.lag[j] or self.lagp[j] else (0.0, 0.0)
        self.held(j, nb, "neighbours")
        self.held(j, pw, "powercap")
        lag = nb + pw
        ov = min(e - lag, self.over[j])
        self.held(j, ov, "preempted" if self.cause[j] == PREEMPT else "restart")
        done, kept, ck = split(e - lag - ov, self.tau[j], p.write)
        if how in (FINISH, LIFE, HORIZON):
            kept = done
        if how == FINISH:
            kept = done = self.rem[j]
        self.held(j, kept, "productive")
        self.held(j, done - kept, "preempted" if how == PREEMPT else "rework")
        self.held(j, ck, "checkpoint")
        self.T.add_time(self.cls[j], e)
        self.ran[j] += e
        self.slow[j] += lag
        self.prod[j] += kept
        self.rem[j] = max(self.rem[j] - kept, 0.0)
        self.running.discard(j)
        self.old.discard(j)
        i = bisect.bisect_left(self.ends, (self.est[j], j))
        if i < len(self.ends) and self.ends[i][1] == j:
            del self.ends[i]
        self.epoch[j] += 1
        self.cause[j] = how
        if self.fab is not None and j in self.fab.on:
            retime(self, t, self.fab.remove(j))
        if how == FAIL:
            self.st[j] = HANGING
            self.hang0[j] = t
            return
        self.release(j)
        if how in (PREEMPT, LIFE):
            self.enqueue(j)
        elif how == FINISH:
            self.st[j] = DONE
            self.end[j] = t
            self.c["cancelled" if self.jobs.cancelled[j] else "completions"] += 1
            self.T.done(self.cls[j])

    def release(self, j: int) -> None:
        self.A.release(self.alloc[j])
        if self.pw is not None:
            self.pw.hold(self.kind[j], -self.g[j])
        for s, _ in self.alloc[j]:
            self.on[s].discard(j)
        self.alloc[j] = None
        self.dirty = True
        self.releases += 1

    def preempt(self, j: int, t: float, by: int) -> None:
        self.c["preemptions"] += 1
        if self.after_fail[by]:
            self.c["preemptions_after_failure"] += 1
        self.T.count(self.cls[j], "preemptions")
        self.close(j, t, PREEMPT)

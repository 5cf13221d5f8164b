"""What a campaign costs before its Monte Carlo runs: failure events per run, passes, memory.

The engine (:mod:`twin.twins.reliability.engine`) steps through the k-th failure of every run at once,
so one pass costs ``k`` event steps (about 0.3 ms each on a laptop core at 200 to 1,000 runs) and
holds ``runs x k`` arrival cells (about 24 bytes each). ``k`` is the engine's own cover of the
Poisson arrivals: ``mean + 6 sqrt(mean) + 16`` with ``mean = total rate x horizon``. A campaign runs
one main pass, one per swept checkpoint interval, a spare-pool search and one per swept job size
(whose rate grows with the job's GPUs). The sum is checked against ``campaign_event_steps`` and each
pass against ``campaign_cells`` (:mod:`twin.lang.limits`) before anything is drawn; the engine checks
its own pass again before allocating (:func:`cells`).

Measured on lab-2zone (2 cores, shared): 54 days, 1,000 runs, sweeps on: 28 passes, 11,024 event
steps, 1.9 s; ten years, 1,000 runs: 16 passes of 8,160 events, 44 s; ten years, 10,000 runs: 98 s
and 2 GiB (the issue's 100,000 runs would need 6 GiB).

>>> events_per_run(0.0, 86400.0), events_per_run(1 / 3600, 86400.0)
(16, 70)
"""

from __future__ import annotations

import math

from twin.lang import limits
from twin.twins.reliability.components import Mode


def events_per_run(rate: float, horizon: float) -> int:
    """Columns the engine draws per run for a total rate (1/s) over ``horizon`` s."""
    mean = rate * horizon
    if not math.isfinite(mean):
        return math.inf
    return int(math.ceil(mean + 6.0 * math.sqrt(mean) + 16))


def stop_rate(modes: list[Mode]) -> float:
    """Total rate (1/s) of the modes that stop the job (the engine's arrivals); degradations are drawn apart."""
    return float(sum(m.job_rate for m in modes if m.kind != "degrade" and m.job_rate > 0))


def spare_passes(given: list[int] | None, limit: int) -> int:
    """Passes of the spare-pool sweep: the unlimited pool, then the given pools or the doubling search
    up to ``limit`` and its bisection."""
    if given:
        return 1 + len(set(given))
    doubling = 2 + max(0, math.ceil(math.log2(max(1, limit))))
    return 1 + 2 * doubling


def check(modes: list[Mode], horizon: float, runs: int, sweep_runs: int, intervals: int, spares: int,
          sizes: list[int], gpus: int) -> str | None:
    """The message when the campaign is over a limit, stating its cost; None when it fits."""
    k = events_per_run(stop_rate(modes), horizon)
    passes = [(runs, k)] + [(sweep_runs, k)] * (intervals + spares)
    passes += [(sweep_runs, events_per_run(stop_rate(modes) * n / max(1, gpus), horizon)) for n in sizes]
    r, kk = max(passes, key=lambda p: p[0] * p[1])
    cost = (f"{_n(k)} failure events per run over {horizon / 86400:g} days, {len(passes)} Monte Carlo passes "
            f"(main; intervals {intervals}, spare pools {spares}, job sizes {len(sizes)})")
    if msg := limits.exceeded("campaign_cells", r * kk):
        return f"{cost}; the largest pass, {r:,} runs x {_n(kk)} events, is {msg}"
    if msg := limits.exceeded("campaign_event_steps", sum(x for _, x in passes)):
        return f"{cost}: {msg}"
    return None


def cells(runs: int, rate: float, horizon: float) -> None:
    """The engine's guard for one pass: :class:`twin.lang.limits.CostError` before it allocates."""
    k = events_per_run(rate, horizon)
    limits.check("campaign_cells", runs * k, f"run x event cells ({runs:,} runs x {_n(k)} events)")


def checkpoints(horizon: float, interval: float, stall: float) -> str | None:
    """Checkpoint writes in the representative run's timeline (what the power twin draws)."""
    n = horizon / (interval + stall) if interval + stall > 0 else math.inf
    msg = limits.exceeded("campaign_checkpoints", n)
    return f"a checkpoint every {interval:g} s over {horizon / 86400:g} days is {msg}" if msg else None


def _n(x: float) -> str:
    return f"{x:,.0f}" if math.isfinite(x) else "infinitely many"

"""Stragglers: every rank of a synchronous step runs at its own speed, and the slowest sets the step.

Each rank's compute takes ``1 + X`` times its nominal time, ``X`` drawn afresh every step from a stated
distribution of the per-rank slowdown (MegaScale, arXiv 2402.15627 s4: at 10,000+ GPUs a few slow ranks
set the pace of the whole job). The step's synchronous part then takes ``1 + E[max of N draws]`` times the
nominal, which grows with the rank count N, so the loss grows with scale. Closed forms of the expected
maximum of N independent draws:

- ``exponential`` with mean ``mu``: ``mu x H_N`` (``H_N = 1 + 1/2 + ... + 1/N``, the N-th harmonic number:
  the maximum of N exponentials is the sum of independent exponentials of rates N, N - 1, ..., 1; Rényi's
  representation of exponential order statistics).
- ``uniform`` on ``[0, 2 mu]`` (mean ``mu``): ``2 mu x N / (N + 1)``.

>>> round(expected_max("exponential", 0.01, 1), 6), round(expected_max("exponential", 0.01, 16384), 4)
(0.01, 0.1028)
>>> expected_max("uniform", 0.01, 3)
0.015
"""

from __future__ import annotations

import math

import numpy as np

DISTRIBUTIONS = ("exponential", "uniform")
EULER_GAMMA = 0.5772156649015329


def harmonic(n: int) -> float:
    """``H_n``: exact below 10^6 terms, the asymptotic series above (error below 1e-20)."""
    if n < 1_000_000:
        return float(np.sum(1.0 / np.arange(1, n + 1)))
    return math.log(n) + EULER_GAMMA + 1 / (2 * n) - 1 / (12 * n * n)


def expected_max(distribution: str, mean: float, n: int) -> float:
    """Expected largest per-rank slowdown of ``n`` ranks (a fraction of the nominal time)."""
    if mean < 0 or n < 1:
        raise ValueError(f"a straggler distribution needs a mean >= 0 and at least one rank (mean {mean}, {n} ranks)")
    if distribution == "exponential":
        return mean * harmonic(n)
    if distribution == "uniform":
        return 2 * mean * n / (n + 1)
    raise ValueError(f"unknown straggler distribution '{distribution}' (one of: {', '.join(DISTRIBUTIONS)})")


def sample_max(distribution: str, mean: float, n: int, steps: int, seed: int = 0) -> np.ndarray:
    """The largest slowdown of ``n`` ranks in each of ``steps`` simulated steps (Monte Carlo, for checking)."""
    rng = np.random.default_rng(seed)
    if distribution == "exponential":
        draws = rng.exponential(mean, size=(steps, n))
    elif distribution == "uniform":
        draws = rng.uniform(0.0, 2 * mean, size=(steps, n))
    else:
        raise ValueError(f"unknown straggler distribution '{distribution}'")
    return draws.max(axis=1)

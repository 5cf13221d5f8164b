"""Stragglers (issue 35, item 6): the slowest of N ranks sets each synchronous step.

Known answers: the expected maximum of N independent draws in closed form. Exponential with mean mu:
mu x H_N (Rényi's representation: the maximum of N exponentials is a sum of independent exponentials of
rates N, N - 1, ..., 1); uniform on [0, 2 mu]: 2 mu N / (N + 1). MegaScale (arXiv 2402.15627 s4) attributes
losses at 10,000+ GPUs to slow ranks: the loss grows with the rank count.
"""

from __future__ import annotations

import pytest

from twin.compiler.resolve.validate import validate_text
from twin.twins.workload import stragglers


@pytest.mark.parametrize("dist, mean, n", [("exponential", 0.02, 1), ("exponential", 0.02, 64), ("exponential", 0.005, 4096),
                                           ("uniform", 0.03, 2), ("uniform", 0.03, 1000)])
def test_expected_slowest_rank_matches_its_closed_form_within_1_percent(dist, mean, n):
    closed = stragglers.expected_max(dist, mean, n)
    mc = stragglers.sample_max(dist, mean, n, steps=max(2000, 400_000 // n), seed=7).mean()
    assert mc == pytest.approx(closed, rel=0.01)
    if dist == "exponential":
        assert closed == pytest.approx(mean * sum(1 / k for k in range(1, n + 1)), rel=1e-12)
    else:
        assert closed == pytest.approx(2 * mean * n / (n + 1))


def test_the_loss_grows_with_scale_and_the_harmonic_tail_is_exact():
    e = [stragglers.expected_max("exponential", 0.01, n) for n in (8, 1024, 16384)]
    assert e[0] < e[1] < e[2] and e[2] == pytest.approx(0.01 * 10.281306710008463, rel=1e-12)  # H_16384
    assert stragglers.harmonic(10**7) == pytest.approx(16.695311365859855, rel=1e-12)  # asymptotic branch
    with pytest.raises(ValueError, match="mean >= 0"):
        stragglers.expected_max("exponential", -0.01, 8)


def test_a_job_with_stragglers_waits_for_its_slowest_rank(lab):
    from test_job_recipe import run

    from twin.lang.site.workload_models import Stragglers
    from twin.twins.net import topology

    net = topology.from_design(lab)
    base = run(lab, net)
    slow = run(lab, net, stragglers=Stragglers(distribution="exponential", mean=0.01))
    n = base["gpus"]
    want = 0.01 * stragglers.harmonic(n) * (base["compute_s"] + base["bubble_s"])
    assert base["straggler_s"] == 0 and slow["straggler_s"] == pytest.approx(want)
    assert slow["schemes"][0]["step_s"] == pytest.approx(base["schemes"][0]["step_s"] + want)
    assert slow["stragglers"]["expected_max"] == pytest.approx(0.01 * stragglers.harmonic(n))


def test_negative_straggler_rate_is_a_located_error(root):
    text = (root / "sites/lab-2zone.yaml").read_text().rstrip("\n") + "\n    stragglers: {distribution: exponential, mean: -0.01}\n"
    spec, diags = validate_text(text, "w.yaml")
    errs = [d for d in diags if d.severity.value == "error"]
    assert spec is None and len(errs) == 1 and errs[0].dotted.endswith("stragglers.mean")
    assert errs[0].line == next(i for i, t in enumerate(text.splitlines(), 1) if "stragglers:" in t)

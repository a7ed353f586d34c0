"""The closed-form quantiles and tails (tasks/stats/distributions.py) against scipy, the reference."""

from __future__ import annotations

import pytest
from scipy import special, stats

from tasks.stats.distributions import (
    binomial_pmfs,
    normal_quantile,
    regularized_beta,
    t_cdf,
    t_quantile,
)
from tasks.stats.wilson import t_quantile_series, wilson_interval


@pytest.mark.parametrize("p", [0.001, 0.025, 0.5, 0.8, 0.975, 0.9995])
def test_normal_quantile(p):
    assert normal_quantile(p) == pytest.approx(stats.norm.ppf(p), abs=1e-12)


@pytest.mark.parametrize("df", [1, 2, 4.5, 9.5, 19, 23, 199, 1e5])
@pytest.mark.parametrize("p", [0.6, 0.975, 0.995])
def test_t_quantile_and_cdf(df, p):
    assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9)
    assert t_cdf(-1.3, df) == pytest.approx(stats.t.cdf(-1.3, df), abs=1e-10)


@pytest.mark.parametrize("df", [4.5, 6, 9.5, 19, 100])
def test_the_series_t_quantile_of_the_clustered_interval_is_within_2e_4(df):
    z = normal_quantile(0.975)
    assert t_quantile_series(df, z) == pytest.approx(stats.t.ppf(0.975, df), rel=2e-4)


@pytest.mark.parametrize("x,a,b", [(0.3, 2, 5), (0.5, 12, 13), (0.97, 40, 3), (0.02, 0.5, 7.5), (0.5, 300, 301)])
def test_regularized_beta(x, a, b):
    assert regularized_beta(x, a, b) == pytest.approx(special.betainc(a, b, x), abs=1e-12)


@pytest.mark.parametrize("n,p", [(1, 0.3), (24, 0.1), (540, 0.02), (2000, 0.5)])
def test_binomial_probabilities(n, p):
    ours = binomial_pmfs(n, p)
    assert sum(ours) == pytest.approx(1.0)
    assert ours == pytest.approx(list(stats.binom.pmf(range(n + 1), n, p)), abs=1e-13)


@pytest.mark.parametrize("k,n", [(0, 10), (10, 10), (3, 7), (44, 50), (11, 24), (500, 1000)])
def test_wilson_is_the_textbook_interval(k, n):
    low, high = stats.binomtest(k, n).proportion_ci(method="wilson")
    interval = wilson_interval(k, n)
    assert (interval.low, interval.high) == pytest.approx((low, high), abs=1e-12)

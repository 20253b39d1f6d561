"""Is system B better than A? Paired tests, intervals, effect sizes and corrections.

:func:`compare` evaluates per query and hands the per-query frame to :func:`compare_per_query`,
which works on any table with one row per ``(by, query)`` and one column per metric (ours, or
one written by another tool). Systems are the values of ``by``; they are compared **paired by
query**.

Every metric column carries its meaning (:mod:`polars_rankeval._engine.meaning`): its direction
and its
summary rule. Nothing here assumes "higher is better" or "mean":

* ``higher_is_better`` states each row's direction. ``wins``/``losses`` count the queries where
  the system is better/worse by that direction; ``delta`` stays ``value − baseline_value``.
* A row names the compared system by its ``by`` columns (under their own names) and the
  baseline by ``baseline_<by>`` columns (:func:`compare_columns` gives the order); several ``by``
  columns stay separate columns in their own types (the report, the plots and the CLI join
  them with ``" / "`` for display only).
* ``value``/``baseline_value`` are each system's summary over the paired queries (the
  geometric mean for ``gm_map``/``gm_bpref``, the NaN-free mean for correlations), and
  ``baseline_overall``/``system_overall`` its summary over all the queries it has a value for:
  what :func:`~polars_rankeval.evaluate` prints for it (with ``baseline_queries`` /
  ``system_queries``).
* A geometric mean is tested on its own scale: the logs of the per-query values (floored at
  trec_eval's 0.00001), so ``ci_low``/``ci_high`` and ``effect_size`` of such rows are on the
  log scale (``test_scale = "log"``).
* Counts (``num_rel_ret``: evaluate sums them), metrics with no direction (``num_q``) and
  per-system metrics are refused with a message: a paired per-query test does not apply.
* A column that is not one of our metrics is a higher-is-better mean unless declared with
  ``direction=`` (or its list shorthand ``lower_is_better=``); ``direction=`` also overrides
  one of our metrics' own direction (``direction={"arp@10": "higher"}``). ``direction_source``
  says which (``"metric"``, ``"option"``, ``"assumed"``). :func:`~polars_rankeval.report`, the
  plots and :func:`~polars_rankeval.check` read the directions from these columns.
* :func:`compare` (which has the log) adds how far the order of tied scores can move each Δ,
  ``tie_range``, and ``tie_flip``: whether its sign or significance could change within it
  (:func:`polars_rankeval.ties.with_tie_flags`); the report names those comparisons.
* Metrics whose value depends on the list depth (uncut ``frp`` and ``mean_rank``) are compared
  with a :class:`~polars_rankeval.errors.DepthWarning` when the systems' list depths differ
  (:mod:`polars_rankeval.comparison._depth`).

Statistics (``d`` = system − baseline per query on the test scale, ``n`` paired queries):

* ``effect_size`` = mean(d) / sd(d) (Cohen's d_z, Sakai's paired ES), signed system − baseline.
* ``test="t"``: paired Student t, two-sided (scipy ``ttest_rel``); ``"wilcoxon"``: signed-rank
  (scipy ``wilcoxon`` defaults); ``"sign"``: exact binomial on wins vs losses (``binomtest``);
  ``"randomization"``: Fisher's paired sign-flip test, exact when ``2^n <= n_resamples``, else
  Monte Carlo; ``"bootstrap"``: queries resampled with replacement, percentile interval and
  shifted-bootstrap p; ``"tukey"``: randomized Tukey HSD over all systems (scores permuted
  within each query; the statistic is the range of the system means); ``"tukey_hsd"``: the
  parametric Tukey HSD over the two-way ANOVA without replication (systems × queries), as
  ranx and Sakai's textbook. Both Tukey tests control the family-wise error themselves.
  No test reports a p-value below what its null distribution can produce for ``n`` queries
  (see :mod:`polars_rankeval.comparison._stats`).
* ``ci_low``/``ci_high``: the interval of mean(d) at ``1 − alpha``: percentile bootstrap for
  ``"bootstrap"``, Tukey's simultaneous interval for ``"tukey_hsd"``, the paired t-interval for
  every other test.

Floating-point noise never decides a result: differences within ``1e-12`` of zero (relative to
the values) are ties, and resampled statistics within ``1e-9`` (relative to ``Σ|d|``) of the
observed one count as "at least as extreme". Infinite per-query values and two systems whose
``by`` values join to the same name are errors.
"""

from __future__ import annotations

from polars_rankeval.comparison._bootstrap import bootstrap
from polars_rankeval.comparison._compare import (
    CORRECTION_NAMES,
    CORRECTIONS,
    STATISTICS,
    TEST_NAMES,
    TESTS,
    compare,
    compare_columns,
    compare_per_query,
    readable_interval,
)
from polars_rankeval.comparison._corrections import adjust
from polars_rankeval.comparison._pairing import SYSTEM_SEPARATOR
from polars_rankeval.comparison._power import discriminative_power, queries_needed
from polars_rankeval.comparison._report import Report, report
from polars_rankeval.comparison._rows import MULTI_SYSTEM_TESTS, Test
from polars_rankeval.comparison._stats import randomization_p, tukey_hsd_p

__all__ = [
    "CORRECTIONS",
    "CORRECTION_NAMES",
    "MULTI_SYSTEM_TESTS",
    "STATISTICS",
    "SYSTEM_SEPARATOR",
    "TESTS",
    "TEST_NAMES",
    "Report",
    "Test",
    "adjust",
    "bootstrap",
    "compare",
    "compare_columns",
    "compare_per_query",
    "discriminative_power",
    "queries_needed",
    "randomization_p",
    "readable_interval",
    "report",
    "tukey_hsd_p",
]

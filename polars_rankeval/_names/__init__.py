"""The metric grammar (private): our metric strings, trec_eval's and ir_measures' names.

``registry`` holds the families table and parses every dialect into
:class:`~polars_rankeval.metrics.Metric` objects; ``ir_measures`` translates ir_measures' names;
``split`` splits a comma-separated metric list; ``did_you_mean`` words the suggestions of an
unknown name. The public entry points are re-exported at the top level
(:func:`polars_rankeval.parse_metric`, :func:`polars_rankeval.known_metrics`).
"""

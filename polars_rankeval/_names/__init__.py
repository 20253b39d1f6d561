"""The metric grammar (private): one families table, one parser, a module per dialect.

``families`` is THE table (each family once: its string's name, builder, cutoff rule, one-line
description; the namespace methods, the builder aliases and the docs' list come from it);
``registry`` is the one parser over every dialect (the API and the command line call it);
``ours`` reads our strings (``ndcg@10(gain=exp)``, sweeps), ``trec_eval`` trec_eval's measures,
``-m`` forms and printed names, ``ir_measures`` ir_measures' names; ``split`` splits a
comma-separated metric list; ``did_you_mean`` words the suggestions of an unknown name. The
public entry points are re-exported at the top level (:func:`polars_rankeval.parse_metric`,
:func:`polars_rankeval.known_metrics`).
"""

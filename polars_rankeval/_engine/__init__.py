"""The evaluation engine (private): one log's route from input to result.

A log enters :func:`~polars_rankeval._engine.evaluate.evaluate` and goes through the stages in
order: take the input (``read_once``, ``columns``, ``tables``), check it (``validation``), plan
(``settings``, ``context``, ``plan``), run (``passes``, ``partial``, ``spill``, ``progress``) and
summarise (``summary``, ``exact_sum``). ``meaning`` says what each result column means
(direction and summary rule) for every layer above; ``warn`` points warnings at the user's line.
Nothing here is public API: the package's top level re-exports what users call.
"""

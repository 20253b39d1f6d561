"""``rank-eval off-policy`` and ``rank-eval interleaving``: yesterday's logs from the shell.

``rank-eval off-policy LOG --target new=pi_new --propensity pscore --reward click
[-e ips,snips,dr] ...`` prints :func:`polars_rankeval.off_policy` (``--slate``:
:func:`polars_rankeval.slate_off_policy`, one row per slate position). ``rank-eval
interleaving LOG --team team --click click --query impression`` prints
:func:`polars_rankeval.interleaving`. Both read a Parquet/CSV/NDJSON log (a file, a directory
or a quoted glob of Parquet files) lazily; the options are the Python functions' keywords, in
the command line's spelling.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Literal

import polars as pl

from polars_rankeval.cli._args import _alpha, _format_from, _Parser, _positive_int, _split_by
from polars_rankeval.cli._errors import CliError
from polars_rankeval.cli._inputs import _check_output, _input_errors_named, _scan
from polars_rankeval.cli._output import _text_table, _write

OffPolicyFormat = Literal["table", "csv", "json", "parquet"]
_FORMATS: tuple[OffPolicyFormat, ...] = ("table", "csv", "json", "parquet")
_SUFFIXES: dict[str, OffPolicyFormat] = {
    ".csv": "csv",
    ".json": "json",
    ".txt": "table",
    ".parquet": "parquet",
}
_TABLE_WIDTH = 1000  # one line per estimate: the columns are not wrapped


def _common(parser: argparse.ArgumentParser) -> None:
    """The options every off-policy command shares: segments, output, digits."""
    parser.add_argument(
        "--by",
        action="append",
        default=[],
        help="segment column(s): one estimate per value; comma-separated or repeated",
    )
    parser.add_argument("--alpha", type=_alpha, default=0.05, help="interval level 1 - alpha")
    parser.add_argument(
        "--per-query", action="store_true", help="one row per logged unit instead of a summary"
    )
    parser.add_argument(
        "--format",
        choices=_FORMATS,
        default=None,
        help="table (default), csv, json or parquet (needs -o); -o PATH's suffix picks it too",
    )
    parser.add_argument("-o", "--output", metavar="PATH", help="write here instead of stdout")
    parser.add_argument(
        "-d", "--digits", type=int, default=4, help="decimals in the table (default 4)"
    )


def _named_columns(values: Sequence[str], option: str) -> dict[str, str] | None:
    """``--target new=pi_new --target old`` -> {"new": "pi_new", "old": "old"}."""
    if not values:
        return None
    named: dict[str, str] = {}
    for value in (part for text in values for part in text.split(",") if part):
        name, _, column = value.partition("=")
        name, column = name.strip(), (column or name).strip()
        if not name or not column:
            msg = f"{option} {value!r}: give COLUMN or NAME=COLUMN"
            raise CliError(msg)
        if name in named:
            msg = f"{option}: the name {name!r} is given twice"
            raise CliError(msg)
        named[name] = column
    return named


def _off_policy_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rank-eval off-policy",
        description="Estimate what target policies would have earned on a log another "
        "(logging) policy produced: IPS, SNIPS, DM, DR and their variants (--slate: the slate "
        "estimators), with standard errors, intervals and weight diagnostics.",
    )
    parser.add_argument("log", metavar="LOG", help="the log: Parquet, CSV or NDJSON")
    parser.add_argument(
        "-e",
        "--estimators",
        default=None,
        help="comma-separated estimators (default: ips,snips; --slate: sips,rips)",
    )
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="[NAME=]COLUMN",
        help="a target policy's probability column (of the logged action; --slate: of the "
        "shown item at its position), NAME=COLUMN to name it; repeat or comma-separate for "
        "several policies (required)",
    )
    parser.add_argument(
        "--propensity",
        default="propensity",
        help="the logging policy's probability column (default: propensity)",
    )
    parser.add_argument("--reward", default="reward", help="the reward column (default: reward)")
    parser.add_argument("--reward-model", help="the reward model's prediction for the row")
    parser.add_argument(
        "--target-reward-model",
        action="append",
        default=[],
        metavar="[NAME=]COLUMN",
        help="per target policy, the reward model's expectation under it (DM, DR ...); "
        "NAME matches --target's",
    )
    parser.add_argument("--query", help="the unit id (context, impression; --slate: the slate)")
    parser.add_argument("--item", help="the action column (with --logged)")
    parser.add_argument(
        "--logged",
        help="candidate form: a boolean column marking the logged action among a context's rows",
    )
    parser.add_argument("--clip", type=float, help="clip importance weights at this value")
    parser.add_argument("--switch-threshold", type=float, help="Switch-DR's weight threshold")
    parser.add_argument("--shrinkage", type=float, help="DR-OS's shrinkage lambda")
    parser.add_argument(
        "--slate", action="store_true", help="a slate log: one row per (slate, position)"
    )
    parser.add_argument(
        "--position", default="position", help="--slate: the position column (default: position)"
    )
    parser.add_argument("--baseline", help="compare every other target policy with this one")
    parser.add_argument(
        "--interval",
        choices=("normal", "bootstrap"),
        default="normal",
        help="normal (default, from the standard error) or bootstrap (percentile)",
    )
    parser.add_argument(
        "--n-resamples", type=_positive_int, default=1000, help="bootstrap draws (default 1000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    _common(parser)
    return parser


def _off_policy_table(args: argparse.Namespace) -> pl.DataFrame:
    from polars_rankeval.offpolicy import off_policy, slate_off_policy

    target = _named_columns(args.target, "--target")
    if target is None:
        msg = "--target COLUMN is required: the target policy's probability column"
        raise CliError(msg)
    target_reward_model = _named_columns(args.target_reward_model, "--target-reward-model")
    options: dict[str, object] = {
        "target": target,
        "propensity": args.propensity,
        "reward": args.reward,
        "reward_model": args.reward_model,
        "target_reward_model": target_reward_model,
        "by": _split_by(args.by) or None,
        "alpha": args.alpha,
        "per_query": args.per_query,
        "baseline": args.baseline,
        "interval": args.interval,
        "n_resamples": args.n_resamples,
        "seed": args.seed,
    }
    data = _scan(args.log)
    if args.slate:
        given = [
            flag
            for flag, value in (
                ("--logged", args.logged),
                ("--item", args.item),
                ("--clip", args.clip),
                ("--switch-threshold", args.switch_threshold),
                ("--shrinkage", args.shrinkage),
            )
            if value is not None
        ]
        if given:
            msg = f"{', '.join(given)}: not options of the slate estimators (--slate)"
            raise CliError(msg)
        return slate_off_policy(
            data,
            args.estimators or "sips,rips",
            query=args.query or "query",
            position=args.position,
            **options,  # type: ignore[arg-type]
        )
    if (args.per_query or args.baseline) and not args.query:
        msg = (
            f"{'--per-query' if args.per_query else '--baseline'} needs --query COLUMN: the id "
            "of each logged decision, which pairs the target policies decision by decision"
        )
        raise CliError(msg)
    return off_policy(
        data,
        args.estimators or "ips,snips",
        query=args.query,
        item=args.item,
        logged=args.logged,
        clip=args.clip,
        switch_threshold=args.switch_threshold,
        shrinkage=args.shrinkage,
        **options,  # type: ignore[arg-type]
    )


def _interleaving_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rank-eval interleaving",
        description="Team-draft interleaving and multileaving: per pair of rankers, the "
        "impressions each won, lost and tied on clicks, the preference and a sign test.",
    )
    parser.add_argument("log", metavar="LOG", help="the log: Parquet, CSV or NDJSON")
    parser.add_argument(
        "--team", default="team", help="the ranker that contributed the row's item (default: team)"
    )
    parser.add_argument("--click", default="click", help="the click column, 0/1 (default: click)")
    parser.add_argument("--query", default="query", help="the impression id (default: query)")
    parser.add_argument("--baseline", help="compare every other ranker with this one")
    _common(parser)
    return parser


def _interleaving_table(args: argparse.Namespace) -> pl.DataFrame:
    from polars_rankeval.offpolicy import interleaving

    return interleaving(
        _scan(args.log),
        team=args.team,
        click=args.click,
        query=args.query,
        by=_split_by(args.by) or None,
        baseline=args.baseline,
        alpha=args.alpha,
        per_query=args.per_query,
    )


def _render(table: pl.DataFrame, fmt: OffPolicyFormat, digits: int) -> str | pl.DataFrame:
    if fmt == "csv":
        return table.write_csv()
    if fmt == "json":
        return table.write_json() + "\n"
    if fmt == "parquet":
        return table
    return _text_table(table, digits=digits, width=_TABLE_WIDTH)


def _run(args: argparse.Namespace) -> None:
    fmt = _format_from(args.format, args.output, _FORMATS, _SUFFIXES, "table")
    if args.digits < 0:
        msg = f"--digits must be 0 or more, got {args.digits}"
        raise CliError(msg)
    _check_output(args.output, [args.log])
    with _input_errors_named([args.log], []):
        found = args.make_table(args)
    _write(_render(found, fmt, args.digits), args.output)


def _run_off_policy(argv: Sequence[str]) -> None:
    """``rank-eval off-policy LOG --target ...``."""
    args = _off_policy_parser().parse_args(argv)
    args.make_table = _off_policy_table
    _run(args)


def _run_interleaving(argv: Sequence[str]) -> None:
    """``rank-eval interleaving LOG ...``."""
    args = _interleaving_parser().parse_args(argv)
    args.make_table = _interleaving_table
    _run(args)

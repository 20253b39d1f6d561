"""Evaluation settings: the convention preset, then the explicit keywords laid over it.

Both entry points (frames and the expression namespace) resolve their settings here, so they
read the same ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from polars_rankeval._engine.columns import (
    check_relevance_level,
)
from polars_rankeval._engine.context import (
    Ties,
    check_ties,
)
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.validation import (
    Duplicates,
    NanScores,
)
from polars_rankeval.conventions import (
    Convention,
    NegativeLabels,
    Unretrieved,
    get_convention,
)

MissingQueries = Literal["skip", "zero"]
EmptyQueries = Literal["zero", "drop"]
Unlabelled = Literal["unjudged", "zero"]


@dataclass(frozen=True)
class Settings:
    """Evaluation settings after explicit keywords are laid over the convention preset."""

    relevance_level: int
    missing_queries: MissingQueries
    ties: Ties
    negative_labels: NegativeLabels
    unretrieved: Unretrieved
    duplicates: Duplicates
    nan_scores: NanScores
    empty_queries: EmptyQueries = "zero"
    # Preset-only (no keyword): "zero" for tools with no judgment concept (sklearn,
    # torchmetrics), whose every supplied row has a target, 0 when absent; "unjudged": trec_eval's
    # unjudged row, which leaves a list without judgments unevaluated.
    unlabelled: Unlabelled = "unjudged"


_TREC_SETTINGS: dict[str, Any] = {
    "relevance_level": 1,
    "missing_queries": "skip",
    "ties": "trec",
    "negative_labels": "unjudged",
    "unretrieved": "count",
    "duplicates": "error",
    "nan_scores": "error",
    "empty_queries": "zero",
    "unlabelled": "unjudged",
}


def settings_for(convention: object, keywords: Mapping[str, Any]) -> tuple[Convention, Settings]:
    """The preset named by ``convention`` and the settings after the explicit keywords.

    Both entry points (frames and the expression namespace) pass their keyword arguments
    (``locals()``) here and the settings are picked by name, so both read the same ones; a
    name absent from ``keywords`` follows the preset. An explicit ``ties=`` also overrides the
    preset's per-metric tie defaults.
    """
    explicit = {name: keywords.get(name) for name in _TREC_SETTINGS}
    preset = get_convention(convention)
    if explicit["ties"] is not None:
        preset = preset.without_ties()
    return preset, resolve_settings(preset, explicit)


def resolve_settings(convention: Convention, explicit: dict[str, Any]) -> Settings:
    """Explicit keywords win over the preset, which wins over trec_eval's defaults."""
    chosen = {
        key: explicit[key]
        if explicit.get(key) is not None
        else convention.settings.get(key, default)
        for key, default in _TREC_SETTINGS.items()
    }
    # the canonical spelling of each choice: values are matched case-insensitively
    choices = {
        "missing_queries": ["skip", "zero"],
        "negative_labels": ["unjudged", "nonrelevant"],
        "unretrieved": ["count", "drop"],
        "duplicates": ["error", "first", "last", "max_score"],
        "nan_scores": ["error", "last"],
        "empty_queries": ["zero", "drop"],
        "unlabelled": ["unjudged", "zero"],
    }
    for key, allowed in choices.items():
        chosen[key] = check_choice(key, chosen[key], allowed)
    return Settings(
        relevance_level=check_relevance_level(chosen["relevance_level"]),
        missing_queries=chosen["missing_queries"],
        ties=check_ties(chosen["ties"]),
        negative_labels=chosen["negative_labels"],
        unretrieved=chosen["unretrieved"],
        duplicates=chosen["duplicates"],
        nan_scores=chosen["nan_scores"],
        empty_queries=chosen["empty_queries"],
        unlabelled=chosen["unlabelled"],
    )

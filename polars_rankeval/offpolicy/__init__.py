"""Off-policy evaluation: estimate a new ranker's value from the logs another policy produced."""

from __future__ import annotations

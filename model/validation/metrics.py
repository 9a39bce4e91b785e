"""Errors of estimates against measurements, and the goal they are held to.

A point's error is estimate / measured - 1. A set of points is summarised by the geometric
mean of |error| (each |error| taken at least the point's measurement precision, so an
estimate that lands within the reading of the source counts as that close, not as zero),
the mean of |error| and the largest |error|.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: The goal (issue: geomean |error| <= 10%, max <= 20% on the points not used for
#: calibration, for iteration times and for the NCCL curve at sizes >= GOAL_MIN_BYTES).
GOAL_GEOMEAN = 0.10
GOAL_MAX = 0.20
GOAL_MIN_BYTES = 2**20


def error(estimate: float, measured: float) -> float:
    return estimate / measured - 1.0


@dataclass(frozen=True)
class Summary:
    n: int
    geomean_abs: float
    mean_abs: float
    max_abs: float

    @property
    def meets_goal(self) -> bool:
        return self.n > 0 and self.geomean_abs <= GOAL_GEOMEAN and self.max_abs <= GOAL_MAX

    def to_dict(self) -> dict:
        return {
            "points": self.n,
            "geomean_abs_error": self.geomean_abs,
            "mean_abs_error": self.mean_abs,
            "max_abs_error": self.max_abs,
            "meets_goal": self.meets_goal,
        }


def summarise(errors: Sequence[float], precisions: Sequence[float]) -> Summary:
    if len(errors) != len(precisions):
        raise ValueError("one precision per error")
    if not errors:
        return Summary(0, math.nan, math.nan, math.nan)
    floored = [max(abs(e), p) for e, p in zip(errors, precisions, strict=True)]
    geo = math.exp(sum(math.log(x) for x in floored) / len(floored))
    return Summary(
        len(errors),
        geo,
        sum(abs(e) for e in errors) / len(errors),
        max(abs(e) for e in errors),
    )

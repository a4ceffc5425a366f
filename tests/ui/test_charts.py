"""Cycles chart axes (issue 31): the reward axis stays within the data's own range; a flat series of
never-negative values (every reward 0.000) gets no negative ticks."""

from __future__ import annotations

import re

from spanrl.ui.charts import line_chart

TICK = re.compile(r">(-?\d+(?:\.\d+)?)</text>")


def _y_ticks(svg: str, xs: list[int]) -> list[float]:
    labels = [float(t) for t in TICK.findall(svg)]
    return labels[: len(labels) - len(xs)]  # the x labels (cycle numbers) come last


def test_flat_zero_rewards_get_no_negative_axis() -> None:
    ticks = _y_ticks(line_chart("reward", [0, 1, 2], [("train", [0.0, 0.0, 0.0])]), [0, 1, 2])
    assert ticks and min(ticks) == 0.0


def test_axis_covers_the_data_and_stays_near_it() -> None:
    ticks = _y_ticks(line_chart("reward", [0, 1, 2], [("train", [0.2, 0.5, 0.9])]), [0, 1, 2])
    assert min(ticks) >= 0.0 and max(ticks) <= 1.0
    flat_negative = _y_ticks(line_chart("x", [0, 1], [("s", [-2.0, -2.0])]), [0, 1])
    assert min(flat_negative) < -2.0 < max(flat_negative)

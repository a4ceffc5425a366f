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


def test_within_keeps_a_flat_top_reward_axis_inside_zero_to_one() -> None:
    ones = _y_ticks(line_chart("reward", [0, 1], [("v", [1.0, 1.0])], within=(0.0, 1.0)), [0, 1])
    assert max(ones) == 1.0 and min(ones) >= 0.0
    unbounded = _y_ticks(line_chart("reward", [0, 1], [("v", [1.0, 1.0])]), [0, 1])
    assert max(unbounded) > 1.0  # without it the flat series is padded past 1
    outside = _y_ticks(line_chart("r", [0, 1], [("v", [-0.5, 1.5])], within=(0.0, 1.0)), [0, 1])
    assert min(outside) <= -0.5 and max(outside) >= 1.5  # data beyond the range: the axis follows the data


def test_snapshot_facts_are_words_not_raw_keys() -> None:
    from spanrl.ui.pages import snapshot_facts

    facts = dict(snapshot_facts({
        "created_at": "2026-11-26T16:44:24.921895+00:00", "rows": 57, "schema_version": 2, "spanrl_version": "0.1.0",
        "min_time_ns": 1795710656667478772, "max_time_ns": 1795710730793562545, "source_files": ["a"],
        "stats": {"rollouts": 26, "tasks": 20, "llm_calls": 64, "reward": {"mean": 0.5, "min": 0.0, "max": 1.0},
                  "air_hits_by_rule": {"tool_error": 10, "exception": 1}}}))
    assert facts["built"] == "2026-11-26 16:44:24 UTC"
    assert facts["holds"] == "57 transitions, 26 rollouts, 20 tasks, 64 LLM calls"
    assert facts["spans from"].endswith(" UTC") and "1795" not in facts["spans from"]
    assert facts["AIR hits"] == "11 (tool_error 10, exception 1)"
    assert facts["written by"] == "spanrl 0.1.0, schema v2, from 1 span file"

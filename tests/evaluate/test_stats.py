"""evaluate/stats.py against hand-computed cases."""

from __future__ import annotations

import pytest

from spanrl.evaluate.stats import (
    BETTER,
    NO_DIFFERENCE,
    WORSE,
    bootstrap_interval,
    compare,
    task_means,
    verdict,
)


def test_task_means_average_the_samples() -> None:
    assert task_means({"a": [1.0, 0.0], "b": [1.0, 1.0], "c": []}) == {"a": 0.5, "b": 1.0}


def test_constant_values_give_a_point_interval() -> None:
    assert bootstrap_interval([0.25] * 5) == (0.25, 0.25)


def test_interval_is_within_range_and_seeded() -> None:
    values = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    lo, hi = bootstrap_interval(values, resamples=2000, seed=3)
    assert 0.0 <= lo < 0.5 < hi <= 1.0
    assert bootstrap_interval(values, resamples=2000, seed=3) == (lo, hi)


def test_verdicts() -> None:
    assert verdict((0.1, 0.3)) == BETTER
    assert verdict((-0.3, -0.1)) == WORSE
    assert verdict((-0.1, 0.2)) == NO_DIFFERENCE


def test_real_difference_is_better_and_reversed_is_worse() -> None:
    base = {f"t{i}": [0.0, 0.0] for i in range(8)}
    good = {f"t{i}": [1.0, 1.0] for i in range(8)}
    assert compare(base, good, 0.95, 2000, 0)["verdict"] == BETTER
    assert compare(good, base, 0.95, 2000, 0)["verdict"] == WORSE


def test_same_rewards_differ_by_nothing() -> None:
    base = {f"t{i}": [float(i % 2)] for i in range(8)}
    out = compare(base, dict(base), 0.95, 2000, 0)
    assert out["diff"] == 0.0 and out["verdict"] == NO_DIFFERENCE


def test_pairing_finds_a_small_consistent_gain_that_unpaired_intervals_miss() -> None:
    # task difficulty varies widely (0 .. 0.9); the candidate is +0.05 on every task
    base = {f"t{i}": [i / 10] for i in range(10)}
    cand = {f"t{i}": [i / 10 + 0.05] for i in range(10)}
    b_lo, b_hi = bootstrap_interval([i / 10 for i in range(10)], seed=1)
    c_lo, c_hi = bootstrap_interval([i / 10 + 0.05 for i in range(10)], seed=1)
    assert c_lo < b_hi  # the unpaired intervals overlap: no difference visible that way
    out = compare(base, cand, 0.95, 2000, 0)
    assert out["verdict"] == BETTER and out["diff"] == pytest.approx(0.05)


def test_no_common_task_is_an_error() -> None:
    with pytest.raises(ValueError, match="share no scored task"):
        compare({"a": [1.0]}, {"b": [1.0]}, 0.95, 100, 0)


def test_policy_names_and_refusals(tmp_path) -> None:
    from spanrl.errors import InputError
    from spanrl.evaluate.run import EvalConfig, evaluate, rollout_config, split_policy

    assert split_policy("0004-x=http://h:1/v1") == ("0004-x", "http://h:1/v1")
    assert split_policy("http://h:1/v1?a=b") == ("http://h:1/v1?a=b", "http://h:1/v1?a=b")
    tasks = tmp_path / "t.jsonl"
    tasks.write_text('{"input": "x"}\n')
    cfg = EvalConfig(tasks=tasks, policies=["LATEST"], command=["agent"], score="s", data=tmp_path / "d")
    with pytest.raises(InputError, match="spanrl serve"):
        rollout_config(cfg, "LATEST")
    rc = rollout_config(cfg, "a=http://h:1/v1")
    assert rc.run_id.startswith("eval-") and "spanrl.rollout.purpose=eval" in rc.env["OTEL_RESOURCE_ATTRIBUTES"]
    with pytest.raises(InputError, match="repeat"):
        evaluate(EvalConfig(tasks=tasks, policies=["a=http://h:1/v1", "a=http://h:2/v1"], command=["agent"],
                            score="s", data=tmp_path / "d"))

"""``spanrl judge`` turns task groups into feedback rows that reach the snapshot as rewards with group
advantages; malformed answers are retried then rejected; the cache makes a re-run free; a changed
group is judged again."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.judge.trajectories import truncate
from tests.judge.fake_judge import FakeJudge
from tests.judge.lake import write_rollouts
from tests.rollout.lake import ingest, snapshot_rollouts

ROLLOUTS = [("a0", "add", "What is 40 + 2?", "It is 42."), ("a1", "add", "What is 40 + 2?", "It is 41."),
            ("a2", "add", "What is 40 + 2?", "Maybe 44."),
            ("m0", "mul", "What is 6 * 7?", "42, since 6 * 7 = 42."), ("m1", "mul", "What is 6 * 7?", "It is 36."),
            ("lone", "sub", "What is 50 - 8?", "42")]  # a group of one: nothing to compare it with


def judge(data: Path, url: str, *extra: str, env: dict | None = None):
    result = CliRunner().invoke(cli, ["judge", "--data", str(data), "--judge-url", url, "--judge-model", "judge-m",
                                      *extra], env=env)
    return result


@pytest.fixture
def data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    write_rollouts(data, ROLLOUTS)
    ingest(data, "--missing-reward", "zero")  # the rollouts without reward are in the snapshot to judge
    return data


def test_group_scores_become_rewards_with_group_advantages(data: Path) -> None:
    with FakeJudge(script=["malformed"], good_word="42") as fake:
        result = judge(data, fake.url, env={"OPENAI_API_KEY": "sk-test"})
    assert result.exit_code == 0, result.output
    assert "2 judged, 0 cached, 0 rejected; 5 rollouts scored" in result.output
    assert "spend: 3 call(s)" in result.output and "1 malformed answer(s)" in result.output
    assert {s["auth"] for s in fake.seen} == {"Bearer sk-test"}
    rows = [json.loads(line) for f in (data / "feedback").glob("judge-*.jsonl") for line in f.read_text().splitlines()]
    assert {r["name"] for r in rows} == {"judge"} and {r["judge_model"] for r in rows} == {"judge-m"}
    assert len({r["rubric_hash"] for r in rows}) == 1

    ingest(data)  # default: rollouts without reward dropped; the judge's rows are rewards now
    snap = snapshot_rollouts(data)
    assert set(snap) == {"a0", "a1", "a2", "m0", "m1"}
    for task in ("add", "mul"):
        members = {k: v for k, v in snap.items() if v["task_id"] == task}
        rewards = {k: fake.score(next(a for r, _, _, a in ROLLOUTS if r == k)) for k in members}
        assert {k: v["final_reward"] for k, v in members.items()} == pytest.approx(rewards)
        mean, std = statistics.mean(rewards.values()), statistics.stdev(rewards.values())
        for k, v in members.items():
            assert v["advantage"] == pytest.approx((rewards[k] - mean) / (std + 1e-6), rel=1e-4)


def test_the_task_shown_is_the_request_past_worked_examples(tmp_path: Path) -> None:
    """An agent keeping a worked example before the task: the judge is shown the real question as the task,
    and each trajectory from the answer on (not the example's question and answer)."""
    data = tmp_path / "data"
    write_rollouts(data, ROLLOUTS, history=(("What is 1 + 1?", "It is 2."),))
    ingest(data, "--missing-reward", "zero")
    with FakeJudge(good_word="42") as fake:
        result = judge(data, fake.url)
    assert result.exit_code == 0, result.output
    asked = [s["body"]["messages"][-1]["content"] for s in fake.seen]
    tasks = {text.split("Task:\n")[1].split("\n\n")[0] for text in asked}
    assert tasks == {"[system] You are a calculator.\n[user] What is 40 + 2?",
                     "[system] You are a calculator.\n[user] What is 6 * 7?"}
    assert not any("1 + 1" in text or "It is 2." in text for text in asked)


def test_rerun_is_cached_and_a_changed_group_is_judged_again(data: Path) -> None:
    with FakeJudge() as fake:
        assert judge(data, fake.url).exit_code == 0
        calls = len(fake.seen)
        again = judge(data, fake.url)
        assert "0 judged, 2 cached" in again.output and "spend: 0 call(s)" in again.output
        assert len(fake.seen) == calls
        write_rollouts(data, [("a3", "add", "What is 40 + 2?", "42!")], name="traces-2026-01-02T00-00-00.000.jsonl")
        ingest(data, "--missing-reward", "zero")
        changed = judge(data, fake.url, "--all")  # add has a new member: judged again; mul is unchanged
    assert "1 judged, 1 cached" in changed.output, changed.output
    assert len(fake.seen) == calls + 1 and fake.seen[-1]["body"]["messages"][-1]["content"].count("<trajectory") == 4


def test_malformed_answers_are_rejected_and_counted_never_guessed(data: Path) -> None:
    with FakeJudge(default="malformed", script=["bad_ids", "error"]) as fake:
        result = judge(data, fake.url, "--retries", "2", "--concurrency", "1")
    assert result.exit_code == 0, result.output
    assert "0 judged, 0 cached, 2 rejected; 0 rollouts scored" in result.output
    assert "spend: 6 call(s)" in result.output and "5 malformed answer(s), 1 failed call(s)" in result.output
    assert not list((data / "feedback").glob("judge-*.jsonl"))


def test_a_snapshot_without_unrewarded_rollouts_says_how_to_build_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_rollouts(data, ROLLOUTS)
    (data / "feedback").mkdir()
    (data / "feedback" / "f.jsonl").write_text('{"rollout_id": "a0", "value": 1}\n')
    ingest(data)
    result = judge(data, "http://127.0.0.1:9/v1")
    assert result.exit_code == 2 and "--missing-reward zero" in result.output


def test_api_key_comes_from_the_named_environment_variable(data: Path) -> None:
    missing = judge(data, "http://127.0.0.1:9/v1", "--api-key-env", "NO_SUCH_KEY_VAR", env={"NO_SUCH_KEY_VAR": None})
    assert missing.exit_code == 2 and "NO_SUCH_KEY_VAR" in missing.output
    with FakeJudge() as fake:
        judge(data, fake.url, "--api-key-env", "MY_JUDGE_KEY", env={"MY_JUDGE_KEY": "k-1"})
    assert fake.seen and {s["auth"] for s in fake.seen} == {"Bearer k-1"}


def test_truncation_keeps_head_and_tail_with_a_visible_marker() -> None:
    text = "HEAD " + "x" * 4000 + " TAIL"
    cut = truncate(text, 100)
    assert cut.startswith("HEAD ") and cut.endswith(" TAIL") and "tokens truncated ...]" in cut
    assert len(cut) <= 100 * 4 and truncate("short", 100) == "short"

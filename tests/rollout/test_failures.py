"""Timeouts kill the whole process group; crashes and timeouts are recorded per attempt (run log and
a ``spanrl.rollout`` span in the lake); every attempt has its own rollout id; resume rules."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from spanrl.errors import InputError
from spanrl.rollout import RolloutConfig, run_rollouts
from spanrl.rollout.process import resource_attributes
from tests.rollout.lake import ingest, query_spans

# a crash (stderr, exit 3), and a hang that leaves a grandchild behind (its pid in the task's file)
CRASH = ["sh", "-c", 'case "$SPANRL_TASK_INPUT" in crash*) echo "boom: $SPANRL_ROLLOUT_ID" >&2; exit 3;; '
         '*) sleep 300 & echo $! > "{task_id}.pid"; wait;; esac']


def _config(tmp_path: Path, **kw) -> RolloutConfig:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task_id": "c", "input": "crash please"}\n{"task_id": "h", "input": "hang"}\n')
    defaults = dict(tasks=tasks, n=1, command=[*CRASH[:2], CRASH[2].replace("{task_id}", str(tmp_path / "{task_id}"))],
                    data=tmp_path / "data", policy_url="http://127.0.0.1:9/v1", run_id="r1", timeout_s=1.5,
                    kill_grace_s=0.5, retries=1)
    return RolloutConfig(**{**defaults, **kw})


def _alive(pid: int, wait_s: float = 3.0) -> bool:
    """Running (not gone, not a zombie waiting for init to reap it) after up to ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.05)
    return True


def test_crash_and_timeout_are_recorded_and_the_group_is_killed(tmp_path: Path) -> None:
    summary = run_rollouts(_config(tmp_path))
    assert summary.statuses == {"failed": 2, "timeout": 2} and summary.samples_failed == 2
    grandchild = int((tmp_path / "h.pid").read_text())
    assert not _alive(grandchild), "the timed-out agent's background child survived"
    ingest(tmp_path / "data", "--no-transitions")
    spans = {r["rid"]: r for r in query_spans(tmp_path / "data", """
        SELECT attributes->>'spanrl.rollout_id' AS rid, attributes->>'spanrl.rollout.status' AS status,
               CAST(attributes->>'process.exit.code' AS INT) AS code, attributes->>'spanrl.rollout.stderr_tail' AS err,
               status_code FROM spans WHERE name = 'spanrl.rollout'""")}
    # each attempt its own rollout id: the retry never mixes its spans with the first attempt's
    assert set(spans) == {"r1.c.0", "r1.c.0.a1", "r1.h.0", "r1.h.0.a1"}
    assert spans["r1.c.0"]["code"] == 3 and spans["r1.c.0"]["err"].strip() == "boom: r1.c.0"
    assert spans["r1.h.0.a1"]["status"] == "timeout" and spans["r1.h.0.a1"]["status_code"] == "ERROR"


def test_resume_skips_samples_that_used_their_attempts_unless_asked(tmp_path: Path) -> None:
    run_rollouts(_config(tmp_path, otlp="http://127.0.0.1:9", retries=0, timeout_s=0.5))  # spans undeliverable: counted
    again = run_rollouts(_config(tmp_path, otlp="http://127.0.0.1:9", retries=0, timeout_s=0.5))
    assert again.statuses == {} and again.skipped_failed == 2
    retry = run_rollouts(_config(tmp_path, otlp="http://127.0.0.1:9", retries=0, timeout_s=0.5, retry_failed=True))
    assert retry.statuses == {"failed": 1, "timeout": 1} and len(retry.span_errors) == 2
    log = tmp_path / "data" / "runs" / "r1" / "attempts.jsonl"
    ids = [json.loads(x)["rollout_id"] for x in log.read_text().splitlines() if '"start"' in x]
    assert sorted(ids) == ["r1.c.0", "r1.c.0.a1", "r1.h.0", "r1.h.0.a1"]


def test_resource_attributes_are_appended_and_encoded() -> None:
    got = resource_attributes("service.version=2,team=x", "run.t,1.0", "t=1")
    assert got == "service.version=2,team=x,spanrl.rollout_id=run.t%2C1.0,spanrl.task_id=t%3D1"
    assert resource_attributes(None, "r", "t") == "spanrl.rollout_id=r,spanrl.task_id=t"


def test_no_policy_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--policy-url URL .* or --model PATH"):
        _config(tmp_path, policy_url=None)


def test_a_collector_already_on_the_data_root_gets_the_spans(tmp_path: Path) -> None:
    """Issue 41: beside a running collector (a gateway's) the run sends there instead of failing; one
    that holds the root without saying where it listens (an older spanrl) is an error naming --otlp."""
    from spanrl.collector.lock import CollectorLock
    from spanrl.rollout.services import embedded_collector

    with embedded_collector(tmp_path / "data") as running:
        summary = run_rollouts(_config(tmp_path, retries=0, timeout_s=0.5))
    assert summary.otlp == running.endpoint and not summary.span_errors and not summary.spans_checked
    with CollectorLock(tmp_path / "data"), pytest.raises(InputError, match="already writing .* --otlp"):
        run_rollouts(_config(tmp_path, run_id="r2"))


def test_extra_env_reaches_the_agent_but_the_runner_variables_win(tmp_path: Path) -> None:
    """``RolloutConfig.env`` (how the demo sets OTEL_SERVICE_NAME etc.) is added to every agent
    process; the runner's own variables (policy URL, ids) are set over it."""
    cmd = ["sh", "-c", 'echo "$CALC_X|$OPENAI_BASE_URL|$OTEL_RESOURCE_ATTRIBUTES"']
    summary = run_rollouts(_config(tmp_path, command=cmd, retries=0, otlp="http://127.0.0.1:9",
                                   env={"CALC_X": "from-env", "OPENAI_BASE_URL": "http://wrong/v1",
                                        "OTEL_RESOURCE_ATTRIBUTES": "team=calc"}))
    assert summary.samples_ok == 2
    out = (tmp_path / "data" / "runs" / "r1" / "logs")
    lines = sorted(p.read_text().strip() for p in out.glob("*.out"))
    assert lines == ["from-env|http://127.0.0.1:9/v1|team=calc,spanrl.rollout_id=r1.c.0,spanrl.task_id=c",
                     "from-env|http://127.0.0.1:9/v1|team=calc,spanrl.rollout_id=r1.h.0,spanrl.task_id=h"]

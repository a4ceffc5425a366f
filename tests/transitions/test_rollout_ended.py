"""Completeness without waiting, and a build that writes no snapshot says why (issue 24).

Three rollouts whose spans all end "now", ingested with the default ``--settle 10m``:
- ``ran``: run by ``spanrl rollout`` (its ``spanrl.rollout`` span, made by the runner's own code, says
  the attempt ended): complete at once;
- ``live``: open-ended traffic, no runner span: waits for the settle window;
- ``lost``: has the runner's span, but a span whose parent never arrived (and no span encloses it):
  still incomplete, ended or not.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.collector.otlpjson import traces_to_json
from spanrl.rollout.runs import Attempt
from spanrl.rollout.spans import attempt_request
from spanrl.rollout.tasks import Task
from spanrl.transitions.snapshot import read_snapshot

S = 1_000_000_000


def _kv(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def _span(tid: str, sid: str, parent: str | None, name: str, start: int, end: int, attrs: dict) -> dict:
    span = {"traceId": tid, "spanId": sid, "name": name, "kind": 1, "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(end), "attributes": [_kv(k, v) for k, v in attrs.items()]}
    if parent:
        span["parentSpanId"] = parent
    return span


def _agent(rollout_id: str, t0: int, orphan: bool = False) -> list[dict]:
    """An agent root span carrying the rollout key and one chat call under it (or, ``orphan``, under a
    parent that never arrives, outside the root's time so no repair can adopt it)."""
    tid, root = os.urandom(16).hex(), os.urandom(8).hex()
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"q {rollout_id}"}]}])
    out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "a"}], "finish_reason": "stop"}])
    start = t0 + 5 * S if orphan else t0 + S
    chat = _span(tid, os.urandom(8).hex(), os.urandom(8).hex() if orphan else root, "chat m", start, start + S,
                 {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "m",
                  "gen_ai.input.messages": msgs, "gen_ai.output.messages": out})
    return [_span(tid, root, None, "invoke_agent a", t0, t0 + 3 * S, {"spanrl.rollout_id": rollout_id}), chat]


def _runner_line(rollout_id: str, start: int, end: int) -> str:
    att = Attempt(Task(task_id="t", input="q", line={"input": "q"}), 0, 0, rollout_id, status="ok", exit_code=0)
    return traces_to_json(attempt_request(att, "run", start, end), newline=True).decode()


def test_runner_span_completes_at_once_and_the_empty_build_says_why(tmp_path: Path) -> None:
    now = time.time_ns()
    t0 = now - 6 * S  # every span ends within the 10 minute settle window of the lake's clock
    spans = _agent("ran", t0) + _agent("live", t0) + _agent("lost", t0, orphan=True)
    (tmp_path / "otel").mkdir()
    agent_line = json.dumps({"resourceSpans": [{"resource": {"attributes": [_kv("service.name", "agent")]},
                                                "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})
    (tmp_path / "otel" / "traces.jsonl").write_text(
        agent_line + "\n" + _runner_line("ran", t0, now) + _runner_line("lost", t0, now))

    empty = CliRunner().invoke(cli, ["ingest", "--data", str(tmp_path)])  # --settle 10m, --missing-reward drop
    assert empty.exit_code == 0, empty.output
    out = " ".join(empty.output.split())
    assert "snapshot: none written" in out
    live_end = max(int(s["endTimeUnixNano"]) for s in spans if s["traceId"] == spans[2]["traceId"])
    at = datetime.fromtimestamp((live_end + 600 * S) / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    assert f"1 rollout(s) wait for the settle window (--settle 10m, quiet time after a rollout's last span): " \
           f"the newest settles at {at}" in out
    assert "--settle 0s takes them now" in out
    assert "1 rollout(s) are incomplete because spans are unanchored" in out
    assert "1 complete rollout(s) have no reward and --missing-reward drop" in out

    built = CliRunner().invoke(cli, ["transitions", "build", "--data", str(tmp_path), "--missing-reward", "zero"])
    assert built.exit_code == 0, built.output
    table, manifest = read_snapshot(tmp_path)
    assert set(table.column("rollout_id").to_pylist()) == {"ran"}  # no waiting for the runner's rollout
    stats = manifest["stats"]
    assert (stats["rollouts_settling"], stats["rollouts_unanchored"], stats["rollouts_complete"]) == (1, 1, 1)
    assert "wait for the settle window" not in built.output  # a snapshot was written: no excuses printed


def test_a_runner_span_arriving_a_night_later_completes_the_rollout_as_a_rebuild_does(tmp_path: Path) -> None:
    """Night 1 holds the agent's spans (waiting: --settle 1h); night 2 only the runner's span, in a
    trace of its own: the incremental build must pull the rollout's older trace back in."""
    from spanrl.transitions.snapshot import latest_manifest

    now = time.time_ns()
    t0 = now - 6 * S
    inc, full = tmp_path / "inc", tmp_path / "full"
    agent_line = json.dumps({"resourceSpans": [{"resource": {"attributes": [_kv("service.name", "agent")]},
                                                "scopeSpans": [{"scope": {"name": "t"}, "spans": _agent("x", t0)}]}]})
    nights = [agent_line + "\n", _runner_line("x", t0, now)]
    for night, text in enumerate(nights):
        for root in (inc, full):
            (root / "otel").mkdir(parents=True, exist_ok=True)
            (root / "otel" / f"traces-{night}.jsonl").write_text(text)
        args = ["--settle", "1h", "--missing-reward", "zero"]
        assert CliRunner().invoke(cli, ["ingest", "--data", str(inc), *args]).exit_code == 0
        done = CliRunner().invoke(cli, ["ingest", "--data", str(full), "--rebuild", *args])
        assert done.exit_code == 0, done.output
    a, b = latest_manifest(inc), latest_manifest(full)
    assert a["content_hash"] == b["content_hash"] and a["stats"]["rollouts_complete"] == 1
    assert a["stats"]["stage2"]["mode"] == "incremental"
    assert set(read_snapshot(inc)[0].column("rollout_id").to_pylist()) == {"x"}

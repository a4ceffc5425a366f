"""Evaluation rollouts (``spanrl eval`` tags their spans ``spanrl.rollout.purpose = eval``) land in the
lake like any other but are not training data: the snapshot leaves them out, says how many, and
``--include-eval`` keeps them (issue 30)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.evaluate.run import PURPOSE
from spanrl.transitions.snapshot import latest_manifest, read_snapshot

S = 1_000_000_000


def _kv(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def _rollout_line(rollout_id: str, t0: int, resource: dict[str, str]) -> str:
    """One agent process's export: a root carrying the rollout key and its reward, one chat call under it."""
    tid, root = os.urandom(16).hex(), os.urandom(8).hex()
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"q {rollout_id}"}]}])
    out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "a"}], "finish_reason": "stop"}])

    def span(sid: str, parent: str | None, name: str, start: int, end: int, attrs: list[dict]) -> dict:
        d = {"traceId": tid, "spanId": sid, "name": name, "kind": 1, "startTimeUnixNano": str(start),
             "endTimeUnixNano": str(end), "attributes": attrs}
        return {**d, "parentSpanId": parent} if parent else d

    chat = span(os.urandom(8).hex(), root, "chat m", t0 + S, t0 + 2 * S,
                [_kv("gen_ai.operation.name", "chat"), _kv("gen_ai.request.model", "m"),
                 _kv("gen_ai.input.messages", msgs), _kv("gen_ai.output.messages", out)])
    agent = span(root, None, "invoke_agent a", t0, t0 + 3 * S,
                 [_kv("spanrl.rollout_id", rollout_id), _kv("spanrl.task_id", "t"),
                  {"key": "spanrl.reward", "value": {"doubleValue": 1.0 if rollout_id.startswith("e") else 0.0}}])
    res = [_kv(k, v) for k, v in resource.items()]
    return json.dumps({"resourceSpans": [{"resource": {"attributes": res},
                                          "scopeSpans": [{"scope": {"name": "t"}, "spans": [agent, chat]}]}]})


def test_eval_rollouts_are_in_the_lake_but_not_in_the_training_snapshot(tmp_path: Path) -> None:
    key, value = PURPOSE.split("=", 1)  # the very tag spanrl eval puts into OTEL_RESOURCE_ATTRIBUTES
    t0 = time.time_ns() - 3600 * S
    lines = [_rollout_line("train-1", t0, {"service.name": "agent"}),
             _rollout_line("train-2", t0, {"service.name": "agent"}),
             _rollout_line("eval-1", t0, {"service.name": "agent", key: value})]
    (tmp_path / "otel").mkdir()
    (tmp_path / "otel" / "traces.jsonl").write_text("\n".join(lines) + "\n")

    res = CliRunner().invoke(cli, ["ingest", "--data", str(tmp_path), "--settle", "0s"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    table, manifest = read_snapshot(tmp_path)
    assert sorted(set(table.column("rollout_id").to_pylist())) == ["train-1", "train-2"]
    assert manifest["stats"]["rollouts_eval"] == 1 and manifest["stats"]["rollouts_complete"] == 3
    assert "1 (spanrl.rollout.purpose = eval): left out of the snapshot" in " ".join(res.output.split())

    # still in the lake and queryable: the rollouts table says which run was an evaluation
    q = CliRunner().invoke(cli, ["sql", "--data", str(tmp_path), "--format", "json",
                                 "select rollout_id, purpose from rollouts order by rollout_id"])
    assert q.exit_code == 0, q.output
    assert [json.loads(line) for line in q.output.splitlines() if line.strip()] == [{"rollout_id": "eval-1", "purpose": "eval"},
                                    {"rollout_id": "train-1", "purpose": None},
                                    {"rollout_id": "train-2", "purpose": None}]

    kept = CliRunner().invoke(cli, ["transitions", "build", "--data", str(tmp_path), "--settle", "0s",
                                    "--include-eval"])
    assert kept.exit_code == 0, kept.output
    table, manifest = read_snapshot(tmp_path)
    assert sorted(set(table.column("rollout_id").to_pylist())) == ["eval-1", "train-1", "train-2"]
    assert manifest["config"]["include_eval"] is True
    assert latest_manifest(tmp_path)["snapshot_id"] == manifest["snapshot_id"]

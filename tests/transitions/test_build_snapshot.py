"""The builder's snapshot: rows and schema, determinism (same lake + config = same hash), the
"unchanged" short-cut, and crash safety at every named point (SPANRL_TEST_CRASH_AT, test-only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spanrl.transitions import TRANSITION_SCHEMA, read_snapshot
from spanrl.transitions.build import build_transitions
from spanrl.transitions.config import IngestConfig
from spanrl.transitions.credit import compute_advantages
from tests.transitions.lakefake import sample_lake

ROOT = Path(__file__).resolve().parents[2]


def _build(data: Path, **cfg):
    lake = sample_lake(data)
    return build_transitions(IngestConfig(data=data, settle_s=0, **cfg), con=lake.connect())


def test_snapshot_rows_manifest_and_stats(tmp_path: Path) -> None:
    result = _build(tmp_path)
    assert result.status == "written" and result.rows == 24
    table, manifest = read_snapshot(tmp_path)
    assert table.schema == TRANSITION_SCHEMA
    rows = table.to_pylist()
    first = rows[0]
    assert first["step"] == 0 and first["n_steps"] == 2 and first["token_source"] == "engine"
    assert first["prompt_token_ids"] == [1, 2, 3] and first["response_token_ids"] == [4, 5]
    assert json.loads(first["response_message"])["tool_calls"][0]["function"]["name"] == "calc"
    assert rows[1]["token_source"] == "text" and rows[1]["is_last"] and rows[1]["prompt_token_ids"] is None
    assert {r["snapshot_id"] for r in rows} == {manifest["snapshot_id"]}
    stats = manifest["stats"]
    assert stats["rollouts"] == 12 and stats["tasks"] == 3 and stats["rows"] == 24
    assert stats["air_hits_by_rule"] == {"bad_tool_arguments": 6, "tool_error": 3}
    assert stats["rewards_by_source"] == {"air": 9, "span": 12}
    assert stats["advantage"] == {"groups": 3, "zero_variance_groups": 0, "batch_fallback_rollouts": 0}
    assert manifest["config"]["credit"] == "identical" and manifest["config"]["air_rules"]
    assert manifest["source_files"] == ["otel/traces.jsonl"]
    assert manifest["min_time_ns"] < manifest["max_time_ns"]
    # advantages are a separate step: recomputing them over the snapshot gives the stored values,
    # and another baseline needs no rebuild
    again = compute_advantages(table, credit="identical", gamma=0.95, advantage="group")
    assert again["advantage"].to_pylist() == pytest.approx(table["advantage"].to_pylist())
    batch = compute_advantages(table, credit="identical", advantage="batch")["advantage"].to_pylist()
    assert batch != pytest.approx(table["advantage"].to_pylist()) and abs(sum(batch)) < 1e-6


def test_same_lake_same_hash_and_unchanged(tmp_path: Path) -> None:
    first = _build(tmp_path / "a")
    other = _build(tmp_path / "b")
    hash_a = json.loads((first.path / "manifest.json").read_text())["content_hash"]
    hash_b = json.loads((other.path / "manifest.json").read_text())["content_hash"]
    assert hash_a == hash_b
    again = _build(tmp_path / "a")
    assert again.status == "unchanged" and again.snapshot_id == first.snapshot_id
    assert _visible(tmp_path / "a") == {"LATEST", first.snapshot_id}
    changed = _build(tmp_path / "a", credit="last")
    assert changed.status == "written" and changed.snapshot_id != first.snapshot_id


def _crash_run(data: Path, point: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPANRL_TEST_CRASH_AT": point or ""}
    return subprocess.run([sys.executable, "-m", "tests.transitions.lakefake", str(data)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def _visible(data: Path) -> set[str]:
    """Snapshot folders and LATEST (drafts are hidden; ``_tables`` holds the SQL tables, not snapshots)."""
    return {p.name for p in (data / "transitions").iterdir() if not p.name.startswith((".", "_"))}


@pytest.mark.parametrize("point", ["registered", "rows", "part", "before_commit"])
def test_crash_leaves_no_visible_partial_snapshot(tmp_path: Path, point: str) -> None:
    assert _build(tmp_path).status == "written"
    before = (tmp_path / "transitions" / "LATEST").read_text()
    # change the config so the next build would write a new snapshot, then kill it at `point`
    (tmp_path / "spanrl.toml").write_text("[ingest]\ncredit = \"last\"\n")
    crashed = _crash_run(tmp_path, point)
    assert crashed.returncode == 137
    assert (tmp_path / "transitions" / "LATEST").read_text() == before
    assert _visible(tmp_path) == {"LATEST", before.strip()}
    table, manifest = read_snapshot(tmp_path)
    assert table.num_rows == manifest["rows"] == 24
    # the killed builder's hidden draft is swept by a later build once it is an hour old
    drafts = list((tmp_path / "transitions").glob(".tmp-*"))
    for draft in drafts:
        os.utime(draft, (0, 0))
    _build(tmp_path, credit="last")
    assert not [d for d in drafts if d.exists()]


def test_crash_after_commit_is_complete(tmp_path: Path) -> None:
    crashed = _crash_run(tmp_path, "after_commit")
    assert crashed.returncode == 137
    table, manifest = read_snapshot(tmp_path)  # LATEST was swapped before the crash: a whole snapshot
    assert table.num_rows == 24 and _visible(tmp_path) == {"LATEST", manifest["snapshot_id"]}

"""Small helpers for the rollout and judge tests: ingest a data root, read what landed.

The tests read rollouts from the snapshot that ``spanrl ingest`` writes (``--missing-reward zero``
keeps the rollouts without reward in it, with ``final_reward`` NULL), what the judge reads, and query
only ``spans``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanrl.cli import cli


def ingest(data: Path, *extra: str) -> str:
    """``spanrl ingest --settle 0s`` (stage 1 + snapshot) in-process; returns its output."""
    result = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--settle", "0s", *extra])
    assert result.exit_code == 0, result.output
    return result.output


def query_spans(data: Path, sql: str) -> list[dict[str, Any]]:
    """A query over ``spans``/``logs``/``llm_calls`` (no stage-2 views)."""
    from spanrl.query import connect, run_query

    return run_query(Path(data), sql, connect(Path(data), stage2=False)).to_pylist()


def snapshot_rollouts(data: Path) -> dict[str, dict[str, Any]]:
    """rollout_id -> {task_id, n_steps, final_reward, advantage} from the LATEST snapshot."""
    from spanrl.transitions import read_snapshot

    table, _ = read_snapshot(Path(data))
    out: dict[str, dict[str, Any]] = {}
    for row in table.select(["rollout_id", "task_id", "n_steps", "final_reward", "advantage"]).to_pylist():
        out[row.pop("rollout_id")] = row
    return out

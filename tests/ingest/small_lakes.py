"""Tiny lakes for the housekeeping tests (compact, prune, retention): real stage-1 runs over
hand-made OTLP lines, so partitions hold the files and columns a real ingest writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb

from tests.ingest.conftest import ingest
from tests.ingest.otlp_lines import (
    T0,
    log_line,
    log_record,
    new_span_id,
    new_trace_id,
    span,
    trace_line,
    write_lines,
)

DAY = 86_400 * 10**9


def write_days(data: Path, days: list[int], files: int = 3, batch: int = 0) -> None:
    """``files`` closed span files, each holding one span and one log record per day in ``days``
    (day 0 = 2026-01-01): one ingest of them puts ``files`` Parquet files in every partition.
    ``batch`` names a later set of files (another night's rotation)."""
    for f in range(files):
        lines = []
        for day in days:
            tid, sid = new_trace_id(), new_span_id()
            start = T0 + day * DAY + f
            lines.append(trace_line([span(f"s{f}", tid, sid, start=start, attrs={"day": day, "file": f, "batch": batch,
                                                                                   "list": [1, "x"]})]))
            lines.append(log_line([log_record("e", {"day": day, "file": f}, tid, sid, start)]))
        write_lines(data / "otel" / f"traces-2026-01-01T00-{batch:02d}-{f:02d}.000.jsonl", lines)


def build_lake(data: Path, days: list[int], files: int = 3) -> Path:
    write_days(data, days, files)
    summary = ingest(data)
    assert summary.spans == summary.logs == files * len(days) and summary.rejects == 0
    return data


def copy_lake(src: Path, dest: Path) -> Path:
    """A copy of a data root without its span files: their rows are in the copied lake, and the
    copy's ``_files.parquet`` names the originals, so a later ingest would read them all again."""
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("otel"))
    return dest


def rows(data: Path, table: str = "spans", where: str = "true") -> list[tuple]:
    """Every row of a lake table, as (key..., md5 of the whole row incl. its date), sorted: equal
    lists mean the same multiset of rows, column for column."""
    key = "trace_id, span_id" if table == "spans" else "trace_id, time_ns"
    glob = str(data / "lake" / table / "*" / "*.parquet")
    return duckdb.sql(f"SELECT {key}, md5(CAST(t AS VARCHAR)) AS h FROM read_parquet('{glob}', hive_partitioning = true) t "
                      f"WHERE {where} ORDER BY ALL").fetchall()


def parquet_files(data: Path, table: str = "spans") -> dict[str, list[str]]:
    """{partition: [file names]} of one lake table."""
    return {d.name: sorted(p.name for p in d.glob("*.parquet")) for d in sorted((data / "lake" / table).glob("date=*"))}


def journal(data: Path, name: str) -> list[dict]:
    path = data / "lake" / name
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def rollout_line(rollout_id: str, day: int, reward: float = 1.0) -> str:
    """One complete rollout (agent span with a reward, one GenAI chat call) starting on ``day``."""
    tid, root, call = new_trace_id(), new_span_id(), new_span_id()
    start = T0 + day * DAY
    messages = {"gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": rollout_id}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])}
    return trace_line([
        span("invoke_agent solver", tid, root, start=start, dur=10**9, attrs={
            "spanrl.rollout_id": rollout_id, "spanrl.task_id": "t", "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "solver", "spanrl.reward": reward}),
        span("chat m", tid, call, parent=root, start=start + 1000, attrs={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", **messages}),
    ])

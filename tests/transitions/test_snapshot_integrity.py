"""Snapshots are checked against their content hash when read, and the hash does not depend on
where the data root lives (issue 9, items 4 and 5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.errors import InputError
from spanrl.transitions import load_snapshot, read_snapshot, write_snapshot
from spanrl.transitions.snapshot import content_hash
from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line, write_lines
from tests.transitions.test_snapshot_io import _rows


def _tamper(folder: Path, column: str, value) -> None:
    """Rewrite the first part with the same row count and one column changed (what an attacker or a
    stray script would do)."""
    part = sorted(folder.glob("part-*.parquet"))[0]
    table = pq.read_table(part)
    i = table.column_names.index(column)
    table = table.set_column(i, table.schema.field(i), pa.array([value] * table.num_rows, table.schema.field(i).type))
    pq.write_table(table, part)


@pytest.mark.parametrize("column,value", [("advantage", 1e6), ("response_message", '{"role":"assistant","content":"x"}')])
def test_a_rewritten_part_is_refused(tmp_path: Path, column: str, value) -> None:
    folder = write_snapshot(tmp_path, _rows(6))
    table, manifest = read_snapshot(tmp_path)
    assert manifest["content_hash_read"] == manifest["content_hash"] == content_hash(folder)
    _tamper(folder, column, value)
    with pytest.raises(InputError, match="content hash"):
        read_snapshot(tmp_path)
    with pytest.raises(InputError, match="content hash"):
        load_snapshot("LATEST", data=tmp_path)


def test_a_manifest_hash_edited_to_match_nothing_is_refused(tmp_path: Path) -> None:
    folder = write_snapshot(tmp_path, _rows(2))
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "content_hash": "0" * 64}))
    with pytest.raises(InputError, match="content hash"):
        read_snapshot(tmp_path)


def _llm_lines() -> list[str]:
    lines = []
    for i in range(3):
        tid = new_trace_id()
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "spanrl.reward": float(i),
                 "spanrl.task_id": "t",
                 "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"q{i}"}]}]),
                 "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": f"a{i}"}]}])}
        lines.append(trace_line([span(f"chat {i}", tid, new_span_id(), kind=3, attrs=attrs)]))
    return lines


def test_the_same_input_under_another_data_root_gives_the_same_hash(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "data", tmp_path / "somewhere" / "else" / "data"
    write_lines(first / "otel" / "traces-2026-01-01T00-00-00.000.jsonl", _llm_lines())
    shutil.copytree(first / "otel", second / "otel")
    hashes, sources = [], []
    for data in (first, second):
        res = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--settle", "0s"])
        assert res.exit_code == 0, res.output
        table, manifest = read_snapshot(data)
        assert table.num_rows == 3
        hashes.append(manifest["content_hash"])
        sources.append(sorted(set(pc.list_flatten(table["source_files"]).to_pylist())))
    assert sources[0] == sources[1] == ["otel/traces-2026-01-01T00-00-00.000.jsonl"]
    assert hashes[0] == hashes[1]


def test_a_snapshot_written_before_air_joined_the_group_statistics_reads_as_it_was_built(tmp_path: Path) -> None:
    """Its advantages table has no a_air/air_scale: its hash is the old line format and credit `air`
    keeps the rule it was built with (A_r + r_t), not today's; a new build writes the new columns."""
    from spanrl.transitions.snapshot import resolve_snapshot

    data = tmp_path / "data"
    lines = _llm_lines()
    write_lines(data / "otel" / "traces-2026-01-01T00-00-00.000.jsonl", lines)
    assert CliRunner().invoke(cli, ["ingest", "--data", str(data), "--settle", "0s", "--credit", "air"]).exit_code == 0
    folder = resolve_snapshot(data, "LATEST")
    adv_path = folder / "advantages.parquet"
    adv = pq.read_table(adv_path)
    assert {"a_air", "air_scale", "s_mean"} <= set(adv.column_names)
    new_hash = json.loads((folder / "manifest.json").read_text())["content_hash"]
    # make it an old snapshot: the five columns of before, an AIR reward on one call, the hash it had
    pq.write_table(adv.select(["rollout_id", "task_id", "r", "a_r", "baseline"]), adv_path)
    part = sorted(folder.glob("part-*.parquet"))[0]
    rows = pq.read_table(part)
    i = rows.column_names.index("step_reward")
    rows = rows.set_column(i, rows.schema.field(i), pa.array([-0.5] + [0.0] * (rows.num_rows - 1), pa.float64()))
    pq.write_table(rows, part)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["content_hash"] = content_hash(folder)
    assert manifest["content_hash"] != new_hash
    (folder / "manifest.json").write_text(json.dumps(manifest))
    table, read = read_snapshot(data)
    assert read["content_hash_read"] == manifest["content_hash"]
    a_r = dict(zip(adv["rollout_id"].to_pylist(), adv["a_r"].to_pylist(), strict=True))
    for row in table.to_pylist():
        assert row["advantage"] == pytest.approx(a_r[row["rollout_id"]] + row["step_reward"])

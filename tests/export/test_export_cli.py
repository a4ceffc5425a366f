"""``spanrl export`` from the command line: the summary, and exit 2 with a message on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli


def _run(*args: str):
    return CliRunner().invoke(cli, ["export", *args])


def test_export_prints_what_it_wrote_and_left_out(snapshot, tmp_path: Path) -> None:
    data, rows = snapshot
    result = _run("--data", str(data), "--format", "trl-dpo", "--out", str(tmp_path / "dpo"))
    assert result.exit_code == 0, result.output
    assert "exported 4 rows" in result.output and f"({len(rows)} transitions)" in result.output
    assert "could not be paired" in result.output
    assert (tmp_path / "dpo" / "README.md").is_file() and (tmp_path / "dpo" / "train.parquet").is_file()


@pytest.mark.parametrize("managed", ["lake", "transitions", "adapters/x", "otel", "."])
def test_out_inside_the_data_root_managed_folders_is_refused(snapshot, managed: str) -> None:
    data, _ = snapshot
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    result = _run("--data", str(data), "--format", "trl-sft", "--out", str(data / managed))
    assert result.exit_code == 2, result.output
    assert "--out" in result.output
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before


def test_out_elsewhere_under_the_data_root_is_fine(snapshot) -> None:
    data, _ = snapshot
    result = _run("--data", str(data), "--format", "trl-sft", "--out", str(data / "exports" / "sft"),
                  "--overwrite")
    assert result.exit_code == 0, result.output


def test_non_empty_out_needs_overwrite_and_only_replaces_an_export(snapshot, tmp_path: Path) -> None:
    data, _ = snapshot
    out = tmp_path / "sft"
    assert _run("--data", str(data), "--format", "trl-sft", "--out", str(out)).exit_code == 0
    again = _run("--data", str(data), "--format", "trl-kto", "--out", str(out))
    assert again.exit_code == 2 and "--overwrite" in again.output
    replaced = _run("--data", str(data), "--format", "trl-kto", "--out", str(out), "--overwrite")
    assert replaced.exit_code == 0 and "trl-kto" in (out / "README.md").read_text()
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    refused = _run("--data", str(data), "--format", "trl-sft", "--out", str(other), "--overwrite")
    assert refused.exit_code == 2 and (other / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize("args, words", [
    (["--format", "trl-dpo", "--min-reward", "1"], "--min-reward"),
    (["--format", "trl-sft", "--tokenizer", "."], "--tokenizer"),
    (["--format", "openai-ft", "--file-type", "parquet"], "jsonl"),
    (["--format", "triplets", "--tokenizer", "/nonexistent-tokenizer"], "tokenizer"),
    (["--format", "trl-sft", "--snapshot", "20990101T000000000000Z"], "no such snapshot"),
    (["--format", "yaml"], "yaml"),
])
def test_bad_input_exits_2_with_a_message(snapshot, tmp_path: Path, args: list[str], words: str) -> None:
    data, _ = snapshot
    result = _run("--data", str(data), "--out", str(tmp_path / "x"), *args)
    assert result.exit_code == 2, result.output
    assert words in result.output
    assert not (tmp_path / "x").exists()


def test_no_snapshot_yet_exits_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()  # a root without a snapshot (a missing root is refused: tests/test_cli.py)
    result = _run("--data", str(tmp_path / "empty"), "--format", "trl-sft", "--out", str(tmp_path / "x"))
    assert result.exit_code == 2 and "spanrl ingest" in result.output


def test_nothing_to_export_exits_2(snapshot, tmp_path: Path) -> None:
    data, _ = snapshot
    result = _run("--data", str(data), "--format", "trl-sft", "--min-reward", "100", "--out", str(tmp_path / "x"))
    assert result.exit_code == 2 and "nothing to export" in result.output


def test_tool_calls_without_tool_definitions_are_named_on_stderr_and_in_the_card(tokenizer, tmp_path: Path) -> None:
    """Rows whose response calls a tool but whose call was recorded without the request's tools (an
    instrumentation that does not capture them) are exported, and the user is told how many, per agent."""
    import json

    from tests.export.conftest import snapshot_rows
    from tests.helpers.tiny_model import write_rows_snapshot

    rows = snapshot_rows(tokenizer)
    calling = [r for r in rows if json.loads(r["response_message"]).get("tool_calls")]
    assert len(calling) >= 3
    for r in calling[:3]:
        r["tools"] = None if r is calling[0] else "[]"
        r["agent_name"] = "router"
    data = tmp_path / "data"
    write_rows_snapshot(data, rows)
    result = _run("--data", str(data), "--format", "trl-sft", "--out", str(tmp_path / "sft"))
    assert result.exit_code == 0, result.output
    assert f"warning: 3 of {len(rows)} transitions call tools but carry no tool definitions" in result.stderr
    assert "router 3" in result.stderr and "warning" not in result.stdout
    card = (tmp_path / "sft" / "README.md").read_text()
    assert f"**warning**: 3 of {len(rows)} transitions call tools" in card


def test_no_warning_when_every_tool_call_has_its_definitions(snapshot, tmp_path: Path) -> None:
    data, _ = snapshot
    result = _run("--data", str(data), "--format", "trl-sft", "--out", str(tmp_path / "sft"))
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    assert "**warning**" not in (tmp_path / "sft" / "README.md").read_text()


def test_parquet_format_is_the_snapshot_readable_without_spanrl(snapshot, tmp_path: Path) -> None:
    """`--format parquet`: one flat file that polars and DuckDB read alone, every row of the snapshot
    with `return` and `advantage` as spanrl's reader fills them, the content hash in the footer."""
    import duckdb
    import polars as pl

    from spanrl.transitions import read_snapshot

    data, rows = snapshot
    result = _run("--data", str(data), "--format", "parquet", "--out", str(tmp_path / "flat"))
    assert result.exit_code == 0, result.output
    path = tmp_path / "flat" / "train.parquet"
    table, manifest = read_snapshot(data)
    flat = pl.read_parquet(path)
    assert flat.columns == table.column_names and flat.height == table.num_rows == len(rows)
    expected = pl.from_arrow(table).sort("rollout_id", "step")
    assert flat.equals(expected)
    assert flat["advantage"].null_count() == expected["advantage"].null_count() < flat.height
    meta = dict(duckdb.sql(f"SELECT key::VARCHAR, value::VARCHAR FROM parquet_kv_metadata('{path}')").fetchall())
    assert meta["spanrl.content_hash"] == manifest["content_hash"]
    assert meta["spanrl.snapshot_id"] == manifest["snapshot_id"]
    card = (tmp_path / "flat" / "README.md").read_text()
    assert "(not described)" not in card and "pl.read_parquet" in card

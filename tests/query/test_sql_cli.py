"""``spanrl sql`` and ``spanrl ingest`` through the CLI: formats, read-only refusal, empty lake."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line, write_lines


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("sqlcli")
    tid = new_trace_id()
    write_lines(d / "otel" / "traces-2026-01-01T00-00-00.000.jsonl",
                [trace_line([span("chat m", tid, new_span_id(), kind=3, attrs={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 5})]),
                 "garbage"])
    res = CliRunner().invoke(cli, ["ingest", "--data", str(d), "--no-transitions"])
    assert res.exit_code == 0, res.output
    assert "rejects" in res.output and "spans/s" in res.output
    return d


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["sql", *args], input=input)


def test_table_csv_json_parquet(data, tmp_path) -> None:
    q = "select name, model, input_tokens from spans join llm_calls using (trace_id, span_id)"
    res = run("--data", str(data), q)
    assert res.exit_code == 0 and "chat m" in res.output and "1 row(s)" in res.output
    res = run("--data", str(data), "--format", "csv", q)
    assert res.output.splitlines()[:2] == ["name,model,input_tokens", "chat m,m,5"]
    res = run("--data", str(data), "--format", "json", "select span_id, attributes from spans")
    assert json.loads(res.output.splitlines()[0])["attributes"]["gen_ai.request.model"] == "m"
    out = tmp_path / "x.parquet"
    res = run("--data", str(data), "--format", "parquet", "--out", str(out), q)
    assert res.exit_code == 0 and pq.read_table(out).num_rows == 1


def test_query_from_file_and_stdin(data, tmp_path) -> None:
    f = tmp_path / "q.sql"
    f.write_text("select count(*) as n from spans;")
    assert run("--data", str(data), "--format", "csv", "-f", str(f)).output.splitlines() == ["n", "1"]
    assert run("--data", str(data), "--format", "csv", input="select 40 + 2 as x").output.splitlines() == ["x", "42"]


@pytest.mark.parametrize("q", ["copy spans to 'x.csv'", "attach 'x.db'", "create table t as select 1",
                               "select 1; drop view spans", "install httpfs", "set threads = 1"])
def test_writes_are_refused(data, q: str) -> None:
    res = run("--data", str(data), q)
    assert res.exit_code == 2 and "read-only" in res.output


def test_reading_outside_the_data_root_is_refused(data) -> None:
    res = run("--data", str(data), "select * from read_text('/etc/hostname')")
    assert res.exit_code == 2 and "read-only" in res.output and "/etc/hostname" in res.output


def test_empty_lake_gives_a_clear_message(tmp_path) -> None:
    (tmp_path / "none").mkdir()  # a root with nothing ingested yet (a missing root is refused: tests/test_cli.py)
    res = run("--data", str(tmp_path / "none"), "--format", "csv", "select count(*) as n from llm_calls")
    assert res.exit_code == 0 and "run `spanrl ingest`" in res.output and "n\n0" in res.output


def test_rejects_are_reported_and_queryable(data) -> None:
    res = run("--data", str(data), "--format", "csv", "select line, error from rejects")
    assert res.output.splitlines()[1] == "2,not JSON"
    res = run("--data", str(data), "--format", "csv", "select rows, rejects, status from span_files")
    assert res.output.splitlines()[1:] == ["1,1,closed"]


def test_interactive_prompt(data, monkeypatch) -> None:
    import io

    from spanrl.query import connect
    from spanrl.query.sql import interactive

    lines = iter(["select count(*) AS n", "from spans;", "copy spans to 'x';", ".quit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    out = io.StringIO()
    interactive(data, connect(data, stage2=False), out)
    text = out.getvalue()
    assert "1 row(s)" in text and "error: spanrl sql is read-only" in text


def test_json_numbers_of_any_width_and_decimals_are_json_numbers(data) -> None:
    """sum() of integers is a HUGEINT and DECIMALs arrive as Python decimals: both must be numbers,
    written exactly (no float rounding), also inside lists and structs."""
    q = ("select sum(case when kind = 'CLIENT' then 1 else 0 end) as n, 12345678901234567890123::hugeint as big, "
         "0.1::decimal(38,30) as exact, 2.50::decimal(5,2) as d, [1.5::decimal(4,2)] as l, "
         "{'a': -0.25::decimal(4,2)} as st, 'text' as s from spans")
    res = run("--data", str(data), "--format", "json", q)
    assert res.exit_code == 0, res.output
    line = res.output.splitlines()[0]
    assert '"exact": 0.100000000000000000000000000000' in line and '"big": 12345678901234567890123' in line
    assert json.loads(line) == {"n": 1, "big": 12345678901234567890123, "exact": 0.1, "d": 2.5, "l": [1.5],
                                "st": {"a": -0.25}, "s": "text"}


def test_unknown_table_lists_the_tables_and_suggests_one(data) -> None:
    res = run("--data", str(data), "select * from llm_call")
    assert res.exit_code == 2, res.output
    assert "no table or view named llm_call; did you mean llm_calls?" in res.output
    listed = res.output.split("Tables and views: ", 1)[1]
    assert all(f" {t}," in listed for t in ("spans", "llm_calls", "rejects", "rollouts"))
    assert "pg_" not in listed and "duckdb_" not in listed
    res = run("--data", str(data), "select * from zzzz_nothing_like_it")
    assert res.exit_code == 2 and "did you mean" not in res.output and "Tables and views: " in res.output


def test_syntax_error_keeps_its_lines_so_the_caret_points(data) -> None:
    res = run("--data", str(data), "select *\nfrom spans wher x")
    assert res.exit_code == 2
    lines = res.output.splitlines()
    caret = next(i for i, line in enumerate(lines) if line.strip() == "^")
    assert "LINE" in lines[caret - 1]

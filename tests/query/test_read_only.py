"""``spanrl sql`` is read-only because of its connection, not because of how a statement parses
(issue 9, item 6): every attempt to write, or to read outside the lake's tables, is refused with the
read-only message and leaves every file as it was; every statement runs exactly once."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.memory import resolve_memory_limit
from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line, write_lines


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("readonly") / "data"
    write_lines(d / "otel" / "traces-2026-01-01T00-00-00.000.jsonl",
                [trace_line([span("chat m", new_trace_id(), new_span_id(), kind=3,
                                  attrs={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})])])
    res = CliRunner().invoke(cli, ["ingest", "--data", str(d), "--no-transitions"])
    assert res.exit_code == 0, res.output
    (d / "transitions").mkdir()
    (d / "transitions" / "LATEST").write_text("20260101T000000000000Z\n")
    return d


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


# {D}: the data root, {T}: a scratch folder outside it. Each one must be refused and change nothing.
ATTEMPTS = {
    "copy into the lake": "COPY spans TO '{D}/lake/spans/date=2026-01-01/evil.parquet'",
    "explain analyze copy over LATEST": "EXPLAIN ANALYZE COPY (SELECT 'x') TO '{D}/transitions/LATEST' (FORMAT csv)",
    "explain analyze copy outside": "EXPLAIN ANALYZE COPY (SELECT 1) TO '{T}/out.csv'",
    "explain copy": "EXPLAIN COPY (SELECT 1) TO '{T}/plan.csv'",
    "attach": "ATTACH '{T}/x.db' AS x",
    "install": "INSTALL httpfs",
    "load": "LOAD httpfs",
    "read_text": "SELECT * FROM read_text('/etc/hostname')",
    "read_csv of a system file": "SELECT * FROM read_csv('/etc/passwd')",
    "read_blob of the manifest": "SELECT * FROM read_blob('{D}/lake/_files.parquet')",
    "read_parquet by path": "SELECT count(*) FROM read_parquet('{D}/lake/spans/*/*.parquet')",
    "glob": "SELECT * FROM glob('/etc/*')",
    "read_text in a CTE": "WITH x AS (SELECT * FROM read_text('/etc/hostname')) SELECT * FROM x",
    "read_text under explain analyze": "EXPLAIN ANALYZE SELECT * FROM read_text('/etc/hostname')",
    "summarize read_csv": "SUMMARIZE SELECT * FROM read_csv('/etc/passwd')",
    "export database": "EXPORT DATABASE '{T}/export'",
    "set external access": "SET enable_external_access = true",
    "set allowed directories": "SET allowed_directories = ['/']",
    "pragma": "PRAGMA threads = 1",
    "reset the lock": "RESET lock_configuration",
    "create table": "CREATE TABLE t AS SELECT 1",
    "second statement writes": "SELECT 1; COPY (SELECT 1) TO '{T}/second.csv'",
    "second statement reads": "SELECT 1; SELECT * FROM read_text('/etc/hostname')",
}


@pytest.fixture(scope="module")
def con(data):
    from spanrl.query import connect

    con = connect(data)  # with the stage-2 views, as the interactive prompt and a UI get it
    yield con
    con.close()


@pytest.mark.parametrize("name", ATTEMPTS)
def test_write_and_outside_read_attempts_are_refused(data, con, tmp_path, name: str) -> None:
    from spanrl.errors import InputError
    from spanrl.query.sql import execute

    query = ATTEMPTS[name].format(D=data, T=tmp_path)
    before = _files(data)
    with pytest.raises(InputError, match="read-only") as refused:
        execute(con, query)
    assert _files(data) == before
    assert list(tmp_path.iterdir()) == []
    hostname = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").is_file() else "\x00"
    assert hostname not in str(refused.value).replace("/etc/hostname", "")


@pytest.mark.parametrize("name", ["explain analyze copy over LATEST", "read_csv of a system file", "second statement writes"])
def test_the_cli_refuses_with_exit_2(data, tmp_path, name: str) -> None:
    before = _files(data)
    res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "csv", ATTEMPTS[name].format(D=data, T=tmp_path)])
    assert res.exit_code == 2 and "read-only" in res.output, res.output
    assert _files(data) == before and list(tmp_path.iterdir()) == []


def test_the_lake_and_stage2_views_still_answer(con) -> None:
    """Tables and views work on the locked connection (the stage-2 views are only bound here: running
    them is covered by tests/ingest/test_queries_doc.py, on this same connection)."""
    from spanrl.query.sql import execute

    table, _ = execute(con, "SELECT (SELECT count(*) FROM spans) AS s, (SELECT count(*) FROM llm_calls) AS c, "
                            "(SELECT count(*) FROM span_files) AS f, (SELECT count(*) FROM rejects) AS r")
    assert table.to_pylist() == [{"s": 1, "c": 1, "f": 1, "r": 0}]
    for view in ("rewards", "rollouts"):
        assert execute(con, f"DESCRIBE {view}")[0].num_rows > 3


@pytest.mark.parametrize("query", ["SELECT bump() AS n", "EXPLAIN ANALYZE SELECT bump() AS n",
                                   "SELECT 1; SELECT bump() AS n", "SELECT * FROM (SELECT bump() AS n, "
                                   "'{\"a\": 1}'::JSON AS j)"])
def test_each_statement_runs_once(data, monkeypatch, query: str) -> None:
    import spanrl.query.sql as sql_module

    calls: list[int] = []

    def bump() -> int:
        calls.append(1)
        return len(calls)

    real_connect = sql_module.connect

    def counting_connect(*args, **kwargs) -> duckdb.DuckDBPyConnection:
        con = real_connect(*args, **kwargs)
        con.create_function("bump", bump, [], "BIGINT", side_effects=True)
        return con

    monkeypatch.setattr(sql_module, "connect", counting_connect)
    res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "json", query])
    assert res.exit_code == 0, res.output
    assert len(calls) == 1


def test_json_columns_stay_json_in_json_output(data) -> None:
    res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "json",
                                   "SELECT attributes FROM spans"])
    assert res.exit_code == 0 and '"gen_ai.request.model": "m"' in res.output


@pytest.mark.parametrize("where", ["lake/_files.parquet", "lake/spans/x.csv", "transitions/LATEST",
                                   "adapters/x.csv", "otel/traces.jsonl"])
def test_out_into_managed_folders_is_refused(data, where: str) -> None:
    before = _files(data)
    res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "parquet", "--out",
                                   str(data / where), "SELECT 1 AS x"])
    assert res.exit_code == 2 and "manages" in res.output, res.output
    assert _files(data) == before


def test_out_to_a_bad_path_is_exit_2(data, tmp_path) -> None:
    for out in (tmp_path / "no" / "such" / "x.csv", tmp_path):
        res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "csv", "--out", str(out), "SELECT 1"])
        assert res.exit_code == 2 and "--out" in res.output, res.output
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if not os.access(ro, os.W_OK):  # root may write anyway
            res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "csv", "--out",
                                           str(ro / "x.csv"), "SELECT 1"])
            assert res.exit_code == 2 and "cannot write" in res.output, res.output
    finally:
        os.chmod(ro, 0o700)


def test_the_memory_limit_is_applied_and_cannot_be_raised_from_sql(data) -> None:
    """spanrl sql runs under --memory-limit (default auto: spanrl/memory.py): DuckDB reports it, a query
    cannot lift it, and a value DuckDB refuses is exit 2."""
    def setting(*flags: str) -> str:
        res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "csv", *flags,
                                       "select current_setting('memory_limit') as m"])
        assert res.exit_code == 0, res.output
        return res.output.strip().splitlines()[-1]

    default, small = setting(), setting("--memory-limit", "300MB")
    auto = duckdb.connect()
    auto.execute(f"SET memory_limit = '{resolve_memory_limit('auto')}'")
    assert default == auto.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    assert small.startswith("286") and "MiB" in small
    lifted = CliRunner().invoke(cli, ["sql", "--data", str(data), "SET memory_limit = '100GB'"])
    assert lifted.exit_code == 2
    bad = CliRunner().invoke(cli, ["sql", "--data", str(data), "--memory-limit", "lots", "select 1"])
    assert bad.exit_code == 2 and "--memory-limit" in bad.output


def test_top_n_over_a_json_expression_runs(data) -> None:
    """A top-N over an expression of a JSON column: DuckDB pushes a filter into the scan, which
    Arrow's JSON extension type cannot evaluate; the lake is scanned as text and cast back to JSON,
    so the query answers and the column still prints as JSON."""
    for table, col in (("spans", "attributes"), ("llm_calls", "input_messages")):
        res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "csv",
                                       f"select json_array_length({col}) as n from {table} "
                                       f"where {col} is not null order by n desc limit 3"])
        assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["sql", "--data", str(data), "select typeof(attributes) as t from spans limit 1"])
    assert res.exit_code == 0 and "JSON" in res.output


def test_a_lake_never_built_says_so_and_running_out_of_memory_is_a_message(data) -> None:
    """Only stage 1 ran: rollouts/rewards are computed for the connection, and stderr says so (and how
    to materialise them once). A memory limit too small for that, or for opening the lake at all, is
    exit 2 with what to do, never a traceback."""
    res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "csv", "select count(*) n from rollouts"])
    assert res.exit_code == 0, res.output
    assert "no stage-2 build has materialised" in res.output and "spanrl transitions build" in res.output
    messages = []
    for limit in ("1MB", "2MB", "4MB", "8MB", "16MB"):
        res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--memory-limit", limit,
                                       "select count(*) from rollouts"])
        assert res.exit_code in (0, 2), res.output
        assert "Traceback" not in res.output and not isinstance(res.exception, duckdb.Error)
        if res.exit_code == 2:
            assert "raise --memory-limit" in res.output
            messages.append(res.output)
    assert any("spanrl transitions build --data" in m for m in messages), messages

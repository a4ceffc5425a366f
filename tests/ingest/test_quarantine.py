"""Issue 42: a statement of stage 2 that fails on some traces' data does not stop the night. The traces
it fails on are found by halves, the snapshot is built from the others, the quarantine names each trace
with its span file and the error (``spanrl sql "select * from quarantine"``, the summary, exit 0), and the
next build, once the statement reads them, takes them back: the content hash of a clean build.

The failure is injected on the real instrumentation runs' span files (``real_lake``): a stage-2
statement that throws on one trace's spans (``SPANRL_TEST_FAIL_ON_TRACE``, a cast as a conversion of an
unread value would fail). Before, the same failure was a traceback (exit 1) and no snapshot.
"""

from __future__ import annotations

import duckdb
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.transitions.quarantine import FAIL_ENV, is_data_error
from tests.ingest.conftest import content_hash, fresh_root


def _run(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, [*args, "--settle", "0s"], env=env)


def _sql(data, query: str) -> list[dict]:
    from spanrl.query import connect, run_query

    return run_query(data, query, connect(data)).to_pylist()


def test_a_failing_trace_is_quarantined_and_taken_back_after_the_fix(real_lake, tmp_path) -> None:
    clean = fresh_root(real_lake, tmp_path / "clean")
    assert _run("ingest", "--data", str(clean)).exit_code == 0
    reference = content_hash(clean)
    all_rollouts = {r["rollout_id"] for r in _sql(clean, "SELECT rollout_id FROM rollouts")}

    data = fresh_root(real_lake, tmp_path / "night")
    bad = real_lake[2]["traceloop"]["trace_id"]
    night = _run("ingest", "--data", str(data), env={FAIL_ENV: bad})
    assert night.exit_code == 0, night.output
    out = " ".join(night.output.split())
    assert "quarantined traces" in out and bad in out and "snapshot: written" in out, out
    quarantined = _sql(data, "SELECT trace_id, source_files, error FROM quarantine")
    assert [q["trace_id"] for q in quarantined] == [bad]
    assert quarantined[0]["source_files"] and all(f.startswith("otel/") or "/otel/" in f or f.endswith(".jsonl")
                                                  for f in quarantined[0]["source_files"]), quarantined
    assert "injected failure on " + bad in quarantined[0]["error"]
    kept = {r["rollout_id"] for r in _sql(data, "SELECT rollout_id FROM rollouts")}
    assert kept == all_rollouts - {"r-traceloop"}  # the others are in the snapshot
    assert content_hash(data) != reference

    fixed = _run("ingest", "--data", str(data))  # no new span file: the quarantine alone makes it build again
    assert fixed.exit_code == 0, fixed.output
    assert "retrying 1 quarantined" in " ".join(fixed.output.split()), fixed.output
    assert _sql(data, "SELECT * FROM quarantine") == []
    assert content_hash(data) == reference


def test_only_the_datas_trouble_is_quarantined() -> None:
    con = duckdb.connect()
    for sql in ("SELECT CAST('x' AS INTEGER)", "SELECT json('')", "SELECT CAST('' AS JSON)"):
        try:
            con.execute(sql)
        except duckdb.Error as exc:
            assert is_data_error(exc), sql
    try:
        duckdb.connect(config={"memory_limit": "1MB"}).execute("SELECT list(range) FROM range(10000000)").fetchall()
    except duckdb.Error as exc:
        assert not is_data_error(exc)  # out of memory stops the build whole (test_out_of_resources.py)
    else:
        raise AssertionError("expected DuckDB to run out of memory")
    assert not is_data_error(ValueError("a bug in Python is not the data's"))

"""``spanrl sql`` serves the stage-2 relations from the tables the last build materialised: the same
rows as computing the views live, no stage-2 SQL bound per query, and a note when they are stale."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.ingest.views import connect as connect_lake
from spanrl.query import connect
from spanrl.transitions.rollouts import lake_config, register_stage2
from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line, write_lines

RELATIONS = ("llm_calls", "tool_calls", "rewards", "rollouts")


def _rollout(task: str, reward: float, minute: int) -> str:
    tid, root = new_trace_id(), new_span_id()
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"task {task}"}]}])
    out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])
    return trace_line([
        span("invoke_agent a", tid, root, attrs={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a",
                                                   "spanrl.task_id": task}),
        span("chat m", tid, new_span_id(), parent=root, kind=3, attrs={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.input.messages": msgs,
            "gen_ai.output.messages": out}),
        span("spanrl.reward", tid, new_span_id(), parent=root, attrs={"spanrl.reward": reward}),
    ])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("materialised")
    write_lines(d / "otel" / "traces-2026-01-01T00-00-00.000.jsonl",
                [_rollout("t1", 1.0, 0), _rollout("t1", 0.0, 1), _rollout("t2", 0.5, 2)])
    res = CliRunner().invoke(cli, ["ingest", "--data", str(d), "--settle", "0s"])
    assert res.exit_code == 0, res.output
    return d


def _rows(con, name: str) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in
                  con.sql(f"SELECT * FROM {name}").to_arrow_table().to_pylist())


def test_materialised_tables_hold_the_live_rows(data) -> None:
    served = connect(data)
    live = connect_lake(data, read_only=False)
    cfg, rules = lake_config(data)  # the config the build recorded, as the live views would use
    # the same stage-2 SQL computed now, as temp tables (the view form of it is checked in
    # test_read_only.py; binding every nested view per query is what the tables exist to avoid)
    register_stage2(live, cfg, materialize=True, rules=rules)
    for name in RELATIONS:
        view_sql = served.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [name]).fetchall()[0][0]
        assert f"_stage2_{name}" in view_sql, f"{name} is computed per query, not read from its table"
        assert _rows(served, name) == _rows(live, name), name
    assert served.execute("SELECT count(*) FROM rollouts WHERE complete").fetchall()[0][0] == 3


def test_stale_tables_are_announced(data) -> None:
    res = CliRunner().invoke(cli, ["sql", "--data", str(data), "select count(*) from rollouts"])
    assert res.exit_code == 0 and "stage-2 build" not in res.output
    write_lines(data / "otel" / "traces-2026-01-02T00-00-00.000.jsonl", [_rollout("t3", 1.0, 3)])
    res = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--no-transitions"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "csv", "select count(*) from rollouts"])
    assert "1 new or changed lake file" in res.output and "spanrl transitions build" in res.output
    assert "3" in res.output.splitlines()  # the tables as built; the note says what they miss
    res = CliRunner().invoke(cli, ["transitions", "build", "--data", str(data), "--settle", "0s"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "csv", "select count(*) from rollouts"])
    assert "new or changed" not in res.output and "4" in res.output.splitlines()

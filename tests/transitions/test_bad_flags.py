"""Odd flag values are exit 2 with a message, or simply work; never a crash (issue 9, item 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line, write_lines


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("flags") / "data"
    lines = []
    for i, task in enumerate(["t1", "t1", "t2"]):
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "spanrl.reward": float(i), "$$x": task,
                 "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"q{i}"}]}]),
                 "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "a"}]}])}
        lines.append(trace_line([span(f"chat {i}", new_trace_id(), new_span_id(), kind=3, attrs=attrs)]))
    write_lines(d / "otel" / "traces-2026-01-01T00-00-00.000.jsonl", lines)
    assert CliRunner().invoke(cli, ["ingest", "--data", str(d), "--no-transitions"]).exit_code == 0
    return d


def test_a_task_key_that_looks_like_a_json_path_is_an_attribute_name(data) -> None:
    """'$$x' used to reach DuckDB as a JSON path (exit 1, a traceback); it is a name like any other."""
    from spanrl.transitions import read_snapshot

    res = CliRunner().invoke(cli, ["transitions", "build", "--data", str(data), "--settle", "0s", "--task-key", "$$x"])
    assert res.exit_code == 0, res.output
    table, _ = read_snapshot(data)
    assert sorted(table["task_id"].to_pylist()) == ["t1", "t1", "t2"]


@pytest.mark.parametrize("args,message", [
    (["--task-key", 'a"b'], "--task-key"),
    (["--rollout-key", "x\\y"], "--rollout-key"),
    (["--memory-limit", "lots"], "--memory-limit 'lots'"),
    (["--memory-limit", "5XB"], "--memory-limit"),
])
def test_bad_flag_values_are_exit_2(data, args: list[str], message: str) -> None:
    for command in (["transitions", "build"], ["ingest"]):
        res = CliRunner().invoke(cli, [*command, "--data", str(data), "--settle", "0s", *args])
        assert res.exit_code == 2 and message in res.output, res.output

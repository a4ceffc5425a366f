"""The OpenAI Agents SDK with its tools offered (issue 24, item 5): OpenInference's Agents SDK spans do
not record the tool definitions of a chat-completions call, so a user adds the OpenAI client
instrumentation, which does. Each request is then recorded twice; it must come out as one
``llm_calls`` row per request, carrying the tools of the client's span, in one rollout."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from spanrl.query import connect
from tests.ingest.conftest import ROOT, run_agent_lake


@pytest.fixture(scope="module")
def agents_lake(tmp_path_factory):
    data = tmp_path_factory.mktemp("agents_tools") / "data"
    run, exchanges = run_agent_lake(data, "framework_agents.py", "--framework", "openai-agents+openai", "--reward", "1")
    return data, run, exchanges


def test_one_row_per_request_with_the_tools_offered(agents_lake) -> None:
    data, run, exchanges = agents_lake
    con = connect(data)
    rows = con.execute("SELECT tools, output_message, output_tokens, len(merged_spans) FROM llm_calls "
                       "ORDER BY start_ns").fetchall()
    assert len(exchanges) == 2 and len(rows) == len(exchanges)  # recorded twice each, one row each
    assert all(n >= 1 for *_, n in rows)  # the merge is listed, not silent
    for (tools, output, out_tokens, _), (request, response) in zip(rows, exchanges, strict=True):
        assert [t["function"]["name"] for t in json.loads(tools)] == [t["function"]["name"] for t in request["tools"]]
        said = response["choices"][0]["message"]
        assert json.loads(output).get("content") == said.get("content")
        assert out_tokens == response["usage"]["completion_tokens"]  # counted once
    assert json.loads(rows[0][1])["tool_calls"][0]["function"]["name"] == "get_weather"
    assert con.execute("SELECT count(*) FROM coverage WHERE missing_tool_schema").fetchall()[0][0] == 0


def test_the_run_is_one_rollout_with_a_transition_per_request(agents_lake) -> None:
    from spanrl.transitions import read_snapshot

    data, run, exchanges = agents_lake
    out = subprocess.run([sys.executable, "-m", "spanrl", "transitions", "build", "--data", str(data), "--settle", "0s"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    table, _ = read_snapshot(data)
    rows = table.to_pylist()
    assert {r["rollout_id"] for r in rows} == {run["trace_id"]}
    assert len(rows) == len(exchanges) and all(r["tools"] for r in rows)
    assert all(r["final_reward"] == 1.0 for r in rows)

"""agent_name from LangGraph node names: a real LangGraph graph on the real langchain-openai client,
traced by OpenInference's LangChain instrumentation (no agent attribute anywhere), plus the other
ways a node name is recorded (OpenLLMetry association properties, LangSmith flat metadata) and
the precedence rule: the nearest span that names an agent wins."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from spanrl.query import connect
from spanrl.transitions import read_snapshot
from tests.ingest.conftest import ingest, run_agent_lake
from tests.ingest.otlp_lines import T0, new_span_id, new_trace_id, span, trace_line, write_lines


@pytest.fixture(scope="module")
def langgraph_lake(tmp_path_factory):
    data = tmp_path_factory.mktemp("langgraph") / "data"
    run, exchanges = run_agent_lake(data, "langgraph_agent.py", "--reward", "0.75")
    return data, run, exchanges


def test_langgraph_nodes_name_the_agents_of_their_calls(langgraph_lake) -> None:
    data, run, exchanges = langgraph_lake
    con = connect(data)
    rows = con.execute("SELECT span_id, agent_name, convention, input_messages, output_message FROM llm_calls "
                       "WHERE trace_id = ? ORDER BY start_ns", [run["trace_id"]]).fetchall()
    assert [(r[1], r[2]) for r in rows] == [("researcher", "openinference")] * 2 + [("writer", "openinference")]
    # what the model saw and answered is what the fake server saw and answered
    for (_, _, _, inp, outp), (request, response) in zip(rows, exchanges, strict=True):
        assert [m["role"] for m in json.loads(inp)] == [m["role"] for m in request["messages"]]
        assert json.loads(outp).get("content") == response["choices"][0]["message"].get("content")
    call_id = json.loads(rows[0][4])["tool_calls"][0]["id"]
    assert json.loads(rows[1][3])[-1] == {"role": "tool", "content": "facts about What is OTLP?", "tool_call_id": call_id}
    (tool,) = con.execute("SELECT tool_name, llm_span_id, result, arguments FROM tool_calls WHERE trace_id = ?",
                          [run["trace_id"]]).fetchall()
    assert tool[:3] == ("search", rows[0][0], "facts about What is OTLP?")
    # OpenInference records the tool's input unwrapped ("What is OTLP?"); the row keeps what the
    # model wrote, so the bad-arguments AIR rule judges the model's output, not the tool span's view
    assert json.loads(tool[3]) == {"query": "What is OTLP?"} == json.loads(json.loads(rows[0][4])["tool_calls"][0]["function"]["arguments"])
    assert con.execute("SELECT attributes->>'input.value' FROM spans WHERE name = 'search'").fetchall() == [("What is OTLP?",)]


def test_agent_filter_keeps_one_node_with_the_whole_rollouts_reward(langgraph_lake) -> None:
    data = langgraph_lake[0]
    out = subprocess.run([sys.executable, "-m", "spanrl", "transitions", "build", "--data", str(data),
                          "--settle", "0s", "--agent", "^writer$"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    table, _ = read_snapshot(data)
    assert "AIR hits by rule" in out.stdout and "bad_tool_arguments" not in out.stdout
    assert table.column("agent_name").to_pylist() == ["writer"]
    assert table.column("final_reward").to_pylist() == [0.75]
    assert json.loads(table.column("prompt_messages")[0].as_py())[0] == {"role": "system", "content": "You write."}


def test_node_name_sources_and_precedence(tmp_path: Path) -> None:
    """OpenLLMetry and LangSmith record the node elsewhere; an explicit agent span nearer the call
    wins over a node further up; metadata that is not JSON is ignored, not an error."""
    llm = {"gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]),
           "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "yo"}]}])}
    cases = {
        "traceloop": ({}, {"traceloop.association.properties.langgraph_node": "planner", **llm}),
        "langsmith": ({}, {"langsmith.metadata.langgraph_node": "critic", **llm}),
        "nearer": ({"metadata": json.dumps({"langgraph_node": "outer"})},
                   {**llm}),  # the LLM span's own parent below is an explicit agent
        "broken": ({}, {"metadata": "{not json langgraph_node", **llm}),
    }
    lines, traces = [], {}
    for case, (node_attrs, llm_attrs) in cases.items():
        tid, node, mid, sid = new_trace_id(), new_span_id(), new_span_id(), new_span_id()
        traces[case] = tid
        middle = ({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "inner"} if case == "nearer" else {})
        lines.append(trace_line([span("node", tid, node, attrs=node_attrs),
                                 span("step", tid, mid, parent=node, start=T0 + 1, attrs=middle),
                                 span("chat", tid, sid, parent=mid, kind=3, start=T0 + 2, attrs=llm_attrs)]))
    write_lines(tmp_path / "otel" / "traces.jsonl", lines)
    ingest(tmp_path)
    con = connect(tmp_path)
    got = dict(con.execute("SELECT trace_id, agent_name FROM llm_calls").fetchall())
    assert {case: got[tid] for case, tid in traces.items()} == {
        "traceloop": "planner", "langsmith": "critic", "nearer": "inner", "broken": None}
    with pytest.raises(duckdb.Error):  # the test's own guard: the broken metadata really is not JSON
        con.execute("SELECT json_extract_string(?::JSON, '$.x')", ["{not json langgraph_node"]).fetchall()

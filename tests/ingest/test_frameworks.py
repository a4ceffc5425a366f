"""Agent frameworks end to end, each with the tracing its users turn on: Pydantic AI's own
OpenTelemetry instrumentation and the OpenAI Agents SDK under OpenInference, driving the real
openai client against the fake server through the embedded collector. Whatever the framework,
llm_calls holds what the server saw and answered, tool calls link to the call that asked for them,
and the snapshot carries the reward."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from spanrl.query import connect
from spanrl.transitions import read_snapshot
from tests.ingest.conftest import ROOT, ingest

FRAMEWORKS = {"pydantic-ai": "genai_semconv_latest", "openai-agents": "openinference"}


@pytest.fixture(scope="module")
def framework_lake(tmp_path_factory):
    from tests.helpers.collector import running_collector
    from tests.helpers.fake_openai import FakeOpenAI

    data = tmp_path_factory.mktemp("frameworks") / "data"
    runs, exchanges = {}, {}
    with FakeOpenAI() as fake, running_collector(data) as ep:
        env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=ep.http, PYTHONPATH=str(ROOT))
        for i, name in enumerate(FRAMEWORKS):  # one at a time, so each run's exchanges are its own
            seen = len(fake.exchanges)
            out = subprocess.run([sys.executable, str(ROOT / "tests" / "helpers" / "framework_agents.py"),
                                  "--framework", name, "--base-url", fake.url, "--reward", str(0.5 + i / 4)],
                                 env=env, capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, f"{name}:\n{out.stderr[-3000:]}"
            runs[name] = json.loads(out.stdout.strip().splitlines()[-1])
            exchanges[name] = list(fake.exchanges)[seen:]
    assert ingest(data).rejects == 0
    return data, runs, exchanges


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_framework_calls_are_what_the_server_saw(framework_lake, framework: str) -> None:
    data, runs, exchanges = framework_lake
    con = connect(data)
    rows = con.execute("SELECT span_id, agent_name, convention, input_messages, output_message FROM llm_calls "
                       "WHERE trace_id = ? ORDER BY start_ns", [runs[framework]["trace_id"]]).fetchall()
    assert len(rows) == len(exchanges[framework]) == 2  # ask for the tool, then answer with its result
    for (_, agent, convention, inp, outp), (request, response) in zip(rows, exchanges[framework], strict=True):
        assert (agent, convention) == ("weather_bot", FRAMEWORKS[framework])
        got, sent = json.loads(inp), request["messages"]
        assert [(m["role"], m.get("content") or None) for m in got] == [(m["role"], m.get("content") or None) for m in sent]
        answer, said = json.loads(outp), response["choices"][0]["message"]
        assert answer.get("content") == said.get("content")
        assert [t["id"] for t in answer.get("tool_calls", [])] == [t["id"] for t in said.get("tool_calls") or []]
    first_call = json.loads(rows[0][4])["tool_calls"][0]
    assert json.loads(first_call["function"]["arguments"]) == {"query": "Weather in Paris?"}
    assert json.loads(rows[1][3])[-1]["tool_call_id"] == first_call["id"]
    (tool,) = con.execute("SELECT tool_name, llm_span_id, result FROM tool_calls WHERE trace_id = ?",
                          [runs[framework]["trace_id"]]).fetchall()
    assert tool == ("get_weather", rows[0][0], "rainy in Weather in Paris?")


def test_each_framework_run_is_one_rewarded_rollout(framework_lake) -> None:
    data, runs, _ = framework_lake
    out = subprocess.run([sys.executable, "-m", "spanrl", "transitions", "build", "--data", str(data), "--settle", "0s"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    table, _ = read_snapshot(data)
    by_rollout: dict[str, list] = {}
    for row in table.to_pylist():
        by_rollout.setdefault(row["rollout_id"], []).append((row["step"], row["n_steps"], row["final_reward"]))
    assert by_rollout == {runs["pydantic-ai"]["trace_id"]: [(0, 2, 0.5), (1, 2, 0.5)],
                          runs["openai-agents"]["trace_id"]: [(0, 2, 0.75), (1, 2, 0.75)]}

"""Content coverage with a real instrumentation whose content capture is off: the openai-v2
instrumentation (its opentelemetry-util-genai handler) in NO_CONTENT mode next to a run with
content. Every call still counts as an LLM call; the unreadable ones are counted per scope in the
summary and the manifest, `spanrl ingest` prints the hint, and the coverage view lists their spans."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version

import pytest

from spanrl.query import connect
from spanrl.transitions import read_snapshot
from tests.ingest.conftest import AGENT, ROOT


@pytest.fixture(scope="module")
def capture_off(tmp_path_factory):
    from tests.helpers.collector import running_collector
    from tests.helpers.fake_openai import FakeOpenAI

    data = tmp_path_factory.mktemp("coverage") / "data"
    runs = {}
    with FakeOpenAI() as fake, running_collector(data) as ep:
        env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=ep.http, PYTHONPATH=str(ROOT))
        for inst in ("openai-v2-no-content", "openai-v2-latest"):
            out = subprocess.run([sys.executable, str(AGENT), "--base-url", fake.url, "--instrumentation", inst,
                                  "--scenario", "tools", "--reward", "1.0", "--rollout-id", f"r-{inst}"],
                                 env=env, capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr[-3000:]
            runs[inst] = json.loads(out.stdout.strip().splitlines()[-1])
    res = subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--settle", "0s"],
                         capture_output=True, text=True, timeout=300, env=dict(os.environ, COLUMNS="200"))
    assert res.returncode == 0, res.stderr
    return data, runs, res.stdout


def test_calls_without_content_are_counted_hinted_and_listed(capture_off) -> None:
    data, runs, output = capture_off
    assert "content capture looks disabled" in output and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in output
    _, manifest = read_snapshot(data)
    stats = manifest["stats"]
    assert stats["llm_calls"] == 4  # every call counts, readable or not
    (group,) = stats["content_coverage"]
    # util-genai's handler records the span (scope and version of the installed package)
    assert (group["scope_name"], group["scope_version"]) == ("opentelemetry.util.genai.handler",
                                                           version("opentelemetry-util-genai"))
    assert (group["without_input"], group["without_output"]) == (2, 2)
    assert "gen_ai.request.model" in group["attribute_keys"] and group["conventions"] == ["genai_semconv"]
    con = connect(data, stage2=False)
    listed = con.execute("SELECT trace_id, span_id FROM coverage WHERE missing_input OR missing_output ORDER BY span_id").fetchall()
    chat_spans = con.execute("SELECT trace_id, span_id FROM spans WHERE trace_id = ? AND name LIKE 'chat %' ORDER BY span_id",
                             [runs["openai-v2-no-content"]["trace_id"]]).fetchall()
    assert listed == chat_spans and len(listed) == 2
    # util-genai SPAN_ONLY records the tool call but not the tool definitions: counted, not silent
    no_schema = con.execute("SELECT trace_id FROM coverage WHERE missing_tool_schema").fetchall()
    assert no_schema == [(runs["openai-v2-latest"]["trace_id"],)] and stats["llm_calls_without_tool_schema"] == 1
    # the readable run became transitions; the capture-off run's calls could not
    table, _ = read_snapshot(data)
    assert set(table.column("rollout_id").to_pylist()) == {"r-openai-v2-latest"}

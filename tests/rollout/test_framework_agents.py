"""Issue 41's acceptance on the zero-code path: the repository's framework examples, unmodified
(``examples/langgraph_agent``: LangGraph's ReAct agent; ``examples/agents_sdk_agent``: the OpenAI Agents
SDK's triage → math handoff), run by ``spanrl rollout --model`` under ``opentelemetry-instrument`` with every
installed instrumentor, then one ``spanrl ingest`` and one ``spanrl train``.

Checked here, on the tiny random model (the capture, not the agents' luck): every request the server
answered is one ``llm_calls`` row with its token ids, one transition with ``token_source = engine``, and
``spanrl train`` trains on every one of them (nothing skipped).

What this does not reproduce: the live SmolLM2 run in which a LangGraph rollout of two calls gave one request
two rows. There OpenInference LangChain's record (which names the response id only in LangChain's output,
``llm_output.id``) could not be paired with the server's by content. The tiny model makes one call per
rollout, so this test passes on the old SQL too; the id extraction itself is checked by
``tests/ingest/test_mixes.py::test_every_record_of_a_request_names_its_response_id`` (fails on the old SQL).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.tiny_model import make_tiny_model

ROOT = Path(__file__).resolve().parents[2]
INSTRUMENT = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
AGENTS = ("langgraph_agent", "agents_sdk_agent")
USER_ENV = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY", "OTEL_SERVICE_NAME": "calc-agents"}

pytestmark = pytest.mark.skipif(INSTRUMENT is None, reason="opentelemetry-distro not installed (dev extra)")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("framework-agents")
    model = make_tiny_model(root / "tiny")
    data = root / "data"
    tasks = root / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task_id": agent, "input": "Sam has 15 pens and gets 8 more. How many?",
                                         "expected": "23"}) + "\n" for agent in AGENTS))
    cmd = [sys.executable, "-m", "spanrl", "rollout", "--data", str(data), "--tasks", str(tasks), "--n", "2",
           "--model", str(model), "--served-model-name", "gpt-4o-mini", "--retries", "0", "--timeout", "300s",
           "--score", f"{sys.executable} {ROOT / 'examples' / 'score_number.py'}",
           "--", INSTRUMENT, sys.executable, f"{ROOT / 'examples'}/{{task_id}}/agent.py"]
    rollout = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, **USER_ENV})
    assert rollout.returncode == 0, rollout.stdout[-3000:] + rollout.stderr[-3000:]
    ingest = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--settle", "0s"])
    assert ingest.exit_code == 0, ingest.output
    return data, model


def _query(data: Path, sql: str) -> list[dict]:
    from spanrl.query import connect, run_query

    return run_query(data, sql, connect(data)).to_pylist()


def test_every_served_request_is_one_row_with_the_engines_ids(run) -> None:
    data, _ = run
    served = _query(data, "SELECT count(*) AS n FROM spans WHERE scope_name = 'spanrl.serve'")[0]["n"]
    rows = _query(data, "SELECT service_name, prompt_token_ids IS NOT NULL AND response_token_ids IS NOT NULL AS ids, "
                        "len(merged_spans) AS merged FROM llm_calls")
    assert served >= 4 and len(rows) == served, rows  # each attempt asked at least once
    assert all(r["ids"] for r in rows), rows
    assert all(r["merged"] >= 2 for r in rows), rows  # the server and the agent's instrumentations, one row


def test_one_engine_transition_per_request_and_train_uses_them_all(run) -> None:
    from spanrl.transitions import read_snapshot

    data, model = run
    served = _query(data, "SELECT count(*) AS n FROM spans WHERE scope_name = 'spanrl.serve'")[0]["n"]
    table, _ = read_snapshot(data)
    sources = table.column("token_source").to_pylist()
    assert len(sources) == served and set(sources) == {"engine"}, sources
    res = CliRunner().invoke(cli, ["train", "--data", str(data), "--model", str(model), "--no-progress"])
    assert res.exit_code == 0, res.output
    latest = (data / "adapters" / "LATEST").read_text().strip()
    state = json.loads((data / "adapters" / latest / "training_state.json").read_text())
    assert state["data"]["engine"] == served and state["data"]["rows"] == served, state["data"]
    assert not any(state["data"].get(k) for k in ("template_error", "template_mismatch", "bad_token_ids", "empty",
                                                   "no_prompt")), state["data"]


def test_the_text_path_renders_the_prompt_the_engine_saw(run) -> None:
    """Re-rendering each transition's messages and tools with the model's template (the trainer's text
    path, ``trainer/render.py``) gives the engine's own prompt ids: the row holds what the model was shown.
    The Agents SDK marks every handoff tool ``strict``; GenAI's ``gen_ai.tool.definitions`` has no place
    for it, so a row that took the client's tool list rendered another prompt (68 of 68 rows of the live
    SmolLM2 run, before the engine's record of the tools came first)."""
    from transformers import AutoTokenizer

    from spanrl.trainer.render import render_prompt
    from spanrl.transitions import read_snapshot

    data, model = run
    tokenizer = AutoTokenizer.from_pretrained(model)
    rows = read_snapshot(data)[0].to_pylist()
    with_tools = [r for r in rows if r["tools"]]
    assert with_tools, "no call offered tools: the check below would not see a tool list"
    differ = [(r["agent_name"], r["span_id"]) for r in rows
              if render_prompt(tokenizer, json.loads(r["prompt_messages"]), json.loads(r["tools"] or "null"))
              != r["prompt_token_ids"]]
    assert not differ, differ


def test_each_transition_says_why_the_engine_stopped(run) -> None:
    """Snapshot schema v3's ``finish_reason`` is the engine's: a reply cut at ``max_tokens`` has no
    end-of-turn token in the engine's ids, and the trainer's text path must not add one (tests/trainer)."""
    from transformers import AutoTokenizer

    from spanrl.transitions import read_snapshot

    data, model = run
    tokenizer = AutoTokenizer.from_pretrained(model)
    table, manifest = read_snapshot(data)
    rows = table.to_pylist()
    served = _query(data, "SELECT json_extract_string(attributes, '$.\"gen_ai.response.finish_reasons\"[0]') AS f "
                          "FROM spans WHERE scope_name = 'spanrl.serve'")
    assert sorted(r["finish_reason"] for r in rows) == sorted(s["f"] for s in served), (rows, served)
    assert {r["finish_reason"] for r in rows} <= {"stop", "length", "tool_calls"}
    # and the ingest summary says how many replies were cut (`replies cut at the token limit`)
    assert manifest["stats"]["llm_calls_cut"] == sum(r["finish_reason"] == "length" for r in rows) > 0
    for r in rows:  # (a stop string also ends a reply with 'stop' and no end-of-turn token: one direction only)
        if r["finish_reason"] == "length":
            assert r["response_token_ids"][-1] != tokenizer.eos_token_id, r["response_token_ids"][-3:]

"""``spanrl gateway`` end to end: ``spanrl rollout --policy-url <gateway>`` runs an agent with NO
telemetry (plain_agent.py: one tool call, then a streamed answer) and the same task with an agent
instrumented by the official opentelemetry-instrumentation-openai-v2 (tests/rollout/agent.py), both
through the gateway in front of a vLLM-style upstream (tests/helpers/fake_vllm.py); then one
``spanrl ingest``. One live run per agent for the module (the gateway's embedded collector is the
runner's collector too); the other tests use an in-memory span exporter.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanrl.cli import cli
from spanrl.gateway.server import GatewayConfig, gateway_in_background
from tests.helpers.fake_vllm import FakeVLLM
from tests.rollout.lake import ingest, query_spans

HERE = Path(__file__).parent
PLAIN = [sys.executable, str(HERE / "plain_agent.py")]
INSTRUMENTED = [sys.executable, str(HERE.parent / "rollout" / "agent.py")]
TASKS = [{"task_id": "paris", "input": "capital of France"}, {"task_id": "oslo", "input": "weather in Oslo"}]


def _post(url: str, body: dict, headers: dict | None = None) -> dict:
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _rollout(data: Path, tasks: Path, policy: str, command: list[str]):
    return CliRunner().invoke(cli, ["rollout", "--data", str(data), "--tasks", str(tasks), "--n", "1",
                                    "--policy-url", policy, "--timeout", "60s", "--", *command])


def _ends(data: Path, command: list[str]) -> list[dict]:
    run = next(p for p in (data / "runs").iterdir() if json.loads((p / "run.json").read_text())["command"] == command)
    return [e for e in map(json.loads, (run / "attempts.jsonl").read_text().splitlines()) if e.get("event") == "end"]


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    data = tmp_path_factory.mktemp("gateway") / "data"
    data.mkdir()
    tasks = data.parent / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    with FakeVLLM() as upstream:
        gw = gateway_in_background(GatewayConfig(upstream=upstream.url, data=data, port=0))
        try:
            plain = _rollout(data, tasks, gw.url + "/v1", PLAIN)
            n_plain = len(upstream.exchanges)
            traced = _rollout(data, tasks, gw.url + "/v1", INSTRUMENTED)
            n_traced = len(upstream.exchanges)
            _post(gw.url, {"model": "policy", "messages": [{"role": "user", "content": "stray call"}]},
                  {"x-spanrl-agent": "solver"})
        finally:
            gw.stop()  # flushes the gateway's spans into its collector, then stops it
        exchanges = list(upstream.exchanges)
    ingest(data, "--missing-reward", "zero")
    yield {"data": data, "plain": plain, "traced": traced, "gateway": gw.gateway,
           "plain_ex": exchanges[:n_plain], "traced_ex": exchanges[n_plain:n_traced], "stray": exchanges[n_traced:]}


def _snapshot(data: Path) -> list[dict]:
    from spanrl.transitions import read_snapshot

    table, _ = read_snapshot(data)
    return table.select(["rollout_id", "prompt_token_ids", "response_token_ids", "token_source"]).to_pylist()


def _ids(exchanges: list) -> list[tuple]:
    return sorted((tuple(resp["prompt_token_ids"]), tuple(resp["choices"][0]["token_ids"])) for _, resp in exchanges)


def test_plain_agent_calls_are_engine_transitions_of_the_runners_rollouts(lake) -> None:
    assert lake["plain"].exit_code == 0, lake["plain"].output
    ends = _ends(lake["data"], PLAIN)
    assert [e["status"] for e in ends] == ["ok", "ok"], ends
    ex = lake["plain_ex"]
    assert len(ex) == 2 * len(TASKS) and all(req.get("return_token_ids") is True for req, _ in ex)
    assert sum(1 for req, _ in ex if req.get("stream")) == len(TASKS)  # the streamed answers went through too
    mine = {e["rollout_id"] for e in ends}
    rows = [r for r in _snapshot(lake["data"]) if r["rollout_id"] in mine]
    assert {r["token_source"] for r in rows} == {"engine"}
    assert sorted((tuple(r["prompt_token_ids"]), tuple(r["response_token_ids"])) for r in rows) == _ids(ex)
    per_rollout = {rid: sum(1 for r in rows if r["rollout_id"] == rid) for rid in mine}
    assert per_rollout == {rid: 2 for rid in mine}


def test_gateway_spans_are_children_of_the_runners_attempt_span(lake) -> None:
    rows = query_spans(lake["data"], """
        SELECT g.attributes->>'spanrl.rollout_id' AS rid, p.name AS parent, p.attributes->>'spanrl.rollout_id' AS prid
        FROM spans g JOIN spans p ON p.trace_id = g.trace_id AND p.span_id = g.parent_span_id
        WHERE g.scope_name = 'spanrl.gateway' AND g.attributes->>'spanrl.rollout_id' IS NOT NULL""")
    assert len(rows) >= 2 * len(TASKS)
    assert all(r["parent"] == "spanrl.rollout" and r["prid"] == r["rid"] for r in rows), rows


def test_instrumented_agent_through_the_gateway_gives_one_row_per_call(lake) -> None:
    assert lake["traced"].exit_code == 0, lake["traced"].output
    ends = _ends(lake["data"], INSTRUMENTED)
    mine = {e["rollout_id"] for e in ends}
    rows = [r for r in _snapshot(lake["data"]) if r["rollout_id"] in mine]
    assert len(rows) == len(lake["traced_ex"]) == 2 * len(TASKS)  # not two rows (client span + gateway span)
    assert {r["token_source"] for r in rows} == {"engine"}
    assert sorted((tuple(r["prompt_token_ids"]), tuple(r["response_token_ids"])) for r in rows) == _ids(lake["traced_ex"])


def test_a_call_with_no_rollout_nor_traceparent_is_its_own_rollout_and_counted(lake) -> None:
    assert lake["gateway"].counts["unattributed"] == 1
    assert lake["gateway"].counts["calls"] == 4 * len(TASKS) + 1
    rows = query_spans(lake["data"], """
        SELECT trace_id, parent_span_id FROM spans
        WHERE scope_name = 'spanrl.gateway' AND attributes->>'spanrl.rollout_id' IS NULL""")
    assert len(rows) == 1 and not rows[0]["parent_span_id"]


def test_the_agent_header_names_the_calls_agent_and_no_header_names_none(lake) -> None:
    """An agent without telemetry names itself with x-spanrl-agent (what serve's --agent-adapter and the
    gateway's --prompts read): the gateway's span records it, so `spanrl train --agent` finds its calls."""
    rows = query_spans(lake["data"], """
        SELECT c.agent_name, s.attributes->>'spanrl.rollout_id' IS NULL AS stray
        FROM llm_calls c JOIN spans s USING (trace_id, span_id) WHERE s.scope_name = 'spanrl.gateway'""")
    assert [r["agent_name"] for r in rows if r["stray"]] == ["solver"]
    plain = [r for r in rows if not r["stray"]]
    assert len(plain) == 2 * len(TASKS) and {r["agent_name"] for r in plain} == {None}  # the plain agent sent none


@pytest.fixture(scope="module")
def memory_gateway():
    exporter = InMemorySpanExporter()
    with FakeVLLM() as upstream, FakeVLLM(strict=True) as hosted:
        gws = [gateway_in_background(GatewayConfig(upstream=u.url, port=0), span_exporter=exporter)
               for u in (upstream, hosted)]
        try:
            yield gws, exporter, upstream, hosted
        finally:
            for gw in gws:
                gw.stop()


def test_an_agent_that_asks_for_ids_gets_them_and_a_caller_traceparent_wins(memory_gateway) -> None:
    (gw, _), exporter, upstream, _ = memory_gateway
    parent = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
    resp = _post(gw.url, {"model": "policy", "return_token_ids": True, "messages": [{"role": "user", "content": "hi there"}]},
                 {"traceparent": parent})
    assert resp["prompt_token_ids"] == upstream.exchanges[-1][1]["prompt_token_ids"]
    assert resp["choices"][0]["token_ids"] == upstream.exchanges[-1][1]["choices"][0]["token_ids"]
    span = exporter.get_finished_spans()[-1]
    assert format(span.context.trace_id, "032x") == "ab" * 16 and format(span.parent.span_id, "016x") == "cd" * 8
    assert list(span.attributes["spanrl.response_token_ids"]) == resp["choices"][0]["token_ids"]
    assert gw.gateway.counts["unattributed"] == 0


def test_an_upstream_that_rejects_token_ids_is_asked_without_them(memory_gateway) -> None:
    (_, gw), exporter, _, hosted = memory_gateway
    for _ in range(2):
        resp = _post(gw.url, {"model": "policy", "messages": [{"role": "user", "content": "hello"}]})
        assert resp["choices"][0]["message"]["content"] == "Echo: hello"
    asked = ["return_token_ids" in req for req, _ in hosted.exchanges]
    assert asked == [True, False, False]  # asked once, then never again
    span = exporter.get_finished_spans()[-1]
    assert "spanrl.response_token_ids" not in span.attributes and span.attributes["gen_ai.response.id"]


def test_a_rollout_id_with_a_slash_or_percent_survives_the_per_attempt_url(memory_gateway) -> None:
    """The runner puts the rollout id into the base URL percent-encoded (``quote(id, safe='')``); the
    gateway's span must carry the id exactly, ``/`` and ``%`` included."""
    from urllib.parse import quote

    from spanrl.rollout.spans import new_span_ids, traceparent

    (gw, _), exporter, _, _ = memory_gateway
    rollout_id = "team/a%41-1"
    base = f"{gw.url}/r/{quote(rollout_id, safe='')}/{traceparent(new_span_ids())}"
    _post(base, {"model": "policy", "messages": [{"role": "user", "content": "hi"}]})
    assert exporter.get_finished_spans()[-1].attributes["spanrl.rollout_id"] == rollout_id


def test_a_client_that_closes_after_done_still_gets_its_call_recorded() -> None:
    """An SDK stops reading a stream at ``data: [DONE]`` and may close the connection while the
    upstream still sends (an SSE comment here, half a second later): the gateway's next write then
    fails. That is the client leaving, not the upstream failing: the call is recorded whole, token
    ids included, with no error (it was once marked upstream_error with no ids: a flaky test)."""
    import socket
    import struct
    import time
    from urllib.parse import urlparse

    exporter = InMemorySpanExporter()
    with FakeVLLM(tail_after_done_s=0.5) as upstream:
        gw = gateway_in_background(GatewayConfig(upstream=upstream.url, port=0), span_exporter=exporter)
        try:
            url = urlparse(gw.url)
            body = json.dumps({"model": "policy", "stream": True, "messages": [{"role": "user", "content": "hi there"}]})
            sock = socket.create_connection((url.hostname, url.port), timeout=30)
            sock.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
            seen = b""
            while b"[DONE]" not in seen:
                seen += sock.recv(65536)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset, as a killed client
            sock.close()
            deadline = time.monotonic() + 30
            while not exporter.get_finished_spans() and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            gw.stop()
    span = exporter.get_finished_spans()[-1]
    assert "error.type" not in span.attributes, span.attributes
    assert list(span.attributes["spanrl.response_token_ids"]) == upstream.exchanges[-1][1]["choices"][0]["token_ids"]

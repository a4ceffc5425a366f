"""A prompt version's worked examples as conversation turns (``turns.json``): ``spanrl gateway --prompts``
(a real subprocess, a fake upstream, the real ``openai`` and ``anthropic`` SDKs) puts them in after the
system prompt in each API's own shape, says so on the span, and the lake's LLM call holds them (what
the model saw)."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from spanrl.prompts.scoring import pinned_url, started_gateway
from spanrl.prompts.store import add_version, read_version, text_sha256
from tests.helpers.fake_apis import FakeApis
from tests.rollout.lake import ingest, query_spans

ORIGINAL = "You are a calculator."
CALL = {"id": "call_d1", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "42 * 27"}'}}
TURNS = [{"role": "user", "content": "Chen buys 42 bags with 27 pens in each bag. How many pens is that?"},
         {"role": "assistant", "content": "", "tool_calls": [CALL]},
         {"role": "tool", "tool_call_id": "call_d1", "content": "1134"},
         {"role": "assistant", "content": "1134"}]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    data = tmp_path_factory.mktemp("gw-turns") / "data"
    data.mkdir()
    meta = {"method": "demonstration turns", "original_sha256": text_sha256(ORIGINAL)}
    plain = add_version(data, "calc", ORIGINAL, {**meta, "method": "original"}, promote=True)
    turns = add_version(data, "calc", ORIGINAL, meta, turns=TURNS)
    with FakeApis() as upstream:
        with started_gateway(data, upstream.url, data.parent / "gateway.log") as root:
            base = pinned_url(root, "calc", turns.version)
            client = openai.OpenAI(base_url=base, api_key="x", max_retries=0)
            client.chat.completions.create(model="policy", messages=[{"role": "system", "content": ORIGINAL},
                                                                     {"role": "user", "content": "2+2?"}])
            client.responses.create(model="policy", instructions=ORIGINAL, input="2+2?")
            anthropic.Anthropic(base_url=base.removesuffix("/v1"), api_key="x", max_retries=0).messages.create(
                model="policy", system=ORIGINAL, max_tokens=16, messages=[{"role": "user", "content": "2+2?"}])
            openai.OpenAI(base_url=root + "/v1", api_key="x", max_retries=0).chat.completions.create(
                model="policy", messages=[{"role": "system", "content": ORIGINAL}, {"role": "user", "content": "3+3?"}])
        calls = {api: [body for body, _ in upstream.calls[api]] for api in ("responses", "messages")}
        chats = [body for body, _ in upstream.exchanges]
    ingest(data, "--missing-reward", "zero")
    return {"data": data, "chats": chats, "calls": calls, "plain": plain, "turns": turns}


def test_the_store_keeps_turns_apart_from_the_text(run) -> None:
    assert run["turns"].version != run["plain"].version  # same text, other turns: another version
    assert read_version(run["data"], "calc", run["turns"].version).turns == TURNS
    assert read_version(run["data"], "calc", run["plain"].version).turns == []
    again = add_version(run["data"], "calc", ORIGINAL, {"method": "demonstration turns"}, turns=TURNS)
    assert again.version == run["turns"].version  # found, not stored twice


def test_each_api_gets_the_turns_in_its_own_shape(run) -> None:
    chat, latest = run["chats"]
    assert chat["messages"] == [{"role": "system", "content": ORIGINAL}, *TURNS, {"role": "user", "content": "2+2?"}]
    assert latest["messages"] == [{"role": "system", "content": ORIGINAL}, {"role": "user", "content": "3+3?"}]
    responses = run["calls"]["responses"][0]["input"]
    assert [i.get("type") or i["role"] for i in responses] == ["user", "function_call", "function_call_output",
                                                                "assistant", "user"]
    assert responses[1]["call_id"] == responses[2]["call_id"] == "call_d1" and responses[2]["output"] == "1134"
    messages = run["calls"]["messages"][0]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == [{"type": "tool_use", "id": "call_d1", "name": "calculator",
                                       "input": {"expression": "42 * 27"}}]
    assert messages[2]["content"][0] == {"type": "tool_result", "tool_use_id": "call_d1", "content": "1134"}


def test_the_span_counts_the_turns_and_the_lake_holds_what_the_model_saw(run) -> None:
    rows = query_spans(run["data"], "SELECT attributes->>'spanrl.prompt.version' AS v, "
                                    "attributes->>'spanrl.prompt.turns' AS t FROM spans "
                                    "WHERE scope_name = 'spanrl.gateway' ORDER BY start_ns")
    assert [(r["v"], r["t"]) for r in rows] == [(run["turns"].version, "4")] * 3 + [(run["plain"].version, None)]
    calls = query_spans(run["data"], "SELECT CAST(input_messages AS VARCHAR) AS m FROM llm_calls ORDER BY start_ns")
    seen = json.loads(calls[0]["m"])
    assert len(seen) == 6 and json.loads(seen[2]["tool_calls"][0]["function"]["arguments"]) == {"expression": "42 * 27"}

"""OpenInference messages read from one parse of a span's attributes (llm_calls/openinference.sql: a map of
every attribute, not a JSON parse per message and field, which grew with the square of a conversation).
Attributes that repeat a key do not parse as a map: such a span's messages are read from the text, key by
key, as before, so the same span gives the same row either way."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ingest.conftest import ingest, rows_of
from tests.ingest.otlp_lines import key_values, new_span_id, new_trace_id, span, trace_line, write_lines

TURNS = 12  # a conversation long enough that every message has tool calls, results and text parts


# Each convention's flattened names: a message field under message i, and a tool call's field f
OPENINFERENCE = {"msg": "llm.input_messages.{i}.message.{f}", "call": "llm.input_messages.{i}.message.tool_calls.0.tool_call.{f}",
                 "fn": {"id": "id", "name": "function.name", "arguments": "function.arguments"},
                 "out": "llm.output_messages.0.message.{f}", "head": {
                     "openinference.span.kind": "LLM", "llm.model_name": "gpt-x", "llm.provider": "openai",
                     "llm.token_count.prompt": 120, "llm.token_count.completion": 7,
                     "llm.invocation_parameters": json.dumps({"temperature": 0.3}),
                     "llm.tools.0.tool.json_schema": json.dumps({"type": "function", "function": {
                         "name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "integer"}}}}}),
                     "output.value": json.dumps({"id": "chatcmpl-9", "choices": [{"finish_reason": "stop"}]})}}
# what the call's other columns read from those attributes, from the map and from the text alike
CALL_COLUMNS = {"model": "gpt-x", "provider": "openai", "input_tokens": 120, "output_tokens": 7, "temperature": 0.3,
                "finish_reason": "stop", "response_id": "chatcmpl-9"}
OPENLLMETRY = {"msg": "gen_ai.prompt.{i}.{f}", "call": "gen_ai.prompt.{i}.tool_calls.0.{f}",
               "fn": {"id": "id", "name": "name", "arguments": "arguments"}, "out": "gen_ai.completion.0.{f}",
               "head": {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-x", "llm.request.type": "chat"}}


def _attributes(names: dict) -> dict:
    """A long conversation flattened the convention's way (OpenInference's user text as two parts)."""
    msg = names["msg"].format
    a = {**names["head"], msg(i=0, f="role"): "system", msg(i=0, f="content"): "Be brief."}
    i = 1
    for t in range(TURNS):
        a[msg(i=i, f="role")] = "user"
        if names is OPENINFERENCE:
            a[msg(i=i, f="contents.0.message_content.type")] = "text"
            a[msg(i=i, f="contents.0.message_content.text")] = f"Question {t}, part one. "
            a[msg(i=i, f="contents.1.message_content.text")] = f"Part two of {t}."
        else:
            a[msg(i=i, f="content")] = f"Question {t}, part one. Part two of {t}."
        a[msg(i=i + 1, f="role")] = "assistant"
        for field, value in (("id", f"c{t}"), ("name", "lookup"), ("arguments", json.dumps({"q": t}))):
            a[names["call"].format(i=i + 1, f=names["fn"][field])] = value
        a[msg(i=i + 2, f="role")] = "tool"
        a[msg(i=i + 2, f="content")] = f"result {t} with \"quotes\" and \\ backslash"
        a[msg(i=i + 2, f="tool_call_id")] = f"c{t}"
        i += 3
    a[names["out"].format(f="role")] = "assistant"
    a[names["out"].format(f="content")] = "Done."
    return a


def _expected() -> list[dict]:
    msgs = [{"role": "system", "content": "Be brief."}]
    for t in range(TURNS):
        msgs += [{"role": "user", "content": f"Question {t}, part one. Part two of {t}."},
                 {"role": "assistant", "content": None,
                  "tool_calls": [{"id": f"c{t}", "type": "function",
                                  "function": {"name": "lookup", "arguments": json.dumps({"q": t})}}]},
                 {"role": "tool", "content": f"result {t} with \"quotes\" and \\ backslash", "tool_call_id": f"c{t}"}]
    return msgs


def test_a_long_conversation_and_the_same_span_with_a_repeated_key_give_the_same_messages(tmp_path: Path) -> None:
    spans = {}
    for label in ("once", "repeated"):
        tid, sid = new_trace_id(), new_span_id()
        sp = span("ChatCompletion", tid, sid, attrs=_attributes(OPENINFERENCE))
        if label == "repeated":  # a key twice (an SDK that does not dedupe): the attributes are no map
            sp["attributes"] += key_values({"llm.model_name": "gpt-x"})
        spans[label] = (sid, sp)
    write_lines(tmp_path / "otel" / "traces-oi.jsonl", [trace_line([sp]) for _, sp in spans.values()])
    ingest(tmp_path)
    from spanrl.ingest.views import connect

    con = connect(tmp_path)
    no_map = {r["span_id"]: r["no_map"] for r in rows_of(
        con, "SELECT span_id, json_transform(attributes, '\"MAP(VARCHAR, VARCHAR)\"') IS NULL AS no_map FROM spans")}
    assert no_map == {spans["once"][0]: False, spans["repeated"][0]: True}  # both paths are taken
    rows = {r["span_id"]: r for r in rows_of(con, "SELECT span_id, convention, input_messages, output_message, tools, "
                                                  f"{', '.join(CALL_COLUMNS)} FROM llm_calls")}
    for label, (sid, _) in spans.items():
        row = rows[sid]
        assert row["convention"] == "openinference", label
        assert json.loads(row["input_messages"]) == _expected(), label
        assert json.loads(row["output_message"]) == {"role": "assistant", "content": "Done."}, label
        assert {k: row[k] for k in CALL_COLUMNS} == CALL_COLUMNS, label
        assert json.loads(row["tools"]) == [json.loads(OPENINFERENCE["head"]["llm.tools.0.tool.json_schema"])], label
    once, repeated = rows[spans["once"][0]], rows[spans["repeated"][0]]
    assert {k: v for k, v in once.items() if k != "span_id"} == {k: v for k, v in repeated.items() if k != "span_id"}


def test_openllmetry_reads_its_flattened_prompt_the_same_from_the_map_and_from_the_text(tmp_path: Path) -> None:
    """The same one-parse read for OpenLLMetry's gen_ai.prompt.{i}.* (llm_calls/openllmetry.sql)."""
    spans = {}
    for label in ("once", "repeated"):
        tid, sid = new_trace_id(), new_span_id()
        sp = span("openai.chat", tid, sid, attrs=_attributes(OPENLLMETRY), kind=3)
        if label == "repeated":
            sp["attributes"] += key_values({"gen_ai.request.model": "gpt-x"})
        spans[label] = (sid, sp)
    write_lines(tmp_path / "otel" / "traces-ol.jsonl",
                [trace_line([sp], scope="opentelemetry.instrumentation.openai.v1") for _, sp in spans.values()])
    ingest(tmp_path)
    from spanrl.ingest.views import connect

    rows = {r["span_id"]: r for r in rows_of(connect(tmp_path), "SELECT span_id, convention, input_messages, "
                                                               "output_message FROM llm_calls")}
    for label, (sid, _) in spans.items():
        assert rows[sid]["convention"] == "openllmetry", label
        assert json.loads(rows[sid]["input_messages"]) == _expected(), label
        assert json.loads(rows[sid]["output_message"]) == {"role": "assistant", "content": "Done."}, label

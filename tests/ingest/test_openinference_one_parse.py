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


def _attributes() -> dict:
    a = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-x", "llm.input_messages.0.message.role": "system",
         "llm.input_messages.0.message.content": "Be brief."}
    i = 1
    for t in range(TURNS):
        a[f"llm.input_messages.{i}.message.role"] = "user"
        a[f"llm.input_messages.{i}.message.contents.0.message_content.type"] = "text"
        a[f"llm.input_messages.{i}.message.contents.0.message_content.text"] = f"Question {t}, part one. "
        a[f"llm.input_messages.{i}.message.contents.1.message_content.text"] = f"Part two of {t}."
        a[f"llm.input_messages.{i + 1}.message.role"] = "assistant"
        a[f"llm.input_messages.{i + 1}.message.tool_calls.0.tool_call.id"] = f"c{t}"
        a[f"llm.input_messages.{i + 1}.message.tool_calls.0.tool_call.function.name"] = "lookup"
        a[f"llm.input_messages.{i + 1}.message.tool_calls.0.tool_call.function.arguments"] = json.dumps({"q": t})
        a[f"llm.input_messages.{i + 2}.message.role"] = "tool"
        a[f"llm.input_messages.{i + 2}.message.content"] = f"result {t} with \"quotes\" and \\ backslash"
        a[f"llm.input_messages.{i + 2}.message.tool_call_id"] = f"c{t}"
        i += 3
    a["llm.output_messages.0.message.role"] = "assistant"
    a["llm.output_messages.0.message.content"] = "Done."
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
        sp = span("ChatCompletion", tid, sid, attrs=_attributes())
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
    rows = {r["span_id"]: r for r in rows_of(con, "SELECT span_id, convention, input_messages, output_message "
                                                  "FROM llm_calls")}
    for label, (sid, _) in spans.items():
        row = rows[sid]
        assert row["convention"] == "openinference", label
        assert json.loads(row["input_messages"]) == _expected(), label
        assert json.loads(row["output_message"]) == {"role": "assistant", "content": "Done."}, label
    assert rows[spans["once"][0]]["input_messages"] == rows[spans["repeated"][0]]["input_messages"]

"""llm_calls (ingest/sql/llm_calls.sql): run with --explain for its operators; the convention rows alone
(what the floor's llm_calls also does) against the whole statement; the GenAI input messages converted as
genai_latest.sql does now (genai_chat_message: a message without tool calls written from a struct) and as it
did before (chat_message for every message: its tool calls built twice, its text parsed again)."""

BEFORE = "TEMP TABLE llm_calls AS"
_IM = ("(SELECT genai_messages(try_cast(json_extract_string(attributes, '$.\"gen_ai.input.messages\"') AS JSON)) AS im "
       "FROM _llm_spans WHERE contains(attributes, '\"gen_ai.input.messages\":'))")


def _converted(message: str) -> str:
    return (f"SELECT count(*), sum(strlen(CAST(to_json(coalesce(flatten(list_transform(im, lambda m: {message})), [])) "
            f"AS VARCHAR))) FROM {_IM}")


VARIANTS = {
    "the statement's query": lambda q: "SELECT count(*), sum(strlen(CAST(input_messages AS VARCHAR))) FROM ("
                                       + q + ")",
    "convention rows (_llm_call_conventions)": "SELECT count(*), sum(strlen(CAST(input_messages AS VARCHAR))) "
                                               "FROM _llm_call_conventions",
    "GenAI input messages, parse only": f"SELECT count(*), sum(len(im)) FROM {_IM}",
    "GenAI input messages, chat_message each (before)":
        _converted("[chat_message(m.\"role\", parts_text(m), parts_tool_calls(m), NULL)]"),
    "GenAI input messages, parts_messages (now)": _converted("parts_messages(m)"),
}

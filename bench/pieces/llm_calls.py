"""llm_calls (ingest/sql/llm_calls.sql): run with --explain for its operators; the convention rows alone
(what the floor's llm_calls also does) against the whole statement."""

BEFORE = "TEMP TABLE llm_calls AS"
VARIANTS = {
    "the statement's query": lambda q: "SELECT count(*), sum(strlen(CAST(input_messages AS VARCHAR))) FROM ("
                                       + q + ")",
    "convention rows (_llm_call_conventions)": "SELECT count(*), sum(strlen(CAST(input_messages AS VARCHAR))) "
                                               "FROM _llm_call_conventions",
}

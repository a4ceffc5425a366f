"""coverage (ingest/sql/coverage.sql): the statement as it is, against the same statement with its `calls` as
they were before 2026-12-08 (every prompt's JSON parsed for its length, every reply's for its tool calls),
twice each, alternating."""

BEFORE = "-- name: coverage"
_IN_NOW = """CASE WHEN starts_with(CAST(input_messages AS VARCHAR), '[{') THEN false
                ELSE coalesce(json_array_length(input_messages), 0) = 0 END"""
_TOOLS_NOW = """CASE WHEN tools IS NOT NULL OR NOT contains(CAST(output_message AS VARCHAR), '"tool_calls"') THEN false
                ELSE coalesce(json_array_length(output_message, '$.tool_calls'), 0) > 0 END"""


def _before(q: str) -> str:
    assert _IN_NOW in q and _TOOLS_NOW in q, "coverage.sql's calls changed: update this pieces file"
    return (q.replace(_IN_NOW, "coalesce(json_array_length(input_messages), 0) = 0")
             .replace(_TOOLS_NOW, "tools IS NULL AND coalesce(json_array_length(output_message, '$.tool_calls'), 0) > 0"))


VARIANTS = {
    "now": lambda q: f"SELECT count(*), count(span_id) FROM ({q})",
    "before (every prompt parsed)": lambda q: f"SELECT count(*), count(span_id) FROM ({_before(q)})",
    "now ": lambda q: f"SELECT count(*), count(span_id) FROM ({q})",
    "before (every prompt parsed) ": lambda q: f"SELECT count(*), count(span_id) FROM ({_before(q)})",
}

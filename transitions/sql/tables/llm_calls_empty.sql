-- name: llm_calls_empty
-- llm_calls when no segment holds any, no rows.
CREATE TABLE llm_calls AS SELECT NULL::VARCHAR AS trace_id WHERE false

-- name: rollout_tools($ended_ns, $started_ns, $trace_ids)
-- The tool runs of a rollout's traces and the LLM call that asked for each; the rollout's time span
-- skips other times' row groups (rollout_spans.sql), a tool call without a span has no time.
SELECT trace_id, span_id, llm_span_id, tool_name, arguments, result, status_code, error_type, start_ns, end_ns
FROM tool_calls
WHERE (start_ns BETWEEN $started_ns AND $ended_ns OR start_ns IS NULL) AND trace_id IN (SELECT unnest($trace_ids))
ORDER BY start_ns NULLS LAST

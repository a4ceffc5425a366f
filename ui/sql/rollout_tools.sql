-- name: rollout_tools
-- The tool runs of a rollout's traces and the LLM call that asked for each.
SELECT trace_id, span_id, llm_span_id, tool_name, arguments, result, status_code, error_type, start_ns, end_ns
FROM tool_calls
WHERE trace_id IN (SELECT unnest($trace_ids))
ORDER BY start_ns NULLS LAST

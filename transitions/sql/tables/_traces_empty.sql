-- name: _traces_empty
-- _traces when no segment holds any (a lake with no trace yet, or a one-segment build of another tool): every column, no rows.
-- reads:
-- creates: _traces
SELECT NULL::VARCHAR AS trace_id, NULL::VARCHAR AS rollout_id, NULL::VARCHAR[] AS lake_files,
       NULL::BIGINT AS orphan_spans, NULL::BIGINT AS orphans_reattached, NULL::BIGINT AS start_ns,
       NULL::BIGINT AS end_ns, NULL::BOOLEAN AS lone_call, NULL::BIGINT AS agent_calls_repaired,
       NULL::BIGINT AS agent_repairs_ambiguous, NULL::BIGINT AS llm_calls_complete,
       NULL::BIGINT AS llm_calls_without_response, NULL::DOUBLE AS prompt_messages_restored,
       NULL::BIGINT AS llm_calls_merged, NULL::BIGINT AS llm_calls_merged_across_traces,
       NULL::BIGINT AS llm_calls_without_tool_schema
WHERE false

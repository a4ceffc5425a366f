-- name: _traces_empty
-- _traces when no segment holds any (a one-segment build of another tool): the counts the summary adds up, no rows.
CREATE TABLE _traces AS
SELECT 0 AS orphan_spans, 0 AS orphans_reattached, 0 AS agent_calls_repaired, 0 AS agent_repairs_ambiguous,
       0 AS llm_calls_complete, 0 AS llm_calls_without_response, 0 AS prompt_messages_restored,
       0 AS llm_calls_merged, 0 AS llm_calls_merged_across_traces, 0 AS llm_calls_without_tool_schema
WHERE false

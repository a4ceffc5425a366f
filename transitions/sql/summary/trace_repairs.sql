-- name: trace_repairs
-- What stage 1 and 2 repaired or could not read, summed over every trace of the build (_traces rows).
SELECT coalesce(sum(orphan_spans), 0) AS orphan_spans, coalesce(sum(orphans_reattached), 0) AS orphans_reattached,
       coalesce(sum(agent_calls_repaired), 0) AS agent_calls_repaired,
       coalesce(sum(agent_repairs_ambiguous), 0) AS agent_repairs_ambiguous,
       coalesce(sum(llm_calls_complete), 0) AS llm_calls_complete,
       coalesce(sum(llm_calls_without_response), 0) AS llm_calls_without_response,
       coalesce(sum(prompt_messages_restored), 0) AS prompt_messages_restored,
       coalesce(sum(llm_calls_merged), 0) AS llm_calls_merged,
       coalesce(sum(llm_calls_merged_across_traces), 0) AS llm_calls_merged_across_traces,
       coalesce(sum(llm_calls_without_tool_schema), 0) AS llm_calls_without_tool_schema
FROM _traces

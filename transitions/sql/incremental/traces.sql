-- name: traces(${root})
-- A segment's bookkeeping, one row per computed trace: its rollout (_trace_rollouts), the lake files
-- that hold it (the FILES placeholder: trace_files_*.sql, rows of trace_id and absolute filename; cut
-- to the path relative to the data root), and the counts the build summary adds up over every segment.
-- A call is counted in the trace its row sits in (llm_calls.trace_id).
WITH files AS (
    SELECT trace_id, list(DISTINCT filename[len(${root}) + 2:] ORDER BY filename[len(${root}) + 2:]) AS lake_files
    FROM (/*FILES*/) GROUP BY trace_id
),
call_spans AS (  -- every LLM-call span: a row's own and those merged into it (llm_calls.merged_spans)
    SELECT trace_id, span_id FROM llm_calls
    UNION ALL
    SELECT m.trace_id, m.span_id FROM (SELECT unnest(merged_spans) AS m FROM llm_calls WHERE len(merged_spans) > 0)
),
tree AS (  -- also what the next build's twin check (incremental/twins.sql) needs: the trace's time, and
           -- whether one of its roots is an LLM-call span (a client instrumentation's trace of its own)
    SELECT t.trace_id, count(*) FILTER (WHERE t.orphan) AS orphan_spans, count(*) FILTER (WHERE t.repaired) AS orphans_reattached,
           min(t.start_ns) AS start_ns, max(t.end_ns) AS end_ns, coalesce(bool_or(t.is_root AND c.span_id IS NOT NULL), false) AS lone_call
    FROM _span_tree t LEFT JOIN call_spans c ON c.trace_id = t.trace_id AND c.span_id = t.span_id
    GROUP BY t.trace_id
),
agents AS (
    SELECT trace_id, count(agent_name) AS agent_calls_repaired, count(*) FILTER (WHERE ambiguous) AS agent_repairs_ambiguous
    FROM _agent_repairs GROUP BY trace_id
),
restored AS (  -- prompt messages llm_calls.sql restored (a tool call the instrumentation left out), calls
    -- it merged (recorded by several instrumentations; across traces), tool calls without tool definitions
    SELECT trace_id, sum(restored_messages) AS prompt_messages_restored,
           count(*) FILTER (WHERE len(merged_spans) > 0) AS llm_calls_merged,
           count(*) FILTER (WHERE list_bool_or(list_transform(merged_spans, lambda m: m.trace_id <> trace_id)))
               AS llm_calls_merged_across_traces,
           count(*) FILTER (WHERE tools IS NULL AND coalesce(json_array_length(output_message, '$.tool_calls'), 0) > 0)
               AS llm_calls_without_tool_schema
    FROM llm_calls
    WHERE restored_messages > 0 OR len(merged_spans) > 0
       OR (tools IS NULL AND contains(CAST(output_message AS VARCHAR), '"tool_calls"'))
    GROUP BY trace_id
),
calls AS (
    SELECT c.trace_id, count(*) AS llm_calls_complete,
           count(*) FILTER (WHERE c.output_message IS NULL) AS llm_calls_without_response
    FROM _rollout_calls c JOIN rollouts r USING (rollout_id) WHERE r.complete GROUP BY c.trace_id
)
SELECT t.trace_id, t.rollout_id, coalesce(f.lake_files, []::VARCHAR[]) AS lake_files,
       coalesce(tr.orphan_spans, 0) AS orphan_spans, coalesce(tr.orphans_reattached, 0) AS orphans_reattached,
       tr.start_ns, tr.end_ns, coalesce(tr.lone_call, false) AS lone_call,
       coalesce(a.agent_calls_repaired, 0) AS agent_calls_repaired,
       coalesce(a.agent_repairs_ambiguous, 0) AS agent_repairs_ambiguous,
       coalesce(c.llm_calls_complete, 0) AS llm_calls_complete,
       coalesce(c.llm_calls_without_response, 0) AS llm_calls_without_response,
       coalesce(rs.prompt_messages_restored, 0) AS prompt_messages_restored,
       coalesce(rs.llm_calls_merged, 0) AS llm_calls_merged,
       coalesce(rs.llm_calls_merged_across_traces, 0) AS llm_calls_merged_across_traces,
       coalesce(rs.llm_calls_without_tool_schema, 0) AS llm_calls_without_tool_schema
FROM _trace_rollouts t
LEFT JOIN files f USING (trace_id)
LEFT JOIN tree tr USING (trace_id)
LEFT JOIN agents a USING (trace_id)
LEFT JOIN calls c USING (trace_id)
LEFT JOIN restored rs USING (trace_id)
ORDER BY t.trace_id

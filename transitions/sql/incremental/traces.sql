-- name: traces
-- A segment's bookkeeping, one row per computed trace: its rollout (_trace_rollouts), the lake files
-- that hold it (the FILES placeholder: trace_id, absolute filename; cut to the data-root-relative
-- path at the ROOT_LEN placeholder), and the counts the build summary adds up over every segment.
WITH files AS (
    SELECT trace_id, list(DISTINCT filename[/*ROOT_LEN*/:] ORDER BY filename[/*ROOT_LEN*/:]) AS lake_files
    FROM (/*FILES*/) GROUP BY trace_id
),
tree AS (
    SELECT trace_id, count(*) FILTER (WHERE orphan) AS orphan_spans, count(*) FILTER (WHERE repaired) AS orphans_reattached
    FROM _span_tree GROUP BY trace_id
),
agents AS (
    SELECT trace_id, count(agent_name) AS agent_calls_repaired, count(*) FILTER (WHERE ambiguous) AS agent_repairs_ambiguous
    FROM _agent_repairs GROUP BY trace_id
),
restored AS (  -- prompt messages llm_calls.sql restored (a tool call the instrumentation left out)
    SELECT trace_id, sum(restored_messages) AS prompt_messages_restored FROM llm_calls
    WHERE restored_messages > 0 GROUP BY trace_id
),
calls AS (
    SELECT c.trace_id, count(*) AS llm_calls_complete,
           count(*) FILTER (WHERE c.output_message IS NULL) AS llm_calls_without_response
    FROM _rollout_calls c JOIN rollouts r USING (rollout_id) WHERE r.complete GROUP BY c.trace_id
)
SELECT t.trace_id, t.rollout_id, coalesce(f.lake_files, []::VARCHAR[]) AS lake_files,
       coalesce(tr.orphan_spans, 0) AS orphan_spans, coalesce(tr.orphans_reattached, 0) AS orphans_reattached,
       coalesce(a.agent_calls_repaired, 0) AS agent_calls_repaired,
       coalesce(a.agent_repairs_ambiguous, 0) AS agent_repairs_ambiguous,
       coalesce(c.llm_calls_complete, 0) AS llm_calls_complete,
       coalesce(c.llm_calls_without_response, 0) AS llm_calls_without_response,
       coalesce(rs.prompt_messages_restored, 0) AS prompt_messages_restored
FROM _trace_rollouts t
LEFT JOIN files f USING (trace_id)
LEFT JOIN tree tr USING (trace_id)
LEFT JOIN agents a USING (trace_id)
LEFT JOIN calls c USING (trace_id)
LEFT JOIN restored rs USING (trace_id)
ORDER BY t.trace_id

-- name: trace_files_logs(${files})
-- traces.sql's files part from log files: a record belongs to its trace, or (no trace id) to the trace of
-- the computed call whose response id it names.
SELECT coalesce(c.trace_id, l.trace_id) AS trace_id, l.filename
FROM read_parquet(${files}, filename = true, union_by_name = true) l
LEFT JOIN (SELECT response_id, min(trace_id) AS trace_id FROM _rollout_calls
           WHERE response_id IS NOT NULL GROUP BY 1) c
  ON coalesce(l.trace_id, '') = '' AND c.response_id = l.attributes->>'gen_ai.response.id'
WHERE coalesce(c.trace_id, l.trace_id) IN (SELECT trace_id FROM _trace_rollouts)

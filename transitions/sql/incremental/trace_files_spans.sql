-- name: trace_files_spans(${files})
-- traces.sql's files part from span files: (trace_id, absolute filename) of every computed trace's span.
SELECT trace_id, filename FROM read_parquet(${files}, filename = true, union_by_name = true)
WHERE trace_id IN (SELECT trace_id FROM _trace_rollouts)

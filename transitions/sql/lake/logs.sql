-- name: logs(${files}, ${whole})
-- `logs` as a build's plan sees the lake (incremental.restrict_lake): the log records of the plan's
-- traces (_lake_traces), and every record with no trace id (it may name a recomputed call's response
-- id), in the lake files it reads; ${whole} as in spans.sql (each record of a new file has a plan
-- trace, incremental/seeds.sql's _new_logs, or none).
-- reads: _lake_traces
-- creates: logs
SELECT * FROM read_parquet(${files}, hive_partitioning = true, union_by_name = true)
WHERE ${whole} OR trace_id IN (SELECT trace_id FROM _lake_traces WHERE NOT ${whole}) OR coalesce(trace_id, '') = ''

-- name: logs_touched(${files})
-- `logs` as an incremental run sees the lake: the touched traces' log records, and every record with no
-- trace id (it may name a recomputed call's response id), in the lake files an incremental run reads.
CREATE OR REPLACE TEMP VIEW logs AS
SELECT * FROM read_parquet(${files}, hive_partitioning = true, union_by_name = true)
WHERE trace_id IN (SELECT trace_id FROM _touched) OR coalesce(trace_id, '') = ''

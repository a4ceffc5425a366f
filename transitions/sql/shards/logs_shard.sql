-- name: logs_shard(${files})
-- `logs` as a worker of a sharded incremental night sees the lake: its shard's traces' log records, and
-- every record with no trace id (it may name a call of the shard), in the lake files the shard reads.
CREATE OR REPLACE TEMP VIEW logs AS
SELECT * FROM read_parquet(${files}, hive_partitioning = true, union_by_name = true)
WHERE trace_id IN (SELECT trace_id FROM _shard_traces) OR coalesce(trace_id, '') = ''

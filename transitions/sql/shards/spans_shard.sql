-- name: spans_shard(${files})
-- `spans` as a worker of a sharded incremental night sees the lake: its shard's traces (_shard_traces, a
-- part of the night's _touched) in the lake files they live in (shards.py; a worker's own connection).
CREATE OR REPLACE TEMP VIEW spans AS
SELECT * FROM read_parquet(${files}, hive_partitioning = true, union_by_name = true)
WHERE trace_id IN (SELECT trace_id FROM _shard_traces)

-- name: spans_touched(${files})
-- `spans` as an incremental run sees the lake: the touched traces' spans in the lake files they live in.
CREATE OR REPLACE TEMP VIEW spans AS
SELECT * FROM read_parquet(${files}, hive_partitioning = true, union_by_name = true)
WHERE trace_id IN (SELECT trace_id FROM _touched)

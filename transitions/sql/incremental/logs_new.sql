-- name: logs_new(${files})
-- `logs` when every file an incremental run reads is new (see spans_new.sql): each record in them has
-- a touched trace (seeds.sql: _new_logs) or no trace id, which logs_touched.sql keeps as well.
CREATE OR REPLACE TEMP VIEW logs AS
SELECT * FROM read_parquet(${files}, hive_partitioning = true, union_by_name = true)

-- name: spans_new(${files})
-- `spans` as an incremental run sees the lake when every file it reads is new since the last build
-- (the common night): seeds.sql makes every trace of a new file a seed, so each of these spans is a
-- touched trace's and spans_touched.sql's filter would keep them all. Read whole, without it, a 600k-span
-- night's stage 2 takes 30.6–30.9 CPU s instead of 32.1 (bench/stage2_repeat.py --incremental).
CREATE OR REPLACE TEMP VIEW spans AS
SELECT * FROM read_parquet(${files}, hive_partitioning = true, union_by_name = true)

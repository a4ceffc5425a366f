-- name: spans(${files}, ${whole})
-- `spans` as a build's plan sees the lake (incremental.restrict_lake): the spans of the plan's traces
-- (_lake_traces) in the lake files it reads. A temp view: it shadows stage 1's `spans` inside every
-- later view. ${whole}: every file listed is new since the last build, so each of their spans is a
-- plan trace's (incremental/seeds.sql) and they are read whole; the filter's subquery is then empty.
-- (Filtered by trace anyway, a 600k-span night's stage 2 took 32.1 CPU s instead of 30.6–30.9.)
-- reads: _lake_traces
-- creates: spans
SELECT * FROM read_parquet(${files}, hive_partitioning = true, union_by_name = true)
WHERE ${whole} OR trace_id IN (SELECT trace_id FROM _lake_traces WHERE NOT ${whole})

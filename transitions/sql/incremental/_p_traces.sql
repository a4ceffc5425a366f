-- name: _p_traces(${files})
-- The last build's per-trace bookkeeping over its segments (_traces.parquet): rollout, lake files, time, lone call.
CREATE OR REPLACE TEMP VIEW _p_traces AS
SELECT trace_id, rollout_id, lake_files, start_ns, end_ns, lone_call FROM read_parquet(${files})

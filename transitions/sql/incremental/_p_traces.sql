-- name: _p_traces(${files})
-- The last build's per-trace bookkeeping over its segments (_traces.parquet): rollout, lake files, time, lone call.
-- reads:
-- creates: _p_traces
SELECT trace_id, rollout_id, lake_files, start_ns, end_ns, lone_call FROM read_parquet(${files})

-- name: _p_traces_empty
-- _p_traces when no earlier build stored any (the columns of _p_traces.sql).
-- reads:
-- creates: _p_traces
SELECT NULL::VARCHAR AS trace_id, NULL::VARCHAR AS rollout_id, NULL::VARCHAR[] AS lake_files,
       NULL::BIGINT AS start_ns, NULL::BIGINT AS end_ns, NULL::BOOLEAN AS lone_call
WHERE false

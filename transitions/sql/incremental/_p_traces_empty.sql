-- name: _p_traces_empty
-- _p_traces when no earlier build stored any (the columns of _p_traces.sql).
CREATE OR REPLACE TEMP TABLE _p_traces (trace_id VARCHAR, rollout_id VARCHAR, lake_files VARCHAR[], start_ns BIGINT,
                                        end_ns BIGINT, lone_call BOOLEAN)

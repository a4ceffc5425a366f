-- name: cycle_tool_errors
-- Tool runs and failed tool runs of the rollouts in the registered snapshot (one training cycle's data).
SELECT count(*) AS tool_runs, count(*) FILTER (WHERE spanrl_is_error(status_code)) AS tool_errors
FROM tool_calls
WHERE trace_id IN (SELECT unnest(trace_ids) FROM rollouts
                   WHERE rollout_id IN (SELECT DISTINCT rollout_id FROM _ui_snapshot))

-- name: cycle_tool_errors($snapshot_bit)
-- Tool runs and failed tool runs of the rollouts in one snapshot (one training cycle's data): sums
-- over the held rollouts marked with the snapshot's bit ($snapshot_bit, ui/data.py snapshot_bit).
SELECT coalesce(sum(n_tool_calls), 0) AS tool_runs, coalesce(sum(n_tool_errors), 0) AS tool_errors
FROM _ui_rollouts
WHERE snapshots & $snapshot_bit <> 0

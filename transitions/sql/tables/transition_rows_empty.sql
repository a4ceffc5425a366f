-- name: transition_rows_empty
-- transition_rows when no segment holds any: the columns snapshot/rollout_air.sql reads, no rows.
-- reads:
-- creates: transition_rows
SELECT NULL::VARCHAR AS rollout_id, NULL::INTEGER AS step, NULL::DOUBLE AS step_reward WHERE false

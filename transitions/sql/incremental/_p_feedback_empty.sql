-- name: _p_feedback_empty
-- _p_feedback when no earlier build stored feedback rows (the columns of _p_feedback.sql).
CREATE OR REPLACE TEMP TABLE _p_feedback (file VARCHAR, line BIGINT, rollout_id VARCHAR)

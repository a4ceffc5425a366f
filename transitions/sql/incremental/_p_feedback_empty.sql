-- name: _p_feedback_empty
-- _p_feedback when no earlier build stored feedback rows (the columns of _p_feedback.sql).
-- reads:
-- creates: _p_feedback
SELECT NULL::VARCHAR AS file, NULL::BIGINT AS line, NULL::VARCHAR AS rollout_id
WHERE false

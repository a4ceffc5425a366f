-- name: _feedback_detail_empty
-- _feedback_detail when the build stored no feedback rows: its columns, no rows.
-- reads:
-- creates: _feedback_detail
SELECT NULL::VARCHAR AS file, NULL::BIGINT AS line, NULL::VARCHAR AS rollout_id, NULL::VARCHAR AS feedback_key
WHERE false

-- name: _feedback_raw
-- The empty table every feedback file's rows are inserted into (feedback.load_feedback, read_<format>.sql).
SELECT NULL::VARCHAR AS filename, NULL::BIGINT AS line, NULL::VARCHAR AS rollout_id, NULL::VARCHAR AS trace_id,
       NULL::VARCHAR AS response_id, NULL::VARCHAR AS name, NULL::VARCHAR AS value, NULL::VARCHAR AS ts WHERE false

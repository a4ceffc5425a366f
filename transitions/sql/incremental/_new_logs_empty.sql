-- name: _new_logs_empty
-- _new_logs when no lake log file appeared since the last build.
-- reads:
-- creates: _new_logs
SELECT NULL::VARCHAR AS trace_id, NULL::VARCHAR AS response_id WHERE false
